package scanner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/chartrepo"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// shopChart is chartrepo.Shop with greeting as its default.
func shopChart(version, greeting string) chartrepo.Chart {
	return chartrepo.Shop(version, "replicas: 2\ngreeting: "+greeting+"\nimage: nginx:1.27\n")
}

// A chart from a Helm chart repository, installed by the real helm from
// that repository with the config's values file, scans clean; the report
// names the chart and the version rendered; a person's edit is drift, and a
// constraint that now allows a newer version compares live with it.
func TestAChartFromARepositoryScansAsHelmInstalledIt(t *testing.T) {
	env.Need(t)
	ns := env.Namespace(t, nil)
	repo := chartrepo.Serve(t, chartrepo.Options{}, shopChart("1.0.0", "hello"), shopChart("1.1.0", "bonjour"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prod.yaml"), []byte("replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chartrepo.RunHelm(t, dir, "install", "shop", "shop", "--repo", repo.URL, "--version", "1.0.0", "-f", "prod.yaml",
		"--namespace", ns, "--kubeconfig", env.Kubeconfig, "--wait=false")
	cm := env.Get(t, cluster.ConfigMap, ns, "shop-config")
	managers := map[string]bool{}
	for _, e := range cm.GetManagedFields() {
		managers[e.Manager] = true
	}
	if !managers["helm"] {
		t.Fatalf("the real helm install did not write as field manager helm: %v", cm.GetManagedFields())
	}

	app := config.App{Name: "shop", Source: config.Source{Repo: repo.URL, Chart: "shop", Revision: "1.0.0",
		Helm: &config.HelmSource{ReleaseName: "shop", ValuesFiles: []string{"prod.yaml"}}}, Appliers: []string{"helm"}}
	cfg := scanConfig(ns, app)
	cfg.Dir = dir
	r := runScan(t, cfg)
	if got := rows(r); len(got) != 0 || r.Summary.Errors != 0 || r.Summary.Objects != 2 {
		t.Fatalf("right after helm install: findings %s, summary %+v, app error %q", dump(got), r.Summary, r.Apps[0].Error)
	}
	if got, want := r.Apps[0].Source, (report.Source{Repo: repo.URL, Revision: "1.0.0", Chart: "shop", Version: "1.0.0"}); got != want {
		t.Errorf("source %+v, want %+v", got, want)
	}

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "shop-config", "application/merge-patch+json", `{"data":{"greeting":"hotfix"}}`)
	app.Source.Revision = "^1.0"
	cfg = scanConfig(ns, app)
	cfg.Dir = dir
	r = runScan(t, cfg)
	want := []row{
		{Object: "ConfigMap/shop-config", Path: ".data.greeting", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "bonjour", Live: "hotfix"},
		{Object: "ConfigMap/shop-config", Path: ".metadata.labels.app.kubernetes.io/version", Type: report.TypeChanged, Class: report.ClassUnknown, Manager: "helm", Git: "1.1.0", Live: "1.0.0"},
		{Object: "ConfigMap/shop-config", Path: ".metadata.labels.helm.sh/chart", Type: report.TypeChanged, Class: report.ClassUnknown, Manager: "helm", Git: "shop-1.1.0", Live: "shop-1.0.0"},
	}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings at ^1.0 after a person's edit (-want +got):\n%s", diff)
	}
	if v := r.Apps[0].Source.Version; v != "1.1.0" {
		t.Errorf("^1.0 rendered version %q, want 1.1.0", v)
	}

	// A values file outside the config's folder is refused, naming it.
	app.Source.Helm.ValuesFiles = []string{"../elsewhere.yaml"}
	cfg = scanConfig(ns, app)
	cfg.Dir = dir
	r = runScan(t, cfg)
	if e := r.Apps[0].Error; !strings.Contains(e, "values file ../elsewhere.yaml leaves") {
		t.Errorf("a values file outside the config's folder: app error %q", e)
	}
}

// A reconciler that released 1.0.0 of a chart whose target allows 1.1.0:
// live is compared with 1.0.0 (clean), and what 1.1.0 changes is pending
// sync, named by version, not drift.
func TestANewerChartVersionTheTargetAllowsIsPendingNotDrift(t *testing.T) {
	env.Need(t)
	ns := env.Namespace(t, nil)
	repo := chartrepo.Serve(t, chartrepo.Options{}, shopChart("1.0.0", "hello"), shopChart("1.1.0", "bonjour"))
	dir := t.TempDir()
	chartrepo.RunHelm(t, dir, "install", "shop", "shop", "--repo", repo.URL, "--version", "1.0.0",
		"--namespace", ns, "--kubeconfig", env.Kubeconfig, "--wait=false")
	app := config.App{Name: "shop", Source: config.Source{Repo: repo.URL, Chart: "shop", Revision: "1.0.0",
		Helm: &config.HelmSource{ReleaseName: "shop"}}, Appliers: []string{"helm"}, TargetRevision: "^1.0"}
	r := runScan(t, scanConfig(ns, app))
	if got := rows(r); len(got) != 0 || r.Summary.Errors != 0 {
		t.Fatalf("live is 1.0.0 as released: findings %s, app error %q", dump(got), r.Apps[0].Error)
	}
	p := r.Apps[0].Pending
	if p == nil || p.Synced != "1.0.0" || p.Target != "1.1.0" || p.Error != "" || len(p.Objects) != 1 || p.Objects[0].Name != "shop-config" {
		t.Fatalf("pending %+v, want 1.0.0 -> 1.1.0 changing ConfigMap shop-config", p)
	}
	if s := p.Summary(); !strings.Contains(s, "applied 1.0.0, target 1.1.0") {
		t.Errorf("pending summary %q", s)
	}
}
