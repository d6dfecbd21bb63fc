package render

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// localDepsRepo is a repository whose app chart shares a library chart with
// another chart through file:// dependencies, as monorepos do, and pulls in
// an application subchart that depends on the same library: nothing under
// charts/, which `helm dependency build` (Argo CD and Flux run it) fills.
var localDepsRepo = map[string]string{
	"charts/shop/Chart.yaml": `apiVersion: v2
name: shop
version: 1.0.0
dependencies:
  - name: common
    version: ^1.0.0
    repository: file://../../lib/common
  - name: cache
    version: 0.x
    repository: file://../cache
    condition: cache.enabled
`,
	"charts/shop/values.yaml":           "cache:\n  enabled: true\n  size: 2Gi\nteam: payments\n",
	"charts/shop/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\n  labels:\n{{ include \"common.labels\" . | indent 4 }}\ndata:\n  team: {{ .Values.team }}\n",
	"charts/cache/Chart.yaml": `apiVersion: v2
name: cache
version: 0.3.1
dependencies:
  - name: common
    version: ">=1.1.0"
    repository: file://../../lib/common
`,
	"charts/cache/values.yaml":        "size: 1Gi\n",
	"charts/cache/templates/pvc.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {{ .Release.Name }}-cache\n  labels:\n{{ include \"common.labels\" . | indent 4 }}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: {{ .Values.size }}\n",
	"lib/common/Chart.yaml":           "apiVersion: v2\nname: common\nversion: 1.2.0\ntype: library\n",
	"lib/common/templates/_labels.tpl": `{{- define "common.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
`,
}

// TestLocalDependenciesAreReadAsHelmDependencyBuildCopiesThem renders the
// app chart in process, with nothing vendored, and with the real helm after
// `helm dependency build` vendored its file:// dependencies: the same
// objects, files and order; and with the cache switched off by values.
func TestLocalDependenciesAreReadAsHelmDependencyBuildCopiesThem(t *testing.T) {
	assets, err := reconcilers.Assets("helm")
	if err != nil {
		t.Fatalf("the real helm binary: %v", err)
	}
	helm := filepath.Join(assets, "helm")
	root := t.TempDir()
	writeTree(t, root, localDepsRepo)
	dir := filepath.Join(root, "charts", "shop")
	for _, set := range []map[string]string{nil, {"cache.enabled": "false"}} {
		got, err := Manifests(context.Background(), Options{Dir: dir, Root: root, Namespace: "pay", KubeVersion: "v1.37.2", Helm: &config.HelmSource{ReleaseName: "shop", Set: set}})
		if err != nil {
			t.Fatalf("render with --set %v: %v", set, err)
		}
		vendored := filepath.Join(t.TempDir(), "repo")
		writeTree(t, vendored, localDepsRepo)
		vdir := filepath.Join(vendored, "charts", "shop")
		if _, stderr, err := runHelm(t, helm, vdir, "dependency", "build", "."); err != nil {
			t.Fatalf("helm dependency build: %v\n%s", err, stderr)
		}
		args := []string{"template", "--include-crds", "--no-hooks", "shop", ".", "-n", "pay", "--kube-version", "v1.37.2"}
		for k, v := range set {
			args = append(args, "--set", k+"="+v)
		}
		out, stderr, err := runHelm(t, helm, vdir, args...)
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, stderr)
		}
		min := 2
		if set != nil {
			min = 1
		}
		// Helm renders the copies under charts/; the render names the
		// files the objects come from.
		sameAsHelm(t, out, got, min, map[string]string{"charts/cache/": "../cache/"})
		for _, m := range got {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(m.File))); err != nil {
				t.Errorf("%s comes from %s, not a file of the repository: %v", m.Ident().Name, m.File, err)
			}
		}
	}
}

// A file:// dependency is read only inside the repository, only when it is
// the chart it names at a version it allows, and a chain that comes back to
// itself ends: each is an error naming the dependency, as Helm's are.
func TestLocalDependencyErrors(t *testing.T) {
	with := func(chart string) map[string]string {
		out := maps.Clone(localDepsRepo)
		out["charts/shop/Chart.yaml"] = chart
		return out
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a folder outside the repository", with("apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies:\n  - {name: common, version: 1.2.0, repository: \"file://../../../outside\"}\n"), "dependency common (file://../../../outside): ../../../outside leaves the repository"},
		{"a version the constraint does not allow", with("apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies:\n  - {name: common, version: ^2.0.0, repository: \"file://../../lib/common\"}\n"), `the chart there is version 1.2.0, which "^2.0.0" does not allow`},
		{"another chart than the one named", with("apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies:\n  - {name: lib, version: 1.2.0, repository: \"file://../../lib/common\"}\n"), `the chart there is "common", not "lib"`},
		{"a folder that is not there", with("apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies:\n  - {name: common, version: 1.2.0, repository: \"file://../nothing\"}\n"), "dependency common (file://../nothing)"},
		{"a chart that depends on itself", with("apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies:\n  - {name: shop, version: 1.0.0, repository: \"file://.\"}\n"), "more than 32 charts through file:// dependencies"},
		{"a repository dependency is still not downloaded", with("apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies:\n  - {name: redis, version: 20.0.0, repository: \"https://charts.example.com\"}\n"), "missing in charts/ directory: redis"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, c.files)
			ms, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "charts", "shop"), Root: root, Helm: &config.HelmSource{}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v (%d manifests), want one containing %q", err, len(ms), c.want)
			}
		})
	}
}

// The render cache keys a chart by every file it reads, its file://
// dependencies' included: a library chart changed under an app that did
// not change renders anew.
func TestALocalDependencyChangedRendersAnew(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, localDepsRepo)
	cache, err := OpenParseCache(filepath.Join(t.TempDir(), "parsed"))
	if err != nil {
		t.Fatal(err)
	}
	render := func() string {
		ms, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "charts", "shop"), Root: root, Parsed: cache, Helm: &config.HelmSource{ReleaseName: "shop"}})
		if err != nil || len(ms) == 0 {
			t.Fatalf("render: %v (%d manifests)", err, len(ms))
		}
		return ms[0].Object.GetLabels()["app.kubernetes.io/part-of"]
	}
	if got := render(); got != "" {
		t.Fatalf("part-of = %q before the library sets it", got)
	}
	render()
	if n := cache.Stats().Charts; n != 1 {
		t.Fatalf("the unchanged chart was rendered again (%d from the cache): the case proves nothing", n)
	}
	writeTree(t, root, map[string]string{"lib/common/templates/_labels.tpl": `{{- define "common.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/part-of: shop-suite
{{- end -}}
`})
	if got := render(); got != "shop-suite" || cache.Stats().Charts != 1 {
		t.Errorf("part-of = %q after the library changed (%d charts from the cache), want shop-suite: the cached render was kept", got, cache.Stats().Charts)
	}
}
