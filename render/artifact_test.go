package render

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
)

// cm is a ConfigMap manifest named name.
func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {a: b}\n"
}

// A Flux Kustomization builds from the files of its GitRepository's
// artifact: what .sourceignore files and spec.ignore leave out is not there
// (a folder's .sourceignore only below it; a negation brings a file back;
// the CI files source-controller leaves out by default are left out only
// when nothing else is), and a kustomization naming such a file fails as it
// fails in kustomize-controller.
func TestAFluxBuildReadsTheArtifactsFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".sourceignore":                     "# docs are not deployed\ndocs/\n*.md\n",
		"apps/web/.sourceignore":            "/scratch.yaml\n",
		"apps/web/deploy.yaml":              cm("web"),
		"apps/web/scratch.yaml":             cm("scratch"),
		"apps/web/docs/example.yaml":        cm("example"),
		"apps/web/README.md":                "# web\n",
		"apps/web/app.json":                 `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}}`,
		"apps/web/.hidden.yaml":             cm("hidden"),
		"apps/web/nested/kustomization.yml": "resources: [cm.yaml]\n",
		"apps/web/nested/cm.yaml":           cm("nested"),
		"apps/web/kept/scratch.yaml":        cm("kept-scratch"),
		"apps/ci/.gitlab-ci.yml":            "stages: [deploy]\n",
		"apps/ci/cm.yaml":                   cm("ci"),
		"apps/named/kustomization.yaml":     "resources: [cm.yaml, docs/cm.yaml]\n",
		"apps/named/cm.yaml":                cm("named"),
		"apps/named/docs/cm.yaml":           cm("named-docs"),
	})
	build := func(t *testing.T, dir string, ignore *string) ([]string, error) {
		t.Helper()
		ms, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, dir), Root: root, Kustomize: &config.KustomizeSource{Flux: &config.FluxBuild{SourceIgnore: ignore}}})
		var names []string
		for _, m := range ms {
			names = append(names, m.Object.GetName())
		}
		slices.Sort(names)
		return names, err
	}

	got, err := build(t, "apps/web", nil)
	if err != nil {
		t.Fatal(err)
	}
	// No .json (Flux generates from .yaml and .yml), hidden files kept,
	// the nested kustomization's object, /scratch.yaml only at the top.
	if d := cmp.Diff([]string{"hidden", "kept-scratch", "nested", "web"}, got); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}

	t.Run("spec.ignore adds to the files' patterns, a negation brings one back", func(t *testing.T) {
		got, err := build(t, "apps/web", new("/apps/web/nested/\n!/apps/web/docs/example.yaml\n"))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"example", "hidden", "kept-scratch", "web"}, got); d != "" {
			t.Errorf("objects (-want +got):\n%s", d)
		}
	})
	t.Run("with patterns of its own the artifact keeps CI files", func(t *testing.T) {
		// .sourceignore files exist, so source-controller's defaults are
		// not applied: the CI file is in the artifact, and Flux's
		// generated kustomization fails on it.
		_, err := build(t, "apps/ci", nil)
		if err == nil || !strings.Contains(err.Error(), ".gitlab-ci.yml") {
			t.Errorf("err %v: want the CI file that is no Kubernetes YAML named", err)
		}
	})
	t.Run("a kustomization naming a file the artifact leaves out fails", func(t *testing.T) {
		_, err := build(t, "apps/named", nil)
		if err == nil || !strings.Contains(err.Error(), "docs/cm.yaml") {
			t.Errorf("err %v: want the file the artifact leaves out named", err)
		}
	})
}

// With no patterns at all, source-controller's defaults leave CI files out.
func TestAFluxArtifactWithoutPatternsLeavesCIFilesOut(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"apps/ci/.gitlab-ci.yml": "stages: [deploy]\n",
		"apps/ci/.github/x.yaml": "on: push\n",
		"apps/ci/cm.yaml":        cm("ci"),
	})
	ms, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "apps/ci"), Root: root, Kustomize: &config.KustomizeSource{Flux: &config.FluxBuild{}}})
	if err != nil || len(ms) != 1 {
		t.Fatalf("%d objects, %v: want the ConfigMap alone", len(ms), err)
	}
}

// A HelmRelease's chart from a GitRepository is built by source-controller
// from the repository's artifact: a template, a file .Files reads, or a
// local dependency that the .sourceignore files or spec.ignore leave out is
// not in the chart (each path matched on its own, from the repository's
// root, as for a Kustomization).
func TestAChartFromAFluxArtifact(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".sourceignore":                      "**/templates/tests/\n/charts/web/files/dev-*\n",
		"charts/web/Chart.yaml":              "apiVersion: v2\nname: web\nversion: 0.1.0\ndependencies: [{name: lib, version: 0.1.0, repository: file://../lib}]\n",
		"charts/web/templates/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata:\n  files: {{ len (.Files.Glob \"files/*\") | quote }}\n",
		"charts/web/templates/tests/t.yaml":  cm("web-test"),
		"charts/web/templates/draft.yaml":    cm("web-draft"),
		"charts/web/files/prod-a.conf":       "a\n",
		"charts/web/files/dev-b.conf":        "b\n",
		"charts/lib/Chart.yaml":              "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
		"charts/lib/templates/cm.yaml":       cm("lib"),
		"charts/lib/templates/tests/t2.yaml": cm("lib-test"),
	})
	render := func(h *config.HelmSource) map[string]string {
		t.Helper()
		ms, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "charts/web"), Root: root, Namespace: "web", Helm: h})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, m := range ms {
			files, _, _ := unstructured.NestedString(m.Object.Object, "data", "files")
			got[m.Object.GetName()] = files
		}
		return got
	}
	ignore := "/charts/web/templates/draft.yaml\n"
	got := render(&config.HelmSource{ReleaseName: "web", FluxArtifact: true, SourceIgnore: &ignore})
	if d := cmp.Diff(map[string]string{"web": "1", "lib": ""}, got); d != "" {
		t.Errorf("the chart from the artifact (-want +got):\n%s", d)
	}
	// From a checkout (Argo CD, a config app) every file is there.
	got = render(&config.HelmSource{ReleaseName: "web"})
	if d := cmp.Diff(map[string]string{"web": "2", "lib": "", "web-test": "", "lib-test": "", "web-draft": ""}, got); d != "" {
		t.Errorf("the chart from a checkout (-want +got):\n%s", d)
	}
}
