package scanner

import (
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// sameSeeds are pairs of objects as a page and a manifest decode them: one
// value, and values that differ in one place a typed compare would see.
var sameSeeds = [][2]string{
	{`{"a":1,"b":[1,2,{"c":"d"}],"e":null,"f":true}`, `{"f":true,"e":null,"b":[1,2,{"c":"d"}],"a":1}`},
	{`{"data":{"k":"v"}}`, `{"data":{"k":"v","extra":"x"}}`},
	{`{"n":1}`, `{"n":1.0}`},
	{`{"n":1}`, `{"n":1.5}`},
	{`{"n":1.5}`, `{"n":1.5}`},
	{`{"l":[1,2]}`, `{"l":[2,1]}`},
	{`{"l":[]}`, `{"l":{}}`},
	{`{"m":{}}`, `{"m":null}`},
	{`{"s":"1"}`, `{"s":1}`},
	{`{"b":false}`, `{"b":"false"}`},
	{`{"a":{"b":{"c":[{"d":[null]}]}}}`, `{"a":{"b":{"c":[{"d":[false]}]}}}`},
}

// sameValue is reflect.DeepEqual for decoded values: the compare it spares
// is only spared where the two sides are one value.
func TestSameValueIsDeepEqualForDecodedValues(t *testing.T) {
	for _, p := range sameSeeds {
		if !checkSameValue(t, p[0], p[1]) {
			t.Fatalf("seed %q or %q is not JSON", p[0], p[1])
		}
		checkSameValue(t, p[0], p[0])
	}
}

// checkSameValue holds sameValue to reflect.DeepEqual for x and y both
// ways; false when either is not JSON.
func checkSameValue(t *testing.T, x, y string) bool {
	t.Helper()
	var a, b any
	if utiljson.Unmarshal([]byte(x), &a) != nil || utiljson.Unmarshal([]byte(y), &b) != nil {
		return false
	}
	for _, pair := range [][2]any{{a, b}, {b, a}} {
		if got, want := sameValue(pair[0], pair[1]), reflect.DeepEqual(pair[0], pair[1]); got != want {
			t.Fatalf("sameValue(%v, %v) = %v, reflect.DeepEqual says %v", pair[0], pair[1], got, want)
		}
	}
	return true
}

func FuzzSameValue(f *testing.F) {
	for _, p := range sameSeeds {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		if len(x) > 1<<12 || len(y) > 1<<12 {
			return
		}
		checkSameValue(t, x, y)
	})
}

// TestPruneEmptyAgainstKeepsAnEmptyMapLiveFilledIn: an empty map Git
// declares stays where live's counterpart has members (in list items
// matched by a distinct name too), and goes where live has none, as
// PruneEmpty would prune it.
func TestPruneEmptyAgainstKeepsAnEmptyMapLiveFilledIn(t *testing.T) {
	for _, c := range []struct{ name, git, live, want string }{
		{"filled in", `{"strategy":{}}`, `{"strategy":{"type":"RollingUpdate"}}`, `{"strategy":{}}`},
		{"empty live", `{"strategy":{},"a":null,"l":[]}`, `{"strategy":{}}`, `{}`},
		{"absent live", `{"strategy":{"x":{}}}`, `{}`, `{}`},
		{"nested", `{"s":{"t":{},"u":{}}}`, `{"s":{"t":{"k":1}}}`, `{"s":{"t":{}}}`},
		{"items by name", `{"c":[{"name":"a","sc":{}},{"name":"b","sc":{}}]}`, `{"c":[{"name":"b","sc":{"x":true}},{"name":"a"}]}`, `{"c":[{"name":"a"},{"name":"b","sc":{}}]}`},
		{"names repeat", `{"c":[{"name":"a","sc":{}}]}`, `{"c":[{"name":"a","sc":{"x":1}},{"name":"a"}]}`, `{"c":[{"name":"a"}]}`},
		{"unnamed items", `{"c":[{"sc":{}}]}`, `{"c":[{"sc":{"x":1}}]}`, `{"c":[{}]}`},
		{"a list, not a map", `{"m":{}}`, `{"m":[1]}`, `{}`},
	} {
		var git, live, want map[string]any
		for _, p := range []struct {
			s string
			v *map[string]any
		}{{c.git, &git}, {c.live, &live}, {c.want, &want}} {
			if err := utiljson.Unmarshal([]byte(p.s), p.v); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := pruneEmptyAgainst(git, live); !reflect.DeepEqual(want, got) {
			t.Errorf("%s: pruneEmptyAgainst(%s, %s) = %v, want %s", c.name, c.git, c.live, got, c.want)
		}
	}
}

// TestNullsAreRememberedWherePruned: a null Git's object holds (a chart's
// unset value) is pruned before the compare, and the place it was is kept
// for the change there, through maps and keyed list items, by both
// prunings.
func TestNullsAreRememberedWherePruned(t *testing.T) {
	const git = `{"spec":{"replicas":null,"strategy":{"rollingUpdate":null},"template":{"spec":{"containers":[` +
		`{"name":"sidecar","image":"envoy"},{"name":"app","image":"web","resources":null,"ports":[{"containerPort":80,"hostPort":null}]}]}}}}`
	container := func(name string, rest ...any) fieldpath.Path {
		return fieldpath.MakePathOrDie(append([]any{"spec", "template", "spec", "containers", fieldpath.KeyByFields("name", name)}, rest...)...)
	}
	for _, c := range []struct {
		path fieldpath.Path
		want bool
	}{
		{fieldpath.MakePathOrDie("spec", "replicas"), true},
		{fieldpath.MakePathOrDie("spec", "strategy", "rollingUpdate", "maxSurge"), true},
		{fieldpath.MakePathOrDie("spec", "strategy", "type"), false},
		{fieldpath.MakePathOrDie("spec", "minReadySeconds"), false},
		{container("app", "resources", "limits"), true},
		{container("app", "image"), false},
		{container("sidecar", "resources"), false},
		{container("app", "ports", 0, "hostPort"), true},
		{container("app", "ports", 0, "protocol"), false},
		{container("other", "resources"), false},
	} {
		for _, flux := range []bool{false, true} {
			var obj map[string]any
			if err := utiljson.Unmarshal([]byte(git), &obj); err != nil {
				t.Fatal(err)
			}
			var nulls map[string]any
			if flux {
				_, n := pruneNulls(obj)
				nulls, _ = n.(map[string]any)
			} else {
				_, nulls = pruneEmptyAgainst(obj, nil)
			}
			if got := underNull(nulls, c.path); got != c.want {
				t.Errorf("flux %v: underNull(%s) = %v, want %v", flux, c.path, got, c.want)
			}
			if _, ok := lookup(obj, fieldpath.MakePathOrDie("spec", "replicas")); ok {
				t.Errorf("flux %v: the null was not pruned", flux)
			}
		}
	}
	var plain map[string]any
	_ = utiljson.Unmarshal([]byte(`{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"app"}]}}}}`), &plain)
	if _, nulls := pruneEmptyAgainst(plain, nil); nulls != nil {
		t.Errorf("an object without nulls has marks: %v", nulls)
	}
}
