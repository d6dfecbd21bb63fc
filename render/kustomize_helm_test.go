package render

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
	"github.com/calricon/driftscan/fixtures/chartrepo"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// kustomizeHelmRepo is a repository whose kustomizations inflate charts
// the ways public repositories do it with Argo CD's --enable-helm: a chart
// vendored under charts/ with valuesInline, a kustomization's namespace,
// name prefix, labels, a patch over the chart's output and a resource of
// its own; a shared chart home elsewhere in the repository with a values
// file, additional values files, valuesMerge merge and replace, CRDs and
// tests; an overlay whose namespace a base's chart takes; a chart from a
// chart repository at a version.
func kustomizeHelmRepo(repoURL string) map[string]string {
	files := map[string]string{}
	for name, content := range agreeChart {
		files["apps/local/charts/shop/"+name] = content
		files["vendor/shop/"+name] = content
		files["bases/chart/charts/shop/"+name] = content
	}
	maps.Copy(files, map[string]string{
		"apps/local/kustomization.yaml": `namespace: pay
namePrefix: eu-
labels:
  - pairs: {team: payments}
helmCharts:
  - name: shop
    releaseName: checkout
    valuesInline:
      replicas: 4
      cache: {enabled: false}
      global: {team: checkout}
resources:
  - extra.yaml
patches:
  - target: {kind: Deployment, name: checkout}
    patch: |-
      - op: add
        path: /metadata/annotations
        value: {patched: "yes"}
`,
		"apps/local/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  a: b\n",
		"apps/shared/kustomization.yaml": `helmGlobals:
  chartHome: ../../vendor
helmCharts:
  - name: shop
    releaseName: orders
    namespace: orders
    valuesFile: prod-values.yaml
    additionalValuesFiles: [more-values.yaml]
    valuesMerge: merge
    valuesInline:
      replicas: 7
      cache: {size: 5Gi}
    includeCRDs: true
    skipTests: true
`,
		"apps/shared/prod-values.yaml": "replicas: 3\ncache:\n  enabled: true\nglobal:\n  team: orders\nfromMetrics:\n  port: 1\n",
		"apps/shared/more-values.yaml": "tags:\n  observability: false\n",
		"apps/replace/kustomization.yaml": `helmGlobals:
  chartHome: ../../vendor
helmCharts:
  - name: shop
    releaseName: minimal
    valuesMerge: replace
    valuesInline:
      replicas: 1
      global: {team: none}
      fromMetrics: {port: 2}
      cache: {enabled: false}
      tags: {observability: false}
`,
		"bases/chart/kustomization.yaml": `helmCharts:
  - name: shop
    releaseName: base
    valuesInline:
      cache: {enabled: false}
`,
		"overlays/prod/kustomization.yaml": "namespace: prod\nresources:\n  - ../../bases/chart\n",
		"apps/remote/kustomization.yaml": `namespace: remote
helmCharts:
  - name: shop
    repo: ` + repoURL + `
    version: 1.1.0
    releaseName: fetched
    valuesInline:
      greeting: hi
`,
	})
	return files
}

// TestKustomizeHelmChartsAgreeWithKustomizeBuildEnableHelm builds each
// kustomization of kustomizeHelmRepo in process and with the real
// `kustomize build --enable-helm` running the real helm (both from `make
// testbin`), given the cluster's version and API versions as Argo CD gives
// them, and compares every object and its order. The real build's hooks
// (helm template prints them) are taken out first: the render leaves them
// out, as Argo CD does not count them as desired state.
func TestKustomizeHelmChartsAgreeWithKustomizeBuildEnableHelm(t *testing.T) {
	assets, err := reconcilers.Assets("kustomize", "helm")
	if err != nil {
		t.Fatalf("the real kustomize and helm: %v", err)
	}
	t.Setenv("TMPDIR", t.TempDir()) // to see what the builds leave there
	repo := chartrepo.Serve(t, chartrepo.Options{}, chartrepo.Shop("1.0.0", "greeting: old\nreplicas: 1\nimage: shop:1\n"),
		chartrepo.Shop("1.1.0", "greeting: hello\nreplicas: 2\nimage: shop:2\n"))
	files := kustomizeHelmRepo(repo.URL)
	ours, theirs := t.TempDir(), t.TempDir()
	writeTree(t, ours, files)
	writeTree(t, theirs, files) // the real kustomize pulls into its tree

	// What FetchChart gives the build: the chart the repository serves,
	// unpacked (source.FetchChart is tested against the same repository).
	fetched := filepath.Join(t.TempDir(), "shop")
	writeTree(t, fetched, chartrepo.Shop("1.1.0", "greeting: hello\nreplicas: 2\nimage: shop:2\n").Files)
	var asked []ChartRef
	fetch := func(_ context.Context, c ChartRef) (string, error) {
		asked = append(asked, c)
		return fetched, nil
	}

	for _, tc := range []struct {
		app string
		// source is the app's own kubeVersion and apiVersions (Argo CD's
		// kustomize.kubeVersion and apiVersions), which replace the
		// cluster's v1.36.0 and example.com/v1 as Argo CD's flags do.
		source *config.KustomizeSource
	}{
		{app: "apps/local"}, {app: "apps/shared"}, {app: "apps/replace"}, {app: "overlays/prod"}, {app: "apps/remote"},
		{app: "apps/local", source: &config.KustomizeSource{KubeVersion: "1.30.2", APIVersions: []string{"example.com/v2"}}},
	} {
		app := tc.app
		name, caps := app, []string{"--helm-kube-version", "v1.36.0", "--helm-api-versions", "example.com/v1"}
		if s := tc.source; s != nil {
			name, caps = app+" with its own capabilities", []string{"--helm-kube-version", s.KubeVersion, "--helm-api-versions", s.APIVersions[0]}
		}
		t.Run(name, func(t *testing.T) {
			want := kustomizeBuild(t, filepath.Join(assets, "kustomize"), filepath.Join(assets, "helm"), filepath.Join(theirs, app), caps...)
			if len(want) < 2 {
				t.Fatalf("the real build made %d objects: the case tests too little", len(want))
			}
			asked = nil
			got, err := Manifests(context.Background(), Options{Dir: filepath.Join(ours, app), Root: ours,
				KubeVersion: "v1.36.0", APIVersions: []string{"example.com/v1"}, FetchChart: fetch, Kustomize: tc.source})
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			// The order is kustomize's CLI's (legacy, by kind) where
			// krusty's library keeps the order of reading; a sync
			// applies by kind either way.
			if diff := cmp.Diff(byIdentity(want), byIdentity(objectsOf(got))); diff != "" {
				t.Errorf("objects (-kustomize build --enable-helm +render):\n%s", diff)
			}
			if remote := app == "apps/remote"; remote != (len(asked) == 1) {
				t.Errorf("charts fetched: %v", asked)
			} else if remote && asked[0] != (ChartRef{Repo: repo.URL, Name: "shop", Version: "1.1.0"}) {
				t.Errorf("fetched %+v", asked[0])
			}
		})
	}
	if leftover, _ := filepath.Glob(filepath.Join(os.TempDir(), "driftscan-helm-*")); len(leftover) > 0 {
		t.Errorf("the builds left their helm folders behind: %v", leftover)
	}
}

// kustomizeBuild runs the real `kustomize build --enable-helm` in dir with
// helm as its helm, bounded, and returns its objects but hooks.
func kustomizeBuild(t *testing.T, kustomize, helm, dir string, args ...string) []map[string]any {
	t.Helper()
	args = append([]string{"build", "--enable-helm", "--helm-command", helm, "."}, args...)
	cmd := bounded.Command(bounded.Limits{Memory: 2 << 30, Time: 90 * time.Second}, kustomize, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var objs []map[string]any
	for _, m := range yamlObjects(t, out) {
		u := unstructured.Unstructured{Object: m}
		if _, hook := u.GetAnnotations()["helm.sh/hook"]; hook {
			continue
		}
		objs = append(objs, m)
	}
	return objs
}

// yamlObjects are the objects of a YAML stream, as the API machinery reads
// them (integers int64).
func yamlObjects(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, doc := range strings.Split(string(out), "\n---\n") {
		data, err := sigsyaml.YAMLToJSON([]byte(doc))
		var m map[string]any
		if err == nil {
			err = utiljson.Unmarshal(data, &m)
		}
		if err != nil {
			t.Fatalf("kustomize output: %v\n%s", err, doc)
		}
		if m != nil {
			objs = append(objs, m)
		}
	}
	return objs
}

// byIdentity sorts objs by kind, namespace and name.
func byIdentity(objs []map[string]any) []map[string]any {
	key := func(m map[string]any) string {
		u := unstructured.Unstructured{Object: m}
		return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
	}
	out := slices.Clone(objs)
	slices.SortStableFunc(out, func(a, b map[string]any) int { return strings.Compare(key(a), key(b)) })
	return out
}

// objectsOf is the objects of ms, in order.
func objectsOf(ms []Manifest) []map[string]any {
	out := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Object.Object)
	}
	return out
}

// TestKustomizeHelmChartsRefused: what kustomize would inflate outside
// the repository, or anew on every render, and what Flux would refuse,
// is an error that says so, and leaves nothing behind.
func TestKustomizeHelmChartsRefused(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"outside/kustomization.yaml":           "helmGlobals:\n  chartHome: /\nhelmCharts:\n  - name: etc\n    releaseName: x\n",
		"inlined/kustomization.yaml":           "helmGlobals:\n  chartHome: /\nhelmCharts:\n  - name: etc\n    releaseName: x\n    valuesMerge: replace\n    valuesInline: {a: 1}\n",
		"noname/kustomization.yaml":            "helmCharts:\n  - name: shop\n",
		"noname/charts/shop/Chart.yaml":        "apiVersion: v2\nname: shop\nversion: 1.0.0\n",
		"noname/charts/shop/values.yaml":       "a: 1\n",
		"novalues/kustomization.yaml":          "helmCharts:\n  - name: web\n    releaseName: web\n",
		"novalues/charts/web/Chart.yaml":       "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"noname/charts/shop/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		"remote/kustomization.yaml":            "helmCharts:\n  - name: shop\n    repo: https://charts.example.com\n    version: 1.0.0\n    releaseName: r\n",
		"escape/kustomization.yaml":            "helmGlobals:\n  chartHome: charts\nhelmCharts:\n  - name: shop\n    releaseName: r\n",
		"escape/charts/shop":                   "-> " + t.TempDir(),
	})
	fetchFails := func(context.Context, ChartRef) (string, error) {
		return "", errors.New("chart shop from https://charts.example.com: 404 Not Found")
	}
	tests := []struct {
		name, dir string
		opts      Options
		want      string
	}{
		// kustomize reads the chart's values.yaml through the bounds first…
		{"a chart home outside the repository", "outside", Options{}, "/etc/values.yaml is outside the repository"},
		{"a chart that links outside the repository", "escape", Options{}, "is outside the repository"},
		// …but not when valuesInline replaces them: helm is asked to.
		{"a chart home outside the repository, its values replaced", "inlined", Options{}, "chart /etc is not inside the repository"},
		{"a chart without a release name", "noname", Options{}, "no releaseName"},
		// kustomize copies it for helm: a chart without one fails there too.
		{"a chart without values.yaml", "novalues", Options{}, "charts/web/values.yaml"},
		{"a chart the repository does not serve", "remote", Options{FetchChart: fetchFails}, "404 Not Found"},
		{"a chart from a repository with no fetcher", "remote", Options{}, "fetches none"},
		{"a Flux app", "noname", Options{KustomizeWithoutHelm: true}, "Flux's kustomize-controller always"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Dir, opts.Root = filepath.Join(root, tt.dir), root
			_, err := Manifests(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "HELM_CONFIG_HOME") {
				t.Errorf("the error shows kustomize's command line: %v", err)
			}
		})
	}
}

// TestAKustomizationsChartThatLoopsEndsAtTheRenderTimeout: kustomize runs
// helm under its lock and waits for it without a deadline. A chart that
// loops forever must still end the render at its timeout, and the helm
// child must stop soon after, so that the scan's next kustomization
// builds.
func TestAKustomizationsChartThatLoopsEndsAtTheRenderTimeout(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	t.Setenv("TMPDIR", t.TempDir()) // to see what the builds leave there
	root := t.TempDir()
	files := map[string]string{
		"loops/kustomization.yaml":      "helmCharts:\n  - name: loop\n    releaseName: loop\n",
		"plain/kustomization.yaml":      "resources: [cm.yaml]\n",
		"plain/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		"loops/charts/loop/values.yaml": "{}\n",
	}
	for name, content := range loopingChart {
		files["loops/charts/loop/"+name] = content
	}
	writeTree(t, root, files)

	start := time.Now()
	_, err := Manifests(t.Context(), Options{Dir: filepath.Join(root, "loops"), Root: root, Timeout: 2 * time.Second})
	if !errors.Is(err, ErrRenderTimeout) {
		t.Errorf("err = %v, want the render abandoned after 2s", err)
	}
	ms, err := Manifests(t.Context(), Options{Dir: filepath.Join(root, "plain"), Root: root, Timeout: 20 * time.Second})
	if err != nil || len(ms) != 1 {
		t.Fatalf("the next kustomization: %d objects, %v", len(ms), err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the next kustomization built %s after the first began: the looping helm held kustomize's lock", took)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		leftover, _ := filepath.Glob(filepath.Join(os.TempDir(), "driftscan-helm-*"))
		if len(leftover) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned build left its helm folder behind: %v", leftover)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
