package render

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRenderHelm(t *testing.T) {
	prod := Options{
		Namespace:   "shop",
		Helm:        &config.HelmSource{ValuesFiles: []string{"values-prod.yaml"}, Set: map[string]string{"image.tag": "1.26.1"}},
		KubeVersion: "v1.37.2",
		APIVersions: []string{"example.com/v1"},
	}
	tests := []struct {
		name string
		opts Options
		want []renderedObject
		// values are fields of the Deployment, by path.
		values map[string]any
		// info is the data of the ConfigMap that shows .Capabilities.
		info map[string]any
	}{{
		name: "values files, set values and capabilities reach the templates",
		opts: prod,
		want: []renderedObject{
			{File: "crds/widgets.yaml", ID: "apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com"},
			{File: "templates/cluster-info.yaml", ID: "v1 ConfigMap shop/web-cluster"},
			{File: "templates/service.yaml", ID: "v1 Service shop/web"},
			{File: "templates/deployment.yaml", ID: "apps/v1 Deployment shop/web"},
		},
		values: map[string]any{
			"spec.replicas":                                    int64(3),
			"spec.template.spec.containers.0.image":            "nginx:1.26.1",
			"spec.template.spec.containers.0.env.0.value":      "prod",
			"metadata.labels.app.kubernetes.io/instance":       "web",
			"spec.selector.matchLabels.app.kubernetes.io/name": "web",
		},
		info: map[string]any{"kubeVersion": "v1.37.2", "widgets": "true"},
	}, {
		name: "chart defaults, a release name and a comma in a set value",
		opts: Options{
			Namespace: "dev",
			Helm:      &config.HelmSource{ReleaseName: "shop-web", Set: map[string]string{"env": "dev,eu"}},
		},
		want: []renderedObject{
			{File: "crds/widgets.yaml", ID: "apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com"},
			{File: "templates/cluster-info.yaml", ID: "v1 ConfigMap dev/shop-web-cluster"},
			{File: "templates/service.yaml", ID: "v1 Service dev/shop-web"},
			{File: "templates/deployment.yaml", ID: "apps/v1 Deployment dev/shop-web"},
		},
		values: map[string]any{
			"spec.replicas":                               int64(1),
			"spec.template.spec.containers.0.image":       "nginx:1.25",
			"spec.template.spec.containers.0.env.0.value": "dev,eu",
		},
		info: map[string]any{"widgets": "false"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Dir = renderFixture(t, "helm/web")
			got, err := Manifests(context.Background(), tt.opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tt.want, renderSummary(got)); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
			for _, m := range got {
				switch m.Object.GetKind() {
				case "Deployment":
					for path, want := range tt.values {
						if diff := cmp.Diff(want, helmField(m.Object, path)); diff != "" {
							t.Errorf("Deployment %s (-want +got):\n%s", path, diff)
						}
					}
				case "ConfigMap":
					data, _, _ := unstructured.NestedMap(m.Object.Object, "data")
					for k, want := range tt.info {
						if diff := cmp.Diff(want, data[k]); diff != "" {
							t.Errorf("ConfigMap data.%s (-want +got):\n%s", k, diff)
						}
					}
				}
			}
		})
	}
}

// helmField reads a dotted path in which list indexes are numbers and the
// last segments may form a key with dots and slashes
// (metadata.labels.app.kubernetes.io/name).
func helmField(obj *unstructured.Unstructured, path string) any {
	var cur any = obj.Object
	parts := strings.Split(path, ".")
	for i := 0; i < len(parts); i++ {
		switch c := cur.(type) {
		case map[string]any:
			key := parts[i]
			for j := len(parts); j > i; j-- {
				if _, ok := c[strings.Join(parts[i:j], ".")]; ok {
					key, i = strings.Join(parts[i:j], "."), j-1
					break
				}
			}
			cur = c[key]
		case []any:
			n := 0
			for _, r := range parts[i] {
				n = n*10 + int(r-'0')
			}
			if n >= len(c) {
				return nil
			}
			cur = c[n]
		default:
			return nil
		}
	}
	return cur
}

func TestRenderHelmErrors(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		src  *config.HelmSource
		want []string
	}{{
		name: "a dependency not vendored in charts/ is an error, not a download",
		dir:  "helm/needs-dep",
		want: []string{"helm chart ", "found in Chart.yaml, but missing in charts/ directory: redis"},
	}, {
		name: "a values file that does not exist",
		dir:  "helm/web",
		src:  &config.HelmSource{ValuesFiles: []string{"values-nope.yaml"}},
		want: []string{"values file values-nope.yaml: openat values-nope.yaml: no such file", "no such file or directory"},
	}, {
		name: "a set file outside the repository",
		dir:  "helm/web",
		src:  &config.HelmSource{SetFiles: map[string]string{"cert": "../../../../../../etc/passwd"}},
		want: []string{"set file cert: ", "leaves the repository: refused"},
	}, {
		name: "a set value with a bad path",
		dir:  "helm/web",
		src:  &config.HelmSource{Set: map[string]string{"env[-1]": "x"}},
		want: []string{"set env[-1]: "},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			if src == nil {
				src = &config.HelmSource{}
			}
			ms, err := Manifests(context.Background(), Options{Dir: renderFixture(t, tt.dir), Helm: src})
			if err == nil {
				t.Fatalf("Manifests() = %d manifests, want an error", len(ms))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Manifests() error = %q, want it to contain %q", err, w)
				}
			}
			if len(ms) != 0 {
				t.Errorf("Manifests() returned %d manifests with the error, want none", len(ms))
			}
		})
	}
}

// A chart asks DiscoverAPIVersions for the cluster's API versions when it
// is given none; plain files and kustomizations never ask, so a scan's
// render of them does not wait on the cluster's discovery.
func TestDiscoverAPIVersionsOnlyForCharts(t *testing.T) {
	asked := 0
	discover := func() []string { asked++; return []string{"example.com/v1"} }
	got, err := Manifests(t.Context(), Options{Dir: renderFixture(t, "helm/web"), Namespace: "shop",
		Helm: &config.HelmSource{}, KubeVersion: "v1.37.2", DiscoverAPIVersions: discover})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if asked != 1 {
		t.Errorf("the chart asked for the API versions %d times, want 1", asked)
	}
	widgets := ""
	for _, m := range got {
		if m.Object.GetKind() == "ConfigMap" {
			widgets, _, _ = unstructured.NestedString(m.Object.Object, "data", "widgets")
		}
	}
	if widgets != "true" {
		t.Errorf("the chart saw example.com/v1 served: %q, want \"true\" (.Capabilities.APIVersions from DiscoverAPIVersions)", widgets)
	}
	for _, dir := range []string{"plain/apps", "kustomize/overlays/prod"} {
		asked = 0
		if _, err := Manifests(t.Context(), Options{Dir: renderFixture(t, dir), Root: renderFixture(t, "."), Namespace: "shop", DiscoverAPIVersions: discover}); err != nil {
			t.Fatalf("Render %s: %v", dir, err)
		}
		if asked != 0 {
			t.Errorf("rendering %s asked for the API versions %d times, want never", dir, asked)
		}
	}
}

// Argo CD's helm.ignoreMissingValueFiles: a values file that does not exist
// is left out (one values file per environment, not every environment
// having one), and the render is the one without it, fresh and from the
// render cache; a values file that exists is still read.
func TestAMissingValuesFileIsLeftOutWhenAsked(t *testing.T) {
	dir := renderFixture(t, "helm/web")
	with := &config.HelmSource{ValuesFiles: []string{"values-prod.yaml"}}
	missing := &config.HelmSource{ValuesFiles: []string{"values-prod.yaml", "values-staging.yaml"}, IgnoreMissingValuesFiles: true}
	want, err := Manifests(context.Background(), Options{Dir: dir, Helm: with})
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "cache")
	for _, run := range []string{"fresh", "from the render cache"} {
		got, stats, err := chartScan(t, Options{Dir: dir, Helm: missing}, cache)
		if err != nil {
			t.Fatalf("%s: %v", run, err)
		}
		if d := cmp.Diff(renderSummary(want), renderSummary(got)); d != "" {
			t.Errorf("%s: the render with a missing values file left out differs from the one without it (-want +got):\n%s", run, d)
		}
		if cached := stats.Charts == 1; cached != (run != "fresh") {
			t.Errorf("%s: %d charts read from the render cache", run, stats.Charts)
		}
	}
	missing.IgnoreMissingValuesFiles = false
	if _, err := Manifests(context.Background(), Options{Dir: dir, Helm: missing}); err == nil || !strings.Contains(err.Error(), "values-staging.yaml") {
		t.Errorf("without ignoreMissingValuesFiles: want the missing file named, got %v", err)
	}
}

// A chart helm-controller released from an OCIRepository renders with the
// artifact's digest in its version (HelmSource.ChartVersion), as the
// reconciler rendered it; the render cache tells the two apart.
func TestAChartRendersAsTheVersionTheReconcilerGaveIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop")
	writeTree(t, dir, agreeChart)
	cache := filepath.Join(t.TempDir(), "cache")
	label := func(ms []Manifest) string {
		for _, m := range ms {
			if l := m.Object.GetLabels()["helm.sh/chart"]; l != "" {
				return l
			}
		}
		return ""
	}
	for _, tt := range []struct{ version, want string }{{"", "shop-1.4.0"}, {"1.4.0+f57c38d97ca9", "shop-1.4.0+f57c38d97ca9"}, {"", "shop-1.4.0"}} {
		ms, _, err := chartScan(t, Options{Dir: dir, Namespace: "pay", KubeVersion: "v1.36.0", Helm: &config.HelmSource{ChartVersion: tt.version}}, cache)
		if err != nil {
			t.Fatal(err)
		}
		if got := label(ms); got != tt.want {
			t.Errorf("ChartVersion %q: helm.sh/chart %q, want %q", tt.version, got, tt.want)
		}
	}
}

// A chart source-controller built from Git or with valuesFiles renders
// with the build metadata it gave the version (config.HelmSource's
// VersionMetadata), replacing the chart's own: the helm.sh/chart label
// most charts carry shows it.
func TestAChartRendersWithTheReconcilersVersionMetadata(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0+local\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  labels: {helm.sh/chart: {{ printf \"%s-%s\" .Chart.Name .Chart.Version | replace \"+\" \"_\" | quote }}}\n",
	})
	for meta, want := range map[string]string{"": "web-0.1.0_local", "62225de9b23f.4": "web-0.1.0_62225de9b23f.4"} {
		ms, err := Manifests(context.Background(), Options{Dir: dir, Namespace: "web", Helm: &config.HelmSource{ReleaseName: "web", VersionMetadata: meta}})
		if err != nil || len(ms) != 1 {
			t.Fatalf("%d objects, %v", len(ms), err)
		}
		if got := ms[0].Object.GetLabels()["helm.sh/chart"]; got != want {
			t.Errorf("metadata %q: label %q, want %q", meta, got, want)
		}
	}
}

// A Flux chart built with valuesFiles: their merge replaces the chart's
// values.yaml (ValuesFilesReplaceDefaults), so a default no file repeats is
// gone; without the flag the files merge over the defaults, as `helm -f`.
func TestValuesFilesReplaceTheChartsDefaults(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"values.yaml":       "replicas: 2\nlevel: info\n",
		"prod.yaml":         "level: warn\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {replicas: {{ .Values.replicas | default \"none\" | quote }}, level: {{ .Values.level | quote }}}\n",
	})
	for replace, want := range map[bool]string{false: "2", true: "none"} {
		ms, err := Manifests(context.Background(), Options{Dir: dir, Namespace: "web", Helm: &config.HelmSource{ReleaseName: "web", ValuesFiles: []string{"prod.yaml"}, ValuesFilesReplaceDefaults: replace}})
		if err != nil || len(ms) != 1 {
			t.Fatalf("%d objects, %v", len(ms), err)
		}
		data, _, _ := unstructured.NestedStringMap(ms[0].Object.Object, "data")
		if data["replicas"] != want || data["level"] != "warn" {
			t.Errorf("replace %v: data %v, want replicas %s and level warn", replace, data, want)
		}
	}
}

// A chart's values.schema.json holds its values to a shape: values that
// break it fail the render, as `helm template` fails, unless the app skips
// the check (Argo CD's helm.skipSchemaValidation, a HelmRelease's
// disableSchemaValidation), which changes nothing else of the render,
// fresh or from the render cache.
func TestSchemaValidationCanBeSkipped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "web")
	writeTree(t, dir, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"values.yaml":        "level: info\n",
		"values.schema.json": `{"type": "object", "properties": {"level": {"enum": ["info", "warn"]}}}`,
		"verbose.yaml":       "level: verbose\n",
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {level: {{ .Values.level | quote }}}\n",
	})
	cache := filepath.Join(t.TempDir(), "cache")
	for _, run := range []string{"fresh", "from the render cache"} {
		ms, _, err := chartScan(t, Options{Dir: dir, Helm: &config.HelmSource{ValuesFiles: []string{"verbose.yaml"}, SkipSchemaValidation: true}}, cache)
		if err != nil {
			t.Fatalf("%s: skipping the schema: %v", run, err)
		}
		if level, _, _ := unstructured.NestedString(ms[0].Object.Object, "data", "level"); level != "verbose" {
			t.Errorf("%s: level %q, want verbose", run, level)
		}
		if _, _, err := chartScan(t, Options{Dir: dir, Helm: &config.HelmSource{ValuesFiles: []string{"verbose.yaml"}}}, cache); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("%s: without skipping the schema: %v, want the schema's error", run, err)
		}
	}
}

// setString sets a value as a string (`helm --set-string`, Argo CD's
// parameters with forceString), after set: a number or a bool stays the
// text given, where set types it; the render cache tells the two apart.
func TestSetStringKeepsTheText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "web")
	writeTree(t, dir, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {values: {{ .Values | toJson | quote }}}\n",
	})
	cache := filepath.Join(t.TempDir(), "cache")
	for _, tt := range []struct {
		name string
		helm *config.HelmSource
		want string
	}{
		{"set types", &config.HelmSource{Set: map[string]string{"port": "8080", "debug": "true"}}, `{"debug":true,"port":8080}`},
		{"setString keeps the text", &config.HelmSource{SetString: map[string]string{"port": "8080", "debug": "true", "list": "{a,b}"}}, `{"debug":"true","list":["a","b"],"port":"8080"}`}, // a {a,b} list stays one, as helm reads it
		{"setString after set", &config.HelmSource{Set: map[string]string{"port": "8080"}, SetString: map[string]string{"port": "9090"}}, `{"port":"9090"}`},
	} {
		ms, _, err := chartScan(t, Options{Dir: dir, Helm: tt.helm}, cache)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got, _, _ := unstructured.NestedString(ms[0].Object.Object, "data", "values"); got != tt.want {
			t.Errorf("%s: values %s, want %s", tt.name, got, tt.want)
		}
	}
}
