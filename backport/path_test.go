package backport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// serialized writes p as a finding's pathElements, the way the scanner does.
func serialized(t *testing.T, p fieldpath.Path) []string {
	t.Helper()
	var out []string
	for _, pe := range p {
		s, err := fieldpath.SerializePathElement(pe)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestPathOfReadsWhatTheReportWrites(t *testing.T) {
	str := func(s string) value.Value { return value.NewValueInterface(s) }
	cases := []struct {
		name string
		path fieldpath.Path
		want Path
	}{
		{"fields", fieldpath.MakePathOrDie("spec", "replicas"), Path{{Field: "spec"}, {Field: "replicas"}}},
		{"a map key with dots, a slash and a tilde is one field", fieldpath.MakePathOrDie("metadata", "annotations", "a.b/c~d"), Path{{Field: "metadata"}, {Field: "annotations"}, {Field: "a.b/c~d"}}},
		{"a container by name", fieldpath.MakePathOrDie("spec", "containers", fieldpath.KeyByFields("name", "app"), "image"),
			Path{{Field: "spec"}, {Field: "containers"}, {Key: []KeyField{{"name", "app"}}}, {Field: "image"}}},
		{"a port by number and protocol: the number is an int64", fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80, "protocol", "TCP")),
			Path{{Field: "spec"}, {Field: "ports"}, {Key: []KeyField{{"port", int64(80)}, {"protocol", "TCP"}}}}},
		{"a set item", fieldpath.MakePathOrDie("metadata", "finalizers", str("example.com/a,b]")), Path{{Field: "metadata"}, {Field: "finalizers"}, {Value: "example.com/a,b]", HasValue: true}}},
		{"an atomic list's item by index", fieldpath.MakePathOrDie("spec", "args", 3), Path{{Field: "spec"}, {Field: "args"}, {Index: 3, IsIndex: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := PathOf(serialized(t, c.path))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.String() != c.path.String() {
				t.Errorf("reads back as %s, want %s", got, c.path)
			}
		})
	}
}

func TestPathOfRefusesWhatIsNoPath(t *testing.T) {
	for _, elems := range [][]string{nil, {"spec"}, {"f:spec", "x:y"}, {"f:spec", `k:{"name":`}, {"i:one"}} {
		if p, err := PathOf(elems); err == nil {
			t.Errorf("%q read as %v", elems, p)
		}
	}
}

func TestAsLeafKeepsTheChartsTypes(t *testing.T) {
	cases := []struct {
		name      string
		live, old any
		want      any
	}{
		{"a string value stays a string", int64(5), "3", "5"},
		{"a number value stays a number", "1.26", 1.25, 1.26},
		{"a whole number is an int", "8", int64(3), int64(8)},
		{"a bool value stays a bool", "true", false, true},
		{"text that is no number stays text", "latest", 1.25, "latest"},
		{"a number that would print otherwise stays as it was", "1.10", 1.25, "1.10"},
		{"an empty value takes the live value as it is", int64(5), nil, int64(5)},
		{"a structure is never converted", map[string]any{"a": "b"}, "x", map[string]any{"a": "b"}},
	}
	for _, c := range cases {
		if got := asLeaf(c.live, c.old); !cmp.Equal(c.want, got) {
			t.Errorf("%s: got %#v, want %#v", c.name, got, c.want)
		}
	}
}
