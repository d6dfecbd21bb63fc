package render

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/google/go-cmp/cmp"
)

// chartScan is what a scan does with a chart and the cache file at path:
// it renders the chart twice (the second render finds what changes between
// renders), unless the first was Settled, and saves the cache. It returns
// the first render and the cache's stats.
func chartScan(t *testing.T, opts Options, path string) ([]Manifest, ParseCacheStats, error) {
	t.Helper()
	c, err := OpenParseCache(path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	c.now = func() time.Time { return time.Unix(0, 0) }
	opts.Parsed = c
	ms, renderErr := Manifests(t.Context(), opts)
	if len(ms) == 0 || !ms[0].Settled() {
		if _, err := Manifests(t.Context(), opts); errText(err) != errText(renderErr) {
			t.Fatalf("the second render's error %v, the first's %v", err, renderErr)
		}
	}
	if err := c.Save(); err != nil {
		t.Fatalf("save: %v", err)
	}
	return ms, c.Stats(), renderErr
}

// copyChart copies the fixture chart name into a new folder a test may
// change.
func copyChart(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(name))
	if err := os.CopyFS(dst, os.DirFS(renderFixture(t, name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// uncached is what Manifests gives for opts without a cache.
func uncached(t *testing.T, opts Options) ([]Manifest, error) {
	t.Helper()
	opts.Parsed = nil
	return Manifests(t.Context(), opts)
}

// TestAnUnchangedChartIsNotRenderedAgain: once a chart rendered the same
// twice, the next scan of the same inputs reads its output from the cache
// without rendering it, and that output is the render's, object for
// object. A change to any input (a template, a values file, a set value,
// the release, the namespace, the cluster's version or API versions, a
// file of the chart) renders the chart again, with the new input's
// output; and the scan after that reads it from the cache again.
func TestAnUnchangedChartIsNotRenderedAgain(t *testing.T) {
	dir := copyChart(t, "helm/web")
	repo := filepath.Dir(dir)
	writeFile(t, filepath.Join(repo, "env", "shared.yaml"), "image: {repository: mirror.example/nginx}\n")
	path := filepath.Join(t.TempDir(), "manifests.json")
	opts := Options{
		Dir:         dir,
		Root:        repo,
		Namespace:   "shop",
		Helm:        &config.HelmSource{ValuesFiles: []string{"../env/shared.yaml", "values-prod.yaml"}},
		KubeVersion: "v1.37.2",
		APIVersions: []string{"example.com/v1"},
	}

	// check scans opts twice: the first renders (cached says whether its
	// output was in the cache already), the second reads it from the cache;
	// both give what a render without a cache gives.
	check := func(what string, opts Options, cached bool) {
		t.Helper()
		want, wantErr := uncached(t, opts)
		if wantErr != nil || len(want) == 0 {
			t.Fatalf("%s: %d manifests, %v", what, len(want), wantErr)
		}
		for i, wantCharts := range []int{0, 1} {
			if i == 0 && cached {
				wantCharts = 1
			}
			got, stats, err := chartScan(t, opts, path)
			sameOutput(t, what, want, got, wantErr, err)
			if stats.Charts != wantCharts {
				t.Errorf("%s, scan %d: %d charts read from the cache, want %d (%+v)", what, i+1, stats.Charts, wantCharts, stats)
			}
			// The chart calls no function that changes between renders,
			// nor tpl: rendered or not, it is not rendered twice.
			for _, m := range got {
				if !m.Settled() {
					t.Errorf("%s, scan %d: %s not settled", what, i+1, m.File)
				}
			}
			if wantCharts == 1 && stats.Parsed != 0 {
				t.Errorf("%s, scan %d: %d documents parsed for a chart read from the cache", what, i+1, stats.Parsed)
			}
		}
	}
	check("first", opts, false)

	edit := func(file, old, new string) {
		t.Helper()
		editFile(t, filepath.Join(dir, filepath.FromSlash(file)), old, new)
	}
	edit("templates/service.yaml", "port: 80", "port: 8080")
	check("a template edited", opts, false)
	edit("values-prod.yaml", "replicaCount: 3", "replicaCount: 4")
	check("a values file edited", opts, false)
	edit("../env/shared.yaml", "mirror.example", "mirror.example.org")
	check("a values file outside the chart edited", opts, false)
	edit("values.yaml", `tag: "1.25"`, `tag: "1.27"`)
	check("the chart's values edited", opts, false)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("a file no template reads\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("a file added", opts, false)

	// Each input in turn, the others as the last scan had them.
	helm := func(set map[string]string, release string) *config.HelmSource {
		return &config.HelmSource{ValuesFiles: []string{"../env/shared.yaml", "values-prod.yaml"}, Set: set, ReleaseName: release}
	}
	opts.Helm = helm(map[string]string{"env": "staging"}, "")
	check("a set value", opts, false)
	opts.Helm = helm(map[string]string{"env": "qa"}, "")
	check("another set value", opts, false)
	opts.ExtraValues = [][]byte{[]byte("image: {tag: probe}\n")}
	check("extra values", opts, false)
	opts.Helm = helm(map[string]string{"env": "qa"}, "shop-web")
	check("another release", opts, false)
	opts.Namespace = "store"
	check("another namespace", opts, false)
	opts.KubeVersion = "v1.38.0"
	check("another Kubernetes version", opts, false)
	opts.APIVersions = nil
	check("the CRD's API gone", opts, false)

	// Back to inputs seen before: the cache keeps what the last scan used,
	// so only the last one is there.
	check("the last inputs again", opts, true)
}

// sameOutput fails unless got are want's objects (Go types included), files
// and lines, with the same error text.
func sameOutput(t *testing.T, what string, want, got []Manifest, wantErr, gotErr error) {
	t.Helper()
	type output struct {
		File   string
		Line   int
		Object map[string]any
	}
	outputs := func(ms []Manifest) []output {
		var out []output
		for _, m := range ms {
			obj, err := m.Load()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			out = append(out, output{m.File, m.Line, obj.Object})
		}
		return out
	}
	if w, g := outputs(want), outputs(got); !reflect.DeepEqual(w, g) {
		t.Errorf("%s: the output differs from a render's (-render +cache):\n%s", what, cmp.Diff(w, g))
	}
	if errText(wantErr) != errText(gotErr) {
		t.Errorf("%s: error %q, the render's %q", what, errText(gotErr), errText(wantErr))
	}
}

// TestAChartThatCanRenderDifferentlyIsRenderedEveryTime: a chart whose
// templates (or whose values, through tpl) call the clock, randomness or
// key generation (or takes a map's keys, in Go's map order) is rendered on
// every scan, even when its two renders agreed; so is one whose two
// renders differed though it names none of those functions (a function
// name assembled at render time, through tpl), one whose output holds a
// Secret, and one given values from Secrets.
func TestAChartThatCanRenderDifferentlyIsRenderedEveryTime(t *testing.T) {
	for _, c := range []struct {
		name, template, values string
		secret                 []string
	}{
		{name: "the year", template: `year: {{ now | date "2006" | quote }}`},
		{name: "a date from a string", template: `day: {{ date "2006-01-02" "today" | quote }}`},
		{name: "a password", template: `password: {{ randAlphaNum 16 | quote }}`},
		{name: "a certificate in a helper", template: `{{- define "x" }}{{ genCA "x" 365 }}{{ end }}cert: {{ include "x" . | b64enc | len | quote }}`},
		{name: "the clock through tpl", template: `stamp: {{ tpl .Values.stamp . | quote }}`, values: "stamp: '{{ now | date \"2006\" }}'\n"},
		{name: "a name assembled at render time", template: `token: {{ tpl (printf "{{ %s%s 12 }}" "rand" "AlphaNum") . | quote }}`},
		{name: "a map's keys", template: `user: {{ first (keys .Values.users) | quote }}`, values: "users: {a: 1}\n"},
		{name: "values from a Secret", template: `env: {{ .Values.env | quote }}`, values: "env: prod\n", secret: []string{"prod"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: moving\nversion: 0.1.0\n")
			writeFile(t, filepath.Join(dir, "values.yaml"), c.values)
			writeFile(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moving\ndata:\n  "+c.template+"\n")
			opts := Options{Dir: dir, Namespace: "shop", Helm: &config.HelmSource{Secret: c.secret}}
			path := filepath.Join(t.TempDir(), "manifests.json")
			for scan := 1; scan <= 3; scan++ {
				ms, stats, err := chartScan(t, opts, path)
				if err != nil || len(ms) != 1 {
					t.Fatalf("scan %d: %d manifests, %v", scan, len(ms), err)
				}
				// Values from a Secret do not change between renders: the
				// chart is rendered once, but its output is never kept.
				if stats.Charts != 0 || ms[0].Settled() != (c.secret != nil) {
					t.Errorf("scan %d read the chart's output from the cache (%+v, settled %v)", scan, stats, ms[0].Settled())
				}
			}
		})
	}

	t.Run("a Secret in the output", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: creds\nversion: 0.1.0\n")
		writeFile(t, filepath.Join(dir, "templates", "secret.yaml"), "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: from-git\n")
		writeFile(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n")
		path := filepath.Join(t.TempDir(), "manifests.json")
		for scan := 1; scan <= 2; scan++ {
			if _, stats, err := chartScan(t, Options{Dir: dir, Namespace: "shop"}, path); err != nil || stats.Charts != 0 {
				t.Errorf("scan %d: %+v, %v; want the chart rendered", scan, stats, err)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "from-git") {
			t.Error("the cache file holds the Secret's value")
		}
	})
}

// TestARenderEntryThatDoesNotHoldIsDropped: a chart's entry whose
// documents are gone from the cache, or that is not one this build
// writes, is dropped, and the chart is rendered as without a cache.
func TestARenderEntryThatDoesNotHoldIsDropped(t *testing.T) {
	opts := Options{Dir: renderFixture(t, "helm/web"), Namespace: "shop", KubeVersion: "v1.37.2"}
	want, wantErr := uncached(t, opts)
	for _, c := range []struct {
		name   string
		break_ func(c *ParseCache, key cacheKey)
	}{
		{"a document gone", func(c *ParseCache, key cacheKey) {
			docs, ok := decodeRendered(c.entries[key].objects)
			if !ok || len(docs) == 0 {
				t.Fatalf("the render entry does not decode: %q", c.entries[key].objects)
			}
			delete(c.entries, docs[len(docs)-1].key)
		}},
		{"not a list of documents", func(c *ParseCache, key cacheKey) {
			c.entries[key].objects = []byte(`[["templates/x.yaml","y` + strings.Repeat("0", 64) + `"]]`)
		}},
		{"text after the list", func(c *ParseCache, key cacheKey) {
			c.entries[key].objects = append(c.entries[key].objects, " 1"...)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "manifests.json")
			chartScan(t, opts, path)
			cache, key := entryOf(t, path, cacheRender)
			c.break_(cache, key)
			opts := opts
			opts.Parsed = cache
			got, err := Manifests(t.Context(), opts)
			sameOutput(t, "a broken entry", want, got, wantErr, err)
			if st := cache.Stats(); st.Charts != 0 || st.Rejected != 1 {
				t.Errorf("stats %+v, want the entry rejected and the chart rendered", st)
			}
			// The render kept its output afresh, whole.
			if again, ok := cache.rendered(key, false); !ok {
				t.Error("the render did not keep its output in place of the broken entry")
			} else {
				sameOutput(t, "the entry kept afresh", want, again, wantErr, nil)
			}
		})
	}
}

func TestTextSettlement(t *testing.T) {
	for text, want := range map[string]settlement{
		"plain text, for now":                          settles,
		`{{ .Values.random | quote }}`:                 settles,
		`{{ include "web.labels" . }} now`:             settles,
		`{{ nowhere }} {{ undated }} {{ tplx }}`:       settles,
		`{{ now }}`:                                    mayDiffer,
		`{{- $x := randAlphaNum 8 -}}`:                 mayDiffer,
		`{{ .Values.now }}`:                            mayDiffer, // a field of that name counts too
		`{{ /* dateInZone */ }}`:                       mayDiffer,
		`{{ "a" }} {{ genSelfSignedCert "x" nil nil 1`: mayDiffer, // an action left open
		`{{ first (keys .Values.users) }}`:             mayDiffer,
		`{{ tpl .Values.x . }}`:                        mayAssemble,
		`{{ tpl .Values.x . }} {{ uuidv4 }}`:           mayDiffer,
		`{{ uuidv4 }} {{ tpl .Values.x . }}`:           mayDiffer,
	} {
		if got := textSettlement([]byte(text), false); got != want {
			t.Errorf("textSettlement(%q) = %v, want %v", text, got, want)
		}
	}
	// Helm's lookup gives nothing without a cluster, and the live object
	// when the applier renders against one.
	const lookup = `{{ (lookup "v1" "Secret" .Release.Namespace "db").data }}`
	if got := textSettlement([]byte(lookup), false); got != settles {
		t.Errorf("without a cluster, textSettlement(%q) = %v, want settles", lookup, got)
	}
	if got := textSettlement([]byte(lookup), true); got != mayDiffer {
		t.Errorf("with the cluster's lookup, textSettlement(%q) = %v, want mayDiffer", lookup, got)
	}
}

// TestAChartThatSettlesIsRenderedOnce: without a cache, a chart whose text
// names no function that changes between renders, and calls no tpl, is
// given as settled (the scanner does not render it twice); one that calls
// tpl, or names such a function in a template, a helper, a file or the
// values given, is not.
func TestAChartThatSettlesIsRenderedOnce(t *testing.T) {
	for _, c := range []struct {
		name, template, helper, file, values string
		settled                              bool
	}{
		{name: "values and helpers", template: `{{ include "x" . }}: {{ .Values.v | upper | quote }}`, helper: `{{ define "x" }}{{ .Release.Name }}{{ end }}`, values: "v: a\n", settled: true},
		{name: "tpl of a value", template: `v: {{ tpl .Values.v . | quote }}`, values: "v: '{{ .Release.Name }}'\n"},
		{name: "the clock in a helper", template: `v: {{ include "x" . | quote }}`, helper: `{{ define "x" }}{{ now | date "2006" }}{{ end }}`},
		{name: "a map's keys", template: `v: {{ first (keys .Values.users) | quote }}`, values: "users: {a: 1, b: 2}\n"},
		{name: "randomness in a file", template: `v: {{ .Files.Get "f.txt" | quote }}`, file: `{{ randAlpha 3 }}`},
		{name: "the clock in the values", template: `v: {{ .Values.v | quote }}`, values: "v: '{{ now }}'\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: once\nversion: 0.1.0\n")
			writeFile(t, filepath.Join(dir, "values.yaml"), c.values)
			writeFile(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: once\ndata:\n  "+c.template+"\n")
			if c.helper != "" {
				writeFile(t, filepath.Join(dir, "templates", "_helpers.tpl"), c.helper)
			}
			if c.file != "" {
				writeFile(t, filepath.Join(dir, "f.txt"), c.file)
			}
			ms, err := Manifests(t.Context(), Options{Dir: dir, Namespace: "shop"})
			if err != nil || len(ms) != 1 {
				t.Fatalf("%d manifests, %v", len(ms), err)
			}
			if ms[0].Settled() != c.settled {
				t.Errorf("Settled() = %v, want %v", ms[0].Settled(), c.settled)
			}
		})
	}
}

// editFile replaces the first old in the file at p with new.
func editFile(t *testing.T, p, old, new string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s holds no %q", p, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// entryOf opens the cache file at path and returns the key of its one
// entry of kind.
func entryOf(t *testing.T, path string, kind cacheKind) (*ParseCache, cacheKey) {
	t.Helper()
	c, err := OpenParseCache(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys []cacheKey
	for k := range c.entries {
		if k.kind == kind {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 {
		t.Fatalf("%d entries of kind %c after a scan, want one", len(keys), kind)
	}
	return c, keys[0]
}
