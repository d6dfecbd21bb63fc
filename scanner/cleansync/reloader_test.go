package cleansync_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// A ConfigMap change that the real Stakater Reloader rolls the Deployment
// for, with each of its strategies: the ConfigMap's edit is the finding,
// and what Reloader wrote into the pod template to roll the pods (an env
// var with the ConfigMap's hash, or an annotation naming it) is dismissed
// as a restart that names Reloader. Neither Argo CD nor Flux removes it
// (they apply what Git declares, and kustomize-controller takes over only
// kubectl's fields), and an SRE must not be paged for it.
func TestAReloaderRolloutIsNoDrift(t *testing.T) {
	for _, c := range []struct{ strategy, dismissed, detail string }{
		{"env-vars", `Deployment/web .spec.template.spec.containers[name="web"].env[name="STAKATER_WEB_CONFIG_CONFIGMAP"]: restart`,
			"Reloader rolled the pods when the ConfigMap or Secret that STAKATER_WEB_CONFIG_CONFIGMAP names changed"},
		{"annotations", "Deployment/web .spec.template.metadata.annotations.reloader.stakater.com/last-reloaded-from: restart",
			"Reloader rolled the pods when configmap web-config changed"},
	} {
		for _, m := range modes {
			t.Run(c.strategy+"/"+m.name, func(t *testing.T) {
				ns := env.Namespace(t, nil)
				a := prepare(t, "reloaded", ns)
				a.sync(t, m, ns)
				revision("web", "1")(t, ns)
				runReloader(t, ns, c.strategy)
				clean(t, a.scan(t, m, ns))

				editUntilReloaded(t, ns, c.strategy)
				r := a.scan(t, m, ns)
				want := []row{{Object: "ConfigMap/web-config", Path: ".data.LOG_LEVEL", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}}
				if diff := cmp.Diff(want, rows(r)); diff != "" {
					t.Errorf("findings after the ConfigMap's edit (-want +got):\n%s", diff)
				}
				wantDismissed(t, r, c.dismissed)
				for _, o := range r.Apps[0].Objects {
					for _, d := range o.Dismissed {
						if d.Reason == report.Restart && !strings.Contains(d.Detail, c.detail) {
							t.Errorf("the restart dismissal %s says %q, not %q", d.Path, d.Detail, c.detail)
						}
					}
				}
			})
		}
	}
}

// runReloader runs the real Stakater Reloader (built by `make testbin`)
// for namespace ns with a reload strategy, until the test ends.
func runReloader(t *testing.T, ns, strategy string) {
	t.Helper()
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "reloader")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Stakater Reloader not found (run `make testbin`): %v", err)
	}
	logPath := filepath.Join(t.TempDir(), "reloader.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--namespaces="+ns, "--reload-strategy="+strategy, "--log-level=debug")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("reloader log:\n%s", data)
		}
	})
	// Reloader rolls only for changes after its informers synced.
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		data, _ := os.ReadFile(logPath)
		return strings.Count(string(data), "Starting Controller to watch resource type") >= 2, nil
	})
	if err != nil {
		data, _ := os.ReadFile(logPath)
		t.Fatalf("Stakater Reloader did not start its controllers: %v\n%s", err, data)
	}
	time.Sleep(2 * time.Second)
}

// editUntilReloaded edits ConfigMap web-config as a person does and waits
// until Reloader has written what its strategy writes into Deployment
// web's pod template. Reloader acts on updates its informer sees after it
// synced, which its log does not say: an edit it missed is made again.
func editUntilReloaded(t *testing.T, ns, strategy string) {
	t.Helper()
	for i, level := range []string{"debug", "trace", "warn"} {
		env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"`+level+`"}}`)
		if reloaded(t, ns, strategy, 20*time.Second) {
			revision("web", "2")(t, ns)
			return
		}
		t.Logf("Reloader did not roll Deployment web after edit %d; editing again", i+1)
	}
	t.Fatalf("Stakater Reloader never rolled Deployment web (%s)", strategy)
}

// reloaded waits up to timeout for what Reloader's strategy writes.
func reloaded(t *testing.T, ns, strategy string, timeout time.Duration) bool {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		d := env.Get(t, deployment, ns, "web")
		if strategy == "annotations" {
			ann, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
			return ann["reloader.stakater.com/last-reloaded-from"] != "", nil
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		env, _ := containers[0].(map[string]any)["env"].([]any)
		return len(env) > 0, nil
	})
	return err == nil
}
