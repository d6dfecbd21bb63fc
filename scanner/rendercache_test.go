package scanner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// writeChart writes a chart named name into a new folder: a ConfigMap
// whose LEVEL comes from the values, and whatever more the template adds.
func writeChart(t *testing.T, name, more string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for file, text := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		"values.yaml":       "level: info\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  LEVEL: {{ .Values.level | quote }}\n" + more,
	} {
		p := filepath.Join(dir, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func chartsCached(r *report.Report) int {
	if r.Stats == nil || r.Stats.Cache == nil {
		return -1
	}
	return r.Stats.Cache.Charts
}

// TestAnUnchangedChartIsNotRenderedAgain: a warm scan reads the output of
// a chart whose inputs did not change from the cache instead of rendering
// it, and reports what a scan without the cache reports; a change to its
// values renders it again and is found, as a live edit is while it stays
// cached. A chart that renders differently each time is rendered on every
// scan, and its generated field is still warned about and not compared.
func TestAnUnchangedChartIsNotRenderedAgain(t *testing.T) {
	ns := env.Namespace(t, nil)
	settled := writeChart(t, "settled", "")
	moving := writeChart(t, "moving", "  TOKEN: {{ randAlphaNum 12 | quote }}\n")
	applyDir(t, settled, ns)
	applyDir(t, moving, ns)
	cfg := scanConfig(ns,
		config.App{Name: "settled", Owner: "team-shop", Source: config.Source{Path: settled}},
		config.App{Name: "moving", Owner: "team-shop", Source: config.Source{Path: moving}})
	dir := t.TempDir()

	unstable := func(r *report.Report) []string {
		var apps []string
		for _, w := range r.Warnings {
			if w.Code == report.WarnUnstableRender {
				apps = append(apps, w.App)
			}
		}
		return apps
	}
	scan := func(what string, wantCharts int, wantRows []row) {
		t.Helper()
		r := cachedScan(t, cfg, dir)
		if got := chartsCached(r); got != wantCharts {
			t.Errorf("%s: %d charts read from the cache, want %d", what, got, wantCharts)
		}
		if got := unstable(r); len(got) != 1 || got[0] != "moving" {
			t.Errorf("%s: UnstableRender warnings for %v, want one for moving", what, got)
		}
		got := rows(r)
		if len(got) != len(wantRows) {
			t.Errorf("%s: findings:\n%s\nwant:\n%s", what, dump(got), dump(wantRows))
		}
		for i := range min(len(got), len(wantRows)) {
			if got[i].Object != wantRows[i].Object || got[i].Path != wantRows[i].Path || got[i].Git != wantRows[i].Git || got[i].Live != wantRows[i].Live || got[i].Manager != wantRows[i].Manager {
				t.Errorf("%s: finding %d:\n%s\nwant:\n%s", what, i, dump(got[i]), dump(wantRows[i]))
			}
		}
		sameAsUncached(t, cfg, r)
	}
	scan("the first scan", 0, nil)
	scan("a warm scan", 1, nil)

	values := filepath.Join(settled, "values.yaml")
	if err := os.WriteFile(values, []byte("level: debug\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	behind := []row{{Object: "ConfigMap/settled-config", Path: ".data.LEVEL", Git: "debug", Live: "info", Manager: "argocd-controller"}}
	scan("after a values change", 0, behind)
	scan("a warm scan after it", 1, behind)

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "settled-config", types.MergePatchType, `{"data":{"LEVEL":"warn"}}`)
	edited := []row{{Object: "ConfigMap/settled-config", Path: ".data.LEVEL", Git: "debug", Live: "warn", Manager: "kubectl-edit"}}
	scan("after a live edit", 1, edited)

	data, err := os.ReadFile(filepath.Join(dir, "manifests.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `["r`) {
		t.Error("the parse cache file holds no chart output")
	}
}

// TestAnUnchangedKustomizationIsNotBuiltAgain: a warm scan takes the
// objects of a kustomization whose files read as the last build read them
// from the cache instead of building it, and reports what a scan without
// the cache reports; an edit to one of its files builds it again, and the
// edit is found.
func TestAnUnchangedKustomizationIsNotBuiltAgain(t *testing.T) {
	ns := env.Namespace(t, nil)
	src := filepath.Join(t.TempDir(), "shop")
	for file, text := range map[string]string{
		"kustomization.yaml": "resources: [cm.yaml, svc.yaml]\nnamePrefix: shop-\ncommonLabels: {team: shop}\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  LEVEL: info\n",
		"svc.yaml":           "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  clusterIP: None\n  ports: [{port: 80}]\n",
	} {
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	applyDir(t, src, ns)
	cfg := scanConfig(ns, config.App{Name: "shop", Owner: "team-shop", Source: config.Source{Path: src}})
	dir := t.TempDir()
	scan := func(what string, wantBuilds int, wantRows []row) {
		t.Helper()
		r := cachedScan(t, cfg, dir)
		if got := r.Stats.Cache.Kustomizations; got != wantBuilds {
			t.Errorf("%s: %d kustomizations read from the cache, want %d", what, got, wantBuilds)
		}
		if got := rows(r); len(got) != len(wantRows) || len(got) == 1 && (got[0].Path != wantRows[0].Path || got[0].Git != wantRows[0].Git || got[0].Live != wantRows[0].Live) {
			t.Errorf("%s: findings:\n%s\nwant:\n%s", what, dump(got), dump(wantRows))
		}
		sameAsUncached(t, cfg, r)
	}
	scan("the first scan", 0, nil)
	scan("a warm scan", 1, nil)
	if err := os.WriteFile(filepath.Join(src, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  LEVEL: debug\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	behind := []row{{Object: "ConfigMap/shop-config", Path: ".data.LEVEL", Git: "debug", Live: "info"}}
	scan("after an edit in Git", 0, behind)
	scan("a warm scan after it", 1, behind)
}
