package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/google/go-cmp/cmp"
)

// cachedRender is one render of dir with the cache file at path: opened,
// used, saved.
type cachedRender struct {
	ms      []Manifest
	err     error
	stats   ParseCacheStats
	openErr error
}

// Its clock stands at 1970, so every file reads as changed after the
// render began: the file index keeps none, whatever the machine's speed
// (renderCachedLater keeps them).
func renderCached(t *testing.T, opts Options, path string) cachedRender {
	t.Helper()
	return renderCachedAt(t, opts, path, func() time.Time { return time.Unix(0, 0) })
}

// renderCachedLater is renderCached with the cache's clock later than the
// real one by later: a file written just now reads as one last changed
// that long before the render (the file index keeps no file changed within
// racyMargin of its read).
func renderCachedLater(t *testing.T, opts Options, path string, later time.Duration) cachedRender {
	t.Helper()
	return renderCachedAt(t, opts, path, func() time.Time { return time.Now().Add(later) })
}

// renderCachedAt is renderCached with the cache's clock now.
func renderCachedAt(t *testing.T, opts Options, path string, now func() time.Time) cachedRender {
	t.Helper()
	c, openErr := OpenParseCache(path)
	c.now = now
	opts.Parsed = c
	ms, err := Manifests(t.Context(), opts)
	if err := c.Save(); err != nil {
		t.Fatalf("save: %v", err)
	}
	return cachedRender{ms: ms, err: err, stats: c.Stats(), openErr: openErr}
}

// sameManifests fails unless got holds exactly want's manifests, Go types
// included (reflect.DeepEqual tells int64 from float64 and nil from
// empty), and the same error text.
func sameManifests(t *testing.T, what string, want, got []Manifest, wantErr, gotErr error) {
	t.Helper()
	got = withoutDigests(got)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: manifests differ from the parser's (-parser +%s):\n%s", what, what, cmp.Diff(want, got))
		for i := range min(len(want), len(got)) {
			if !reflect.DeepEqual(want[i], got[i]) {
				t.Errorf("first differing manifest %d: %#v\nwant %#v", i, got[i].Object.Object, want[i].Object.Object)
				break
			}
		}
	}
	if errText(wantErr) != errText(gotErr) {
		t.Errorf("%s: error %q, the parser's %q", what, errText(gotErr), errText(wantErr))
	}
}

// withoutDigests is ms with no Digest: what the parser gives without a
// cache, which names no bytes.
func withoutDigests(ms []Manifest) []Manifest {
	if ms == nil {
		return nil
	}
	out := make([]Manifest, len(ms))
	for i, m := range ms {
		m.Digest = ""
		out[i] = m
	}
	return out
}

func digests(ms []Manifest) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Digest)
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// hasSecret reports whether ms declare a Secret.
func hasSecret(ms []Manifest) bool {
	for _, m := range ms {
		if m.Object.GetKind() == "Secret" {
			return true
		}
	}
	return false
}

// TestParseCacheGivesWhatTheParserGives: every YAML file of the fixtures,
// rendered with an empty cache, saved, and rendered again from the cache,
// gives the parser's manifests and errors; the second render reads a file
// that parsed cleanly from the cache without parsing it, and parses a file
// with an error or a Secret again.
func TestParseCacheGivesWhatTheParserGives(t *testing.T) {
	eachFixtureYAML(t, func(t *testing.T, data []byte) {
		dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.jsonl")
		if err := os.WriteFile(filepath.Join(dir, "m.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := Options{Dir: dir}
		want, wantErr := Manifests(t.Context(), opts)
		first := renderCached(t, opts, cache)
		sameManifests(t, "empty cache", want, first.ms, wantErr, first.err)
		second := renderCached(t, opts, cache)
		sameManifests(t, "warm cache", want, second.ms, wantErr, second.err)
		if second.openErr != nil {
			t.Errorf("reopening the saved cache: %v", second.openErr)
		}
		wantStats := ParseCacheStats{Hits: 1}
		if wantErr != nil || hasSecret(want) {
			wantStats = ParseCacheStats{Parsed: 1}
		}
		if second.stats != wantStats {
			t.Errorf("second render: %+v, want %+v", second.stats, wantStats)
		}
		// Lazily: what the cache gives comes undecoded, named as the
		// decoded object names itself, and decodes into what the parser
		// gave.
		lazy := renderCached(t, Options{Dir: dir, Lazy: true}, cache)
		for _, m := range lazy.ms {
			if wantStats.Hits == 1 && m.Object != nil {
				t.Errorf("lazy render from the cache: %s decoded whole before Load", m.Ident().Name)
			}
			obj, err := m.Load()
			if err != nil {
				t.Fatalf("Load %s line %d: %v", m.File, m.Line, err)
			}
			if got, want := m.Ident(), identOf(obj); !reflect.DeepEqual(got, want) {
				t.Errorf("lazy render: %s line %d is named %+v before Load, %+v after", m.File, m.Line, got, want)
			}
		}
		sameManifests(t, "lazy cache, loaded", want, loaded(t, lazy.ms), wantErr, lazy.err)
	})
}

// loaded Loads each manifest and gives it as a render that was not lazy
// gives it.
func loaded(t *testing.T, ms []Manifest) []Manifest {
	t.Helper()
	if ms == nil {
		return nil
	}
	out := make([]Manifest, len(ms))
	for i, m := range ms {
		obj, err := m.Load()
		if err != nil {
			t.Fatalf("Load %s line %d: %v", m.File, m.Line, err)
		}
		out[i] = Manifest{Object: obj, File: m.File, Line: m.Line, Digest: m.Digest}
	}
	return out
}

// TestALazyManifestLoadsOneObject: an object the cache gave undecoded is
// decoded once, into the object the parser gave, and every copy of the
// manifest gives that one object (the scanner sets its namespace on it).
func TestALazyManifestLoadsOneObject(t *testing.T) {
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.jsonl")
	data := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {app: web}}\nspec:\n  replicas: 3\n  template: {spec: {containers: [{name: app, image: \"nginx:1.25\", args: [\"a\\tb\", \"\\u00e9\"]}]}}\n"
	if err := os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := Manifests(t.Context(), Options{Dir: dir})
	if err != nil || len(want) != 1 {
		t.Fatalf("%v, %v", renderSummary(want), err)
	}
	renderCached(t, Options{Dir: dir}, cache)
	lazy := renderCached(t, Options{Dir: dir, Lazy: true}, cache)
	if lazy.err != nil || len(lazy.ms) != 1 || lazy.stats.Hits != 1 || lazy.ms[0].Object != nil {
		t.Fatalf("%+v %v %v: want the Deployment from the cache, undecoded", lazy.stats, renderSummary(lazy.ms), lazy.err)
	}
	m, copied := lazy.ms[0], lazy.ms[0]
	obj, err := m.Load()
	if err != nil {
		t.Fatal(err)
	}
	obj.SetNamespace("team-a")
	again, err := copied.Load()
	if err != nil || again != obj {
		t.Errorf("Load gave %p, then %p from a copy (%v): want one object", obj, again, err)
	}
	want[0].Object.SetNamespace("team-a")
	if !reflect.DeepEqual(want[0].Object, obj) {
		t.Errorf("loaded object differs from the parser's with the namespace set (-parser +loaded):\n%s", cmp.Diff(want[0].Object, obj))
	}
}

// TestALazyManifestIsNamedAsItsGettersNameIt: what names an object the
// cache gave undecoded (Manifest.Ident) is what Unstructured's getters
// read of the decoded object, whatever the metadata holds: values that
// are not strings, escapes, annotations of another shape, members twice
// deeper down that are not the ones read.
func TestALazyManifestIsNamedAsItsGettersNameIt(t *testing.T) {
	docs := map[string]string{
		"plain.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: team-a, labels: {app: a}}\ndata: {k: v}\n",
		"escaped.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"caf\\u00e9\\t\\\"x\\\"\", namespace: \"\\u2028\"}\n",
		"generated.yaml":         "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: migrate-, name: 7}\n",
		"namespace-int.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: 3, generateName: [x]}\n",
		"hook.yaml":              "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, annotations: {argocd.argoproj.io/hook: PreSync, helm.sh/hook: pre-install}}\n",
		"annotations-int.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {a: b, n: 1}}\n",
		"annotations-list.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, annotations: [a, b]}\n",
		"annotations-null.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e, annotations: null, labels: {}}\n",
		"annotations-empty.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: f, annotations: {}}\n",
		"nested.yaml":            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: g}\nspec: {template: {metadata: {name: other, namespace: other, annotations: {helm.sh/hook: x}}}}\n",
		"two.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: h1}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: h2, namespace: n}\n",
		"object.json":            `{"kind": "ConfigMap", "metadata": {"namespace": "j", "name": "i", "annotations": {"x": "y"}}, "apiVersion": "v1"}`,
		"flux-labels.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k, labels: {app: web, kustomize.toolkit.fluxcd.io/ssa: IfNotPresent, kustomize.toolkit.fluxcd.io/n: 1, kustomize.toolkit.fluxcd.io/l: [x]}}\n",
		"labels-list.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: l, labels: [kustomize.toolkit.fluxcd.io/ssa]}\n",
	}
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.jsonl")
	for name, doc := range docs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eager, err := Manifests(t.Context(), Options{Dir: dir})
	if err != nil || len(eager) != len(docs)+1 {
		t.Fatalf("%v, %v", renderSummary(eager), err)
	}
	renderCached(t, Options{Dir: dir}, cache)
	lazy := renderCached(t, Options{Dir: dir, Lazy: true}, cache)
	if lazy.err != nil || len(lazy.ms) != len(eager) || lazy.stats.Hits != len(docs) {
		t.Fatalf("%+v %v %v: want every file from the cache", lazy.stats, renderSummary(lazy.ms), lazy.err)
	}
	for i, m := range lazy.ms {
		if m.Object != nil {
			t.Errorf("%s line %d: decoded before Load", m.File, m.Line)
		}
		if got, want := m.Ident(), identOf(eager[i].Object); !reflect.DeepEqual(got, want) {
			t.Errorf("%s line %d: named %+v undecoded, %+v by the parser's object", m.File, m.Line, got, want)
		}
	}
	// The getters' reading, spelled out for the cases it decides.
	byFile := map[string]Ident{}
	for _, m := range lazy.ms {
		byFile[m.File] = m.Ident()
	}
	for file, want := range map[string]Ident{
		"generated.yaml":         {APIVersion: "batch/v1", Kind: "Job", GenerateName: "migrate-"},
		"namespace-int.yaml":     {APIVersion: "v1", Kind: "ConfigMap", Name: "b"},
		"annotations-int.yaml":   {APIVersion: "v1", Kind: "ConfigMap", Name: "c"},
		"annotations-empty.yaml": {APIVersion: "v1", Kind: "ConfigMap", Name: "f", Annotations: map[string]string{}},
		"flux-labels.yaml":       {APIVersion: "v1", Kind: "ConfigMap", Name: "k", FluxLabels: map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}},
		"labels-list.yaml":       {APIVersion: "v1", Kind: "ConfigMap", Name: "l"},
		"hook.yaml": {APIVersion: "batch/v1", Kind: "Job", Name: "j",
			Annotations: map[string]string{"argocd.argoproj.io/hook": "PreSync", "helm.sh/hook": "pre-install"}},
	} {
		if got := byFile[file]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: named %+v, want %+v", file, got, want)
		}
	}
}

// TestParseCacheKeepsNumberTypes: the values JSON cannot tell apart (5.0
// and 5, 1e3 in a .json file, -0.0, integers past int64) come back from
// the cache as the Go types the parser made of them.
func TestParseCacheKeepsNumberTypes(t *testing.T) {
	const head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\n"
	files := map[string]string{
		"floats.yaml":  head + "spec: {a: 1.0, b: 1.5, c: -0.0, d: 1e20, e: 1e21, f: 0.000001, g: 1e-7, h: 12345678901234567890.0, i: 2.5e+300}\n",
		"ints.yaml":    head + "spec: {a: 1, b: -7, c: 0x1F, d: 9223372036854775807, e: -9223372036854775808, f: 0o17}\n",
		"past.yaml":    head + "spec: {a: 18446744073709551615, b: 99999999999999999999999}\n",
		"others.yaml":  head + "spec: {a: true, b: ~, c: [], d: {}, e: '', f: [[], {}, null], \"\": empty, g: \"\\u2028<&>\\t\"}\n",
		"numbers.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "spec": {"a": 1e3, "b": 5.0, "c": -0.0, "d": -0, "e": 99999999999999999999, "f": 1.5e-9, "g": 1E2, "h": 123456789012345678}}`,
		"big.json":     `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "spec": {"a": 1e400}}`,
		"nan.yaml":     head + "spec: {a: .nan}\n",
	}
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.jsonl")
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{Dir: dir}
	want, wantErr := Manifests(t.Context(), opts)
	if wantErr == nil || !strings.Contains(wantErr.Error(), "big.json") || !strings.Contains(wantErr.Error(), "nan.yaml") {
		t.Fatalf("the parser's error %v, want one for big.json and one for nan.yaml", wantErr)
	}
	renderCached(t, opts, cache)
	got := renderCached(t, opts, cache)
	sameManifests(t, "warm cache", want, got.ms, wantErr, got.err)
	if want := (ParseCacheStats{Hits: 5, Parsed: 2}); got.stats != want {
		t.Errorf("second render: %+v, want %+v", got.stats, want)
	}
	j := got.ms[slicesIndexFunc(got.ms, func(m Manifest) bool { return m.File == "numbers.json" })].Object.Object["spec"].(map[string]any)
	for k, want := range map[string]any{"a": float64(1000), "b": float64(5), "d": int64(0), "e": float64(1e20), "h": int64(123456789012345678)} {
		if !reflect.DeepEqual(j[k], want) {
			t.Errorf("numbers.json spec.%s = %#v, want %#v", k, j[k], want)
		}
	}
}

func slicesIndexFunc(ms []Manifest, f func(Manifest) bool) int {
	for i, m := range ms {
		if f(m) {
			return i
		}
	}
	return -1
}

// TestParseCacheReparsesAChangedFile: one byte changed is another file.
func TestParseCacheReparsesAChangedFile(t *testing.T) {
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.jsonl")
	file := filepath.Join(dir, "cm.yaml")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {replicas: \"1\"}\n")
	renderCached(t, Options{Dir: dir}, cache)
	write("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {replicas: \"2\"}\n")
	got := renderCached(t, Options{Dir: dir}, cache)
	if got.err != nil {
		t.Fatal(got.err)
	}
	if v := got.ms[0].Object.Object["data"].(map[string]any)["replicas"]; v != "2" {
		t.Errorf("replicas %v after the change, want 2", v)
	}
	if want := (ParseCacheStats{Parsed: 1}); got.stats != want {
		t.Errorf("%+v, want %+v", got.stats, want)
	}
}

// TestParseCacheKeepsErrorsExact: a file with a YAML error, or an object
// without a name, reports the same errors with a cache as without, each
// time, and the file's good documents with them.
func TestParseCacheKeepsErrorsExact(t *testing.T) {
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.jsonl")
	files := map[string]string{
		"bad.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkey: [unclosed\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
		"noname.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
		"bad.json":    `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}} {"apiVersion": `,
		"good.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, wantErr := Manifests(t.Context(), Options{Dir: dir})
	if len(renderErrors(wantErr)) != 3 || len(want) != 4 {
		t.Fatalf("the parser gave %d manifests and errors %v, want 4 and 3", len(want), renderErrors(wantErr))
	}
	for i, wantStats := range []ParseCacheStats{{Parsed: 4}, {Hits: 1, Parsed: 3}} {
		got := renderCached(t, Options{Dir: dir}, cache)
		sameManifests(t, "with the cache", want, got.ms, wantErr, got.err)
		if got.stats != wantStats {
			t.Errorf("render %d: %+v, want %+v", i+1, got.stats, wantStats)
		}
	}
}

// TestParseCacheUnreadableFileIsAWarning: a cache file that is damaged,
// cut off, too large or not a cache file at all is a warning naming it,
// the render parses everything and succeeds, and the next Save replaces
// the file with a good one. A file of another format is dropped silently.
func TestParseCacheUnreadableFileIsAWarning(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "manifests.jsonl")
	renderCached(t, Options{Dir: dir}, good)
	saved, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(saved)
	flipped[len(flipped)-10] ^= 1
	head, _, _ := bytes.Cut(saved, []byte("\n"))
	cases := []struct {
		name, wantWarning string
		write             func(path string) error
	}{
		{"garbage", "header", func(p string) error { return os.WriteFile(p, []byte("\x00\x01garbage\n"), 0o600) }},
		{"no header line", "no header", func(p string) error { return os.WriteFile(p, []byte("{"), 0o600) }},
		{"cut off", "cut off or damaged", func(p string) error { return os.WriteFile(p, saved[:len(saved)-20], 0o600) }},
		{"a flipped bit", "cut off or damaged", func(p string) error { return os.WriteFile(p, flipped, 0o600) }},
		{"the header alone", "cut off or damaged", func(p string) error { return os.WriteFile(p, append(head, '\n'), 0o600) }},
		{"too large", "over the limit", func(p string) error {
			if err := os.WriteFile(p, saved, 0o600); err != nil {
				return err
			}
			return os.Truncate(p, MaxParseCacheBytes+1) // sparse: no disk used
		}},
		{"a folder", "", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"another format", "-", func(p string) error {
			return os.WriteFile(p, bytes.Replace(saved, fmt.Appendf(nil, `"format":%d`, parseCacheFormat), fmt.Appendf(nil, `"format":%d`, parseCacheFormat-1), 1), 0o600)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "manifests.jsonl")
			if err := c.write(path); err != nil {
				t.Fatal(err)
			}
			cache, err := OpenParseCache(path)
			switch {
			case c.wantWarning == "-" && err != nil:
				t.Fatalf("warning %v for a cache of another format", err)
			case c.wantWarning != "-" && (err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.wantWarning)):
				t.Fatalf("warning %v, want one naming %s and saying %q", err, path, c.wantWarning)
			}
			ms, err := Manifests(t.Context(), Options{Dir: dir, Parsed: cache})
			if err != nil || len(ms) != 1 {
				t.Fatalf("render with the unreadable cache: %d manifests, %v", len(ms), err)
			}
			if want := (ParseCacheStats{Parsed: 1}); cache.Stats() != want {
				t.Errorf("%+v, want %+v", cache.Stats(), want)
			}
			if c.name == "a folder" {
				return // nothing replaces a folder
			}
			if err := cache.Save(); err != nil {
				t.Fatal(err)
			}
			if again := renderCached(t, Options{Dir: dir}, path); again.openErr != nil || again.stats.Hits != 1 {
				t.Errorf("after Save: warning %v, %+v, want the file replaced by a good one", again.openErr, again.stats)
			}
		})
	}
}

// TestParseCacheSaveKeepsOnlyWhatWasUsed: Save keeps the entries the run
// read or added, writes nothing when they are the file's, and replaces
// the file whole with one only its owner can read.
func TestParseCacheSaveKeepsOnlyWhatWasUsed(t *testing.T) {
	two, one := t.TempDir(), t.TempDir()
	a := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	b := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
	for _, f := range []struct {
		dir, name string
		data      []byte
	}{{two, "a.yaml", a}, {two, "b.yaml", b}, {one, "a.yaml", a}} {
		if err := os.WriteFile(filepath.Join(f.dir, f.name), f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	folder := t.TempDir()
	path := filepath.Join(folder, "manifests.jsonl")
	renderCached(t, Options{Dir: two}, path)
	if got := renderCached(t, Options{Dir: two}, path).stats; got != (ParseCacheStats{Hits: 2}) {
		t.Fatalf("second render of both files: %+v", got)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, want 0600", before.Mode().Perm())
	}
	// Rendering both files again from the cache changes nothing: no write.
	renderCached(t, Options{Dir: two}, path)
	if after, err := os.Stat(path); err != nil || !os.SameFile(before, after) {
		t.Errorf("a render that added nothing rewrote the cache file (%v)", err)
	}
	// A run that reads only a.yaml keeps only a.yaml's entry.
	if got := renderCached(t, Options{Dir: one}, path).stats; got != (ParseCacheStats{Hits: 1}) {
		t.Fatalf("render of a.yaml alone: %+v", got)
	}
	if after, err := os.Stat(path); err != nil || os.SameFile(before, after) {
		t.Errorf("dropping an entry did not replace the cache file (%v)", err)
	}
	if got := renderCached(t, Options{Dir: two}, path).stats; got != (ParseCacheStats{Hits: 1, Parsed: 1}) {
		t.Errorf("after a run that read only a.yaml: %+v, want b.yaml parsed again", got)
	}
	entries, err := os.ReadDir(folder)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the cache folder holds %v, want the cache file alone (no temporary file left)", entries)
	}
}

// TestParseCacheDoesNotKeepSecrets: a file that declares a Secret, alone,
// among other objects or as a List item, is parsed every time and none of
// its values reach the cache file; the chart's output documents that are
// no Secrets are kept, those that are Secrets are not.
func TestParseCacheDoesNotKeepSecrets(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2-plain-value}\n",
		"mixed.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {note: mixed-configmap-value}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: t}\ndata: {token: aHVudGVyMi1iYXNlNjQ=}\n",
		"list.json":   `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "u"}, "stringData": {"key": "hunter2-list-value"}}]}`,
		"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\ndata: {note: kept-configmap-value}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "manifests.jsonl")
	first := renderCached(t, Options{Dir: dir}, path)
	if first.err != nil || len(first.ms) != 5 {
		t.Fatalf("%d manifests, %v", len(first.ms), first.err)
	}
	second := renderCached(t, Options{Dir: dir}, path)
	if want := (ParseCacheStats{Hits: 1, Parsed: 3}); second.stats != want {
		t.Errorf("second render: %+v, want %+v (only cm.yaml from the cache)", second.stats, want)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(saved, []byte("kept-configmap-value")) {
		t.Fatalf("the cache file does not hold cm.yaml's object:\n%s", saved)
	}
	for _, secret := range []string{"hunter2", "aHVudGVyMi1iYXNlNjQ=", "mixed-configmap-value"} {
		if bytes.Contains(saved, []byte(secret)) {
			t.Errorf("the cache file holds %q from a file that declares a Secret", secret)
		}
	}
}

// TestParseCacheServesHelmOutput: a chart's output documents come from
// the cache on the second render, as they were (Line 0, the template's
// File), except when the chart was given values from Secrets.
func TestParseCacheServesHelmOutput(t *testing.T) {
	opts := Options{
		Dir:         renderFixture(t, "helm/web"),
		Namespace:   "shop",
		Helm:        &config.HelmSource{ValuesFiles: []string{"values-prod.yaml"}},
		KubeVersion: "v1.37.2",
		APIVersions: []string{"example.com/v1"},
	}
	want, wantErr := Manifests(t.Context(), opts)
	if wantErr != nil || len(want) == 0 {
		t.Fatalf("%d manifests, %v", len(want), wantErr)
	}
	path := filepath.Join(t.TempDir(), "manifests.jsonl")
	first := renderCached(t, opts, path)
	sameManifests(t, "empty cache", want, first.ms, wantErr, first.err)
	second := renderCached(t, opts, path)
	sameManifests(t, "warm cache", want, second.ms, wantErr, second.err)
	if second.stats.Hits == 0 || second.stats.Parsed != 0 {
		t.Errorf("second render: %+v, want every document from the cache and nothing parsed", second.stats)
	}

	opts.Helm = &config.HelmSource{ValuesFiles: []string{"values-prod.yaml"}, Secret: []string{"from-a-secret"}}
	withSecret := renderCached(t, opts, path)
	if withSecret.err != nil || withSecret.stats.Hits != 0 {
		t.Errorf("a chart given values from Secrets: %+v, %v; want nothing read from the cache", withSecret.stats, withSecret.err)
	}
}

// FuzzParseCache: for any bytes, as a YAML file and as a JSON file, the
// parser's manifests and errors are what a cache gives, fresh and after a
// Save and a reopen, and lazily (Options.Lazy) once loaded; the cache
// never rejects an entry it wrote.
func FuzzParseCache(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: 1.0, b: -0.0, c: 1e21, d: [], e: {}, f: ~}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n",
		`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "spec": {"a": 1e3, "b": 5.0, "c": -0.0, "e": 99999999999999999999}}`,
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
		"a: &a {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\nb: *a\n",
		"key: [unclosed\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, file := range []string{"f.yaml", "f.json"} {
			want, wantErrs, _ := parseFile(nil, file, data, false)
			path := filepath.Join(t.TempDir(), "manifests.jsonl")
			var stats ParseCacheStats
			var named []string // the first round's Digests
			for round := range 2 {
				c, err := OpenParseCache(path)
				if err != nil {
					t.Fatalf("%s round %d: open: %v", file, round, err)
				}
				got, gotErrs, _ := parseFile(c, file, data, false)
				// The same bytes name their objects alike, parsed or
				// read back, and each object apart.
				if round == 0 {
					named = digests(got)
					if slices.Contains(named, "") || len(slices.Compact(slices.Clone(named))) != len(named) {
						t.Fatalf("%s: Digests %q, want one of its own for each object", file, named)
					}
				} else if d := digests(got); !slices.Equal(d, named) {
					t.Fatalf("%s: Digests %q read back, %q parsed", file, d, named)
				}
				got = withoutDigests(got)
				if !reflect.DeepEqual(want, got) {
					t.Fatalf("%s round %d: manifests differ (-parser +cache):\n%s", file, round, cmp.Diff(want, got, cmp.AllowUnexported(Manifest{})))
				}
				if fmt.Sprint(wantErrs) != fmt.Sprint(gotErrs) {
					t.Fatalf("%s round %d: errors %v, the parser's %v", file, round, gotErrs, wantErrs)
				}
				if err := c.Save(); err != nil {
					t.Fatal(err)
				}
				stats = c.Stats()
			}
			if stats.Rejected != 0 || stats.Hits+stats.Parsed != 1 {
				t.Errorf("%s: %+v, want the entry the cache wrote read back or never written", file, stats)
			}
			c, err := OpenParseCache(path)
			if err != nil {
				t.Fatalf("%s lazily: open: %v", file, err)
			}
			lazy, lazyErrs, _ := parseFile(c, file, data, true)
			for i, m := range lazy {
				if i < len(want) && !reflect.DeepEqual(m.Ident(), identOf(want[i].Object)) {
					t.Fatalf("%s lazily: object %d named %+v undecoded, %+v by the parser's object", file, i, m.Ident(), identOf(want[i].Object))
				}
			}
			if got := withoutDigests(loaded(t, lazy)); !reflect.DeepEqual(want, got) {
				t.Fatalf("%s lazily: manifests differ once loaded (-parser +cache):\n%s", file, cmp.Diff(want, got))
			}
			if fmt.Sprint(wantErrs) != fmt.Sprint(lazyErrs) || c.Stats().Rejected != 0 {
				t.Fatalf("%s lazily: errors %v, the parser's %v; %+v", file, lazyErrs, wantErrs, c.Stats())
			}
			if stats.Hits == 0 && wantErrs == nil && !hasSecret(want) && len(want) > 0 {
				if _, ok := encodeObjects(want); ok {
					t.Errorf("%s: parsed again although it parsed cleanly and encodes", file)
				}
			}
		}
	})
}

// TestParseCacheIsSafeForConcurrentRenders: apps render at once with one
// cache (go test -race checks the locking); each render gets the parser's
// manifests and objects of its own.
func TestParseCacheIsSafeForConcurrentRenders(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		text := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%d}\ndata: {n: \"%d\"}\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cm%02d.yaml", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := Manifests(t.Context(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "manifests.jsonl")
	for round := range 2 {
		cache, err := OpenParseCache(path)
		if err != nil {
			t.Fatal(err)
		}
		got := make([][]Manifest, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				ms, err := Manifests(t.Context(), Options{Dir: dir, Parsed: cache})
				if err != nil {
					t.Error(err)
				}
				got[i] = ms
			})
		}
		wg.Wait()
		for i, ms := range got {
			sameManifests(t, fmt.Sprintf("round %d render %d", round, i), want, ms, nil, nil)
		}
		// Each render owns its objects: changing one changes no other.
		got[0][0].Object.SetNamespace("changed")
		if got[1][0].Object.GetNamespace() != "" {
			t.Errorf("round %d: two renders share an object", round)
		}
		if err := cache.Save(); err != nil {
			t.Fatal(err)
		}
		if s := cache.Stats(); round == 1 && (s.Hits != 8*20 || s.Parsed != 0) {
			t.Errorf("round %d: %+v, want every file of every render from the cache", round, s)
		}
	}
}

// TestADigestNamesTheBytesAnObjectWasParsedFrom: with a parse cache each
// object carries a Digest that the scanner keeps its verdicts by instead
// of hashing the object: the same for the same bytes, parsed or read back,
// whatever file holds them; another when a byte changes; one of its own
// for each object of a file; and none without a cache or for a chart given
// values from Secrets, whose objects are hashed. A kustomization's objects
// are named by the bytes the cache keeps of its build.
func TestADigestNamesTheBytesAnObjectWasParsedFrom(t *testing.T) {
	two := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
	c, err := OpenParseCache(filepath.Join(t.TempDir(), "manifests.json"))
	if err != nil {
		t.Fatal(err)
	}
	parsed, _, _ := parseFile(c, "a.yaml", two, false)
	readBack, _, _ := parseFile(c, "elsewhere/b.yaml", two, false)
	if c.Stats().Hits != 1 {
		t.Fatalf("the second file was not read back from the cache: %+v", c.Stats())
	}
	d := digests(parsed)
	if len(d) != 2 || d[0] == "" || d[0] == d[1] {
		t.Errorf("Digests %q, want one of its own for each of the two objects", d)
	}
	if got := digests(readBack); !slices.Equal(got, d) {
		t.Errorf("the same bytes in another file, read back: Digests %q, parsed %q", got, d)
	}
	changed, _, _ := parseFile(c, "a.yaml", bytes.Replace(two, []byte("k: v"), []byte("k: w"), 1), false)
	for i, got := range digests(changed) {
		if got == d[i] {
			t.Errorf("object %d: Digest %q after a byte of its file changed", i, got)
		}
	}
	if got := digests(mustParse(t, nil, "a.yaml", two)); !slices.Equal(got, []string{"", ""}) {
		t.Errorf("without a cache: Digests %q, want none", got)
	}

	opts := Options{Dir: renderFixture(t, "helm/web"), Namespace: "shop", Helm: &config.HelmSource{ValuesFiles: []string{"values-prod.yaml"}},
		KubeVersion: "v1.37.2", APIVersions: []string{"example.com/v1"}}
	path := filepath.Join(t.TempDir(), "manifests.json")
	first, second := renderCached(t, opts, path), renderCached(t, opts, path)
	if d := digests(first.ms); slices.Contains(d, "") || !slices.Equal(digests(second.ms), d) {
		t.Errorf("a chart's documents: Digests %q, then %q read back; want each named, alike", d, digests(second.ms))
	}
	named := func(s string) bool { return s != "" }
	opts.Helm.Secret = []string{"from-a-secret"}
	if d := digests(renderCached(t, opts, path).ms); slices.ContainsFunc(d, named) {
		t.Errorf("a chart given values from Secrets: Digests %q, want none", d)
	}
	kustomization := Options{Dir: renderFixture(t, "kustomize/base")}
	built := renderCached(t, kustomization, path)
	rebuilt := renderCached(t, kustomization, path)
	if d := digests(built.ms); built.err != nil || len(d) != 2 || slices.Contains(d, "") || d[0] == d[1] || !slices.Equal(digests(rebuilt.ms), d) || rebuilt.stats.Kustomizations != 1 {
		t.Errorf("a kustomization: Digests %q (%v), then %q read back (%+v); want each named, alike", d, built.err, digests(rebuilt.ms), rebuilt.stats)
	}
}

func mustParse(t *testing.T, c *ParseCache, file string, data []byte) []Manifest {
	t.Helper()
	ms, errs, _ := parseFile(c, file, data, false)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", file, errs)
	}
	return ms
}

// TestALazyObjectThatDoesNotDecodeSaysWhere: should an object not decode
// after its Ident was read (the cache checks every byte as it reads that,
// so this is a defect), Load says which file and line, every time.
func TestALazyObjectThatDoesNotDecodeSaysWhere(t *testing.T) {
	ms, err := decodeObjects([]byte(`[[3,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}]]`), "cm.yaml", true)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%v, %v", renderSummary(ms), err)
	}
	m := ms[0]
	m.lazy.data = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v","k":"w"}}`)
	for range 2 {
		obj, err := m.Load()
		if obj != nil || err == nil || !strings.Contains(err.Error(), "cm.yaml line 3") || !strings.Contains(err.Error(), "does not decode") {
			t.Errorf("Load = %v, %v; want an error naming cm.yaml line 3", obj, err)
		}
	}
	if id := m.Ident(); id.Name != "c" || id.Kind != "ConfigMap" {
		t.Errorf("a failed Load changed what names the object: %+v", id)
	}
}
