package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/report"
)

// TestATenantsApplicationNeverReceivesThePlatformToken is the attack of
// issue 17: a tenant names a Git server of their own in an Application, and
// the scan of --from argocd must not send it the platform's token, over
// https or http, while the platform's own server still gets it.
func TestATenantsApplicationNeverReceivesThePlatformToken(t *testing.T) {
	env.Need(t)
	const token = "ghp_platformT0kenThatMustNotLeak0002"
	t.Setenv("GIT_TOKEN", token)
	env.InstallCRDs(t, "crd-installer", "../../fixtures/crds/applications.argoproj.io.yaml", "../../fixtures/crds/appprojects.argoproj.io.yaml")
	files := map[string]string{}
	for name, content := range gitrepo.Files(t, "../../fixtures/apps/web") {
		files["apps/web/"+name] = content
	}
	repo, _ := gitrepo.Bare(t, "", files)
	platform := gitrepo.Serve(t, repo, true)
	attacker := gitrepo.Serve(t, repo, true)
	plain := gitrepo.Serve(t, repo, false)
	outside := gitrepo.Serve(t, repo, true)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, append(append(platform.CABundle(), attacker.CABundle()...), outside.CABundle()...), 0o600); err != nil {
		t.Fatal(err)
	}

	appNS, argoNS := env.Namespace(t, nil), env.Namespace(t, nil)
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default}
spec: {sourceRepos: ['*'], destinations: [{server: '*', namespace: '*'}], clusterResourceWhitelist: [{group: '*', kind: '*'}]}
`))
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: tenant}
spec: {sourceRepos: [%q], destinations: [{server: '*', namespace: '*'}], clusterResourceWhitelist: [{group: '*', kind: '*'}]}
`, platform.URL+"/*")))
	for name, a := range map[string]struct{ project, url string }{
		"platform":     {"default", platform.RepoURL(repo)},
		"tenant-https": {"default", attacker.RepoURL(repo)},
		"tenant-http":  {"default", plain.RepoURL(repo)},
		"tenant-other": {"tenant", outside.RepoURL(repo)},
	} {
		env.Apply(t, "argocd-server", argoNS, cluster.Object(t, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: %s
  source: {repoURL: %q, path: apps/web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, name, a.project, a.url, appNS)))
	}
	scan := func(args ...string) result {
		return runCLI(t, append([]string{"scan", "--kubeconfig", env.Kubeconfig, "--from", "argocd", "--argocd-namespace", argoNS,
			"-o", "json", "--fail-on", "none", "--git-cache", t.TempDir(), "--git-ca-file", ca}, args...)...)
	}

	// The old flag, which sent the token to every discovered repository,
	// has no host to send it to without a config naming one.
	res := scan("--git-token-env", "GIT_TOKEN")
	if res.code != 2 || !strings.Contains(res.err, "--git-credential HOST=GIT_TOKEN") {
		t.Fatalf("--git-token-env alone: exit %d, stderr %q; want exit 2 and the way to bind it", res.code, res.err)
	}
	for _, s := range []*gitrepo.Server{platform, attacker, plain, outside} {
		if n := len(s.Requests()); n != 0 {
			t.Fatalf("--git-token-env alone sent %d requests", n)
		}
	}

	res = scan("--git-credential", platform.Host()+"=GIT_TOKEN")
	if res.code != 2 { // tenant-other is an app error
		t.Fatalf("exit %d, want 2; stderr:\n%s", res.code, res.err)
	}
	if strings.Contains(res.out+res.err, token) {
		t.Error("the token is in the output")
	}
	if a, n := platform.Authorized(); a == 0 || a != n {
		t.Errorf("the platform's server got the token in %d of %d requests, want all", a, n)
	}
	for name, s := range map[string]*gitrepo.Server{"https": attacker, "http": plain} {
		if a, n := s.Authorized(); n == 0 || a != 0 {
			t.Errorf("the tenant's %s server got credentials in %d of %d requests, want none of some", name, a, n)
		}
	}
	if n := len(outside.Requests()); n != 0 {
		t.Errorf("the repository the tenant's AppProject does not allow got %d requests, want none", n)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatal(err)
	}
	errs := map[string]string{}
	for _, a := range r.Apps {
		errs[a.Name] = a.Error
	}
	want := fmt.Sprintf("app tenant-other: repository %s is not in the sourceRepos of AppProject %s/tenant, so driftscan does not fetch it", outside.RepoURL(repo), argoNS)
	if errs["tenant-other"] != want {
		t.Errorf("tenant-other's error = %q, want %q", errs["tenant-other"], want)
	}
	for _, name := range []string{"platform", "tenant-https", "tenant-http"} {
		if e, ok := errs[name]; !ok || e != "" {
			t.Errorf("app %s: present %v, error %q; want it scanned", name, ok, e)
		}
	}
}
