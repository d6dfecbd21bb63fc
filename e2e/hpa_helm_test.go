package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// hpaChart is a chart of Deployment web, with replicas from the values
// when set, and web-hpa, as the charts people write it.
var hpaChart = map[string]string{
	"Chart.yaml":            "apiVersion: v2\nname: web\nversion: 1.0.0\n",
	"values.yaml":           "replicas: 2\n",
	"templates/deploy.yaml": strings.Replace(deployment, "  replicas: 2\n", "  {{- with .Values.replicas }}\n  replicas: {{ . }}\n  {{- end }}\n", 1),
	"templates/hpa.yaml":    webHPA,
}

// The replica war with the real helm v4.2.1 CLI (a deploy pipeline's
// `helm upgrade`) and the real HPA. Server-side (Helm 4's default) an
// upgrade does not force conflicts: with Git's 2 against the HPA's 4 it
// fails, and every upgrade of the release fails until replicas leave the
// chart; that upgrade leaves the HPA's value. Client-side, each upgrade
// sets Git's 2 again, and the one whose chart no longer sets replicas
// deletes them (the three-way merge with the release's last manifest):
// the Deployment falls to 1 until the HPA scales it again, unless that
// upgrade is server-side. The finding's hint says which.
func TestHelmUpgradesOverARealHPA(t *testing.T) {
	assets, err := reconcilers.Assets("helm")
	if err != nil {
		t.Fatalf("the real helm binary: %v", err)
	}
	hpa := "4 by kube-controller-manager (scale)"
	for _, c := range []struct {
		name            string
		install, remove string // --server-side of helm install, and of the upgrade that removes replicas
		hint            string
		again, removed  []string
	}{
		{"server-side", "true", "auto", "helm applies server-side without forcing conflicts", nil, []string{hpa}},
		{"client-side", "false", "auto", "helm upgrades client-side", []string{hpa, "2 by helm", hpa}, []string{hpa, "1 by helm", hpa}},
		{"client-side, removed server-side", "false", "true", "helm upgrades client-side", []string{hpa, "2 by helm", hpa}, []string{hpa}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t, nil)
			chart := t.TempDir()
			writeFiles(t, chart, hpaChart)
			home := t.TempDir()
			helm := func(args ...string) (string, error) {
				cmd := exec.CommandContext(t.Context(), filepath.Join(assets, "helm"), append(args, "-n", ns, "--kubeconfig", env.Kubeconfig)...)
				cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "HELM_CACHE_HOME=" + home + "/cache", "HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data"}
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if out, err := helm("install", "web", chart, "--server-side="+c.install); err != nil {
				t.Fatalf("helm install: %v\n%s", err, out)
			}
			waitReplicas(t, ns, 4)
			cfg := filepath.Join(t.TempDir(), "driftscan.yaml")
			writeFiles(t, filepath.Dir(cfg), map[string]string{filepath.Base(cfg): fmt.Sprintf("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\napps:\n- name: web\n  namespace: %s\n  appliers: [helm]\n  source:\n    path: %s\n    helm: {releaseName: web}\n", ns, chart)})
			got := activeFindings(scan(t, "--config", cfg))
			if len(got) != 1 || got[0].Path != ".spec.replicas" || got[0].Git != "2" || got[0].Live != "4" || got[0].Manager != "kube-controller-manager" ||
				!strings.Contains(got[0].Hint, "HorizontalPodAutoscaler web-hpa owns spec.replicas") || !strings.Contains(got[0].Hint, c.hint) {
				t.Errorf("want the HPA's replicas, Git 2 and live 4, with a hint naming web-hpa and saying %q; got:\n%s", c.hint, describe(got))
			}

			// The pipeline's next upgrade of the same chart.
			replicas := recordReplicas(t, ns)
			out, err := helm("upgrade", "web", chart)
			waitReplicas(t, ns, 4)
			seen := replicas()
			t.Logf("the same chart upgraded (%v): spec.replicas went %q", err, seen)
			if c.again == nil {
				if err == nil || !strings.Contains(out, `conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas`) || !slices.Equal(seen, []string{hpa}) {
					t.Errorf("helm upgrade server-side: want a conflict over .spec.replicas and the HPA's 4 untouched, got %v, %q:\n%s", err, seen, out)
				}
			} else if err != nil || !slices.Equal(seen, c.again) {
				t.Errorf("helm upgrade client-side: want %q, got %v, %q:\n%s", c.again, err, seen, out)
			}

			writeFiles(t, chart, map[string]string{"values.yaml": "replicas: null\n"})
			replicas = recordReplicas(t, ns)
			out, err = helm("upgrade", "web", chart, "--server-side="+c.remove)
			if err != nil {
				replicas()
				t.Fatalf("helm upgrade without replicas: %v\n%s", err, out)
			}
			time.Sleep(20 * time.Second) // longer than the HPA takes to act
			waitReplicas(t, ns, 4)
			if seen := replicas(); !slices.Equal(seen, c.removed) {
				t.Errorf("replicas removed from the chart (--server-side=%s): spec.replicas went %q, want %q", c.remove, seen, c.removed)
			}
			checkClean(t, scan(t, "--config", cfg), 2)
		})
	}
}
