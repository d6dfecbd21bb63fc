package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/calricon/driftscan/doctor/doctortest"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// kubeconfigAs writes a kubeconfig for the test API server that acts as
// user, the way the chart's ServiceAccount does in its pod.
func kubeconfigAs(t *testing.T, user string) string {
	t.Helper()
	env.Need(t)
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDiscoveredAppsScanUnderNamespacesScope runs `scan --from argocd` as
// the chart's ServiceAccount with rbac.scope: namespaces. The breakglass
// check used to list Applications, Kustomizations and HelmReleases
// cluster-wide, which that RBAC forbids, and every such run failed with
// exit 2. It now reads the suspensions where the Applications are, and
// reports the app as suspended.
func TestDiscoveredAppsScanUnderNamespacesScope(t *testing.T) {
	env.Need(t)
	appNS, argoNS := argoApp(t)
	in := doctortest.InstallChart(t, env, fmt.Sprintf(`
rbac:
  scope: namespaces
  secrets: true
  namespaces: [%s, %s]
`, appNS, argoNS))
	in.EventuallyCan(t, "list", "argoproj.io", "applications", argoNS, "")
	if res := runCLI(t, "breakglass", "--kubeconfig", env.Kubeconfig, "-n", argoNS, "suspend", "web", "--ttl", "1h", "--reason", "INC-9"); res.code != 0 {
		t.Fatalf("suspend: exit %d\n%s", res.code, res.err)
	}
	res := runCLI(t, "scan", "--kubeconfig", kubeconfigAs(t, in.User), "--from", "argocd", "--argocd-namespace", argoNS, "-o", "json", "--git-cache", t.TempDir())
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatalf("exit %d: %v\n%s", res.code, err, res.err)
	}
	if res.code != report.ExitDrift || len(r.Errors) > 0 {
		t.Errorf("exit %d, errors %q; want 1 (drift) and no error\n%s", res.code, r.Errors, res.err)
	}
	if len(r.Apps) != 1 || r.Apps[0].Breakglass == nil || r.Apps[0].Breakglass.Reason != "INC-9" {
		t.Errorf("apps %+v, want web, suspended for INC-9", r.Apps)
	}
}

// TestAutoResumeNeedsTheChartsOptIn: --auto-resume patches the
// Application, the one write a scan can make; the chart grants it only
// with autoResume: true. Without it the resume is refused by RBAC (an
// error in the report); with it the expired suspension is resumed.
func TestAutoResumeNeedsTheChartsOptIn(t *testing.T) {
	env.Need(t)
	for _, optIn := range []bool{false, true} {
		t.Run(fmt.Sprintf("autoResume %v", optIn), func(t *testing.T) {
			appNS, argoNS := argoApp(t)
			in := doctortest.InstallChart(t, env, fmt.Sprintf(`
autoResume: %v
rbac:
  scope: namespaces
  secrets: true
  namespaces: [%s, %s]
`, optIn, appNS, argoNS))
			in.EventuallyCan(t, "list", "argoproj.io", "applications", argoNS, "")
			if optIn {
				in.EventuallyCan(t, "patch", "argoproj.io", "applications", argoNS, "web")
			}
			if res := runCLI(t, "breakglass", "--kubeconfig", env.Kubeconfig, "-n", argoNS, "suspend", "web", "--ttl", "1s", "--reason", "INC-7"); res.code != 0 {
				t.Fatalf("suspend: exit %d\n%s", res.code, res.err)
			}
			time.Sleep(1500 * time.Millisecond)
			// The hotfix is in Git: nothing left that a sync would revert.
			env.Apply(t, "argocd-controller", appNS, cluster.ObjectFile(t, "../../fixtures/apps/web/configmap.yaml"))
			res := runCLI(t, "scan", "--kubeconfig", kubeconfigAs(t, in.User), "--from", "argocd", "--argocd-namespace", argoNS,
				"-o", "json", "--git-cache", t.TempDir(), "--auto-resume")
			var r report.Report
			if err := json.Unmarshal([]byte(res.out), &r); err != nil {
				t.Fatalf("exit %d: %v\n%s", res.code, err, res.err)
			}
			bg := r.Apps[0].Breakglass
			if optIn {
				if bg == nil || !bg.Resumed || len(r.Errors) > 0 {
					t.Errorf("breakglass %+v, errors %q: want resumed", bg, r.Errors)
				}
				return
			}
			if bg == nil || bg.Resumed || res.code != report.ExitError || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "forbidden") {
				t.Errorf("exit %d, breakglass %+v, errors %q: want not resumed and one error that RBAC forbids it", res.code, bg, r.Errors)
			}
		})
	}
}
