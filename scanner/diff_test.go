package scanner

import (
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
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
		if got := pruneEmptyAgainst(git, live); !reflect.DeepEqual(want, got) {
			t.Errorf("%s: pruneEmptyAgainst(%s, %s) = %v, want %s", c.name, c.git, c.live, got, c.want)
		}
	}
}
