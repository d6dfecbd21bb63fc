package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// An Application rendered by a config management plugin (argocd-vault-plugin
// and its kind are common) is applied by Argo CD and rendered by nobody
// here: the scan of every app warns of it, so a report is never clean while
// an app went unlooked-at; a scan of another app does not; `--app` of it
// says why it is not scanned.
func TestScanFromArgoCDWarnsOfAnAppItCannotRender(t *testing.T) {
	env.Need(t)
	appNS, argoNS := argoApp(t)
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: vault}
spec:
  project: default
  source: {repoURL: "https://git.example.com/shop/deploy.git", path: apps/vault, plugin: {name: argocd-vault-plugin}}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, appNS)))
	scan := func(args ...string) (result, []report.Warning) {
		t.Helper()
		res := runCLI(t, append([]string{"scan", "--kubeconfig", env.Kubeconfig, "--from", "argocd", "--argocd-namespace", argoNS, "-o", "json", "--git-cache", t.TempDir()}, args...)...)
		var r report.Report
		if res.code == 0 || res.code == 1 {
			if err := json.Unmarshal([]byte(res.out), &r); err != nil {
				t.Fatalf("scan %v: %v\n%s", args, err, res.err)
			}
		}
		return res, r.Warnings
	}
	notScanned := func(ws []report.Warning) []string {
		var out []string
		for _, w := range ws {
			if w.Code == report.WarnNotScanned {
				out = append(out, w.Object+": "+w.Message)
			}
		}
		return out
	}

	res, ws := scan()
	want := []string{"Application/" + argoNS + `/vault: not scanned: config management plugin "argocd-vault-plugin": driftscan runs no plugin, so nothing it renders is compared`}
	if got := notScanned(ws); res.code != 1 || !slices.Equal(got, want) {
		t.Errorf("scan of every app: exit %d, NotScanned %q, want exit 1 (web's drift) and %q\n%s", res.code, got, want, res.err)
	}
	if res, ws := scan("--app", "web"); res.code != 1 || len(notScanned(ws)) > 0 {
		t.Errorf("scan of web: exit %d, NotScanned %q, want exit 1 and none: vault is not web's\n%s", res.code, notScanned(ws), res.err)
	}
	res, _ = scan("--app", "vault")
	if res.code != 2 || !strings.Contains(res.err, "app vault: discovery skipped Application/"+argoNS+`/vault: config management plugin "argocd-vault-plugin"`) {
		t.Errorf("scan of vault: exit %d, want 2 and why it is not scanned:\n%s", res.code, res.err)
	}
}
