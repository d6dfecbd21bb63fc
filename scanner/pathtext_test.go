package scanner

import (
	"math"
	"math/rand/v2"
	"testing"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// pathText must name every path as smd's Path.String does: the paths are
// what findings, dismissals and the rules' path patterns read.
func TestPathTextIsSMDsString(t *testing.T) {
	str := func(s string) *string { return &s }
	idx := func(i int) *int { return &i }
	val := func(v any) *value.Value { x := value.NewValueInterface(v); return &x }
	key := func(kv ...any) *value.FieldList {
		var l value.FieldList
		for i := 0; i < len(kv); i += 2 {
			l = append(l, value.Field{Name: kv[i].(string), Value: value.NewValueInterface(kv[i+1])})
		}
		return &l
	}
	paths := []fieldpath.Path{
		nil,
		{{FieldName: str("spec")}, {FieldName: str("template")}, {FieldName: str("spec")}, {FieldName: str("dnsPolicy")}},
		{{FieldName: str("spec")}, {FieldName: str("containers")}, {Key: key("name", "app")}, {FieldName: str("imagePullPolicy")}},
		{{FieldName: str("spec")}, {FieldName: str("ports")}, {Key: key("port", int64(80), "protocol", "TCP")}, {FieldName: str("targetPort")}},
		{{FieldName: str("metadata")}, {FieldName: str("annotations")}, {FieldName: str("example.com/a \"quoted\" key")}},
		{{FieldName: str("x")}, {Key: key("name", "tab\there \"q\" \\ é \u2028 \x01 \xff")}},
		{{FieldName: str("x")}, {Key: key("on", true, "ratio", 0.5, "big", 1e21, "none", nil)}},
		{{FieldName: str("x")}, {Key: key("l", []any{"a", int64(1)}, "m", map[string]any{"k": "v"})}},
		{{FieldName: str("finalizers")}, {Value: val("kubernetes.io/pvc-protection")}},
		{{FieldName: str("args")}, {Value: val(int64(-3))}},
		{{FieldName: str("items")}, {Index: idx(0)}, {Index: idx(12)}},
		{{FieldName: str("")}, {Key: &value.FieldList{}}},
		{{}},
		{{Value: val("v"), Index: idx(1)}},
		{{Key: key("k", int64(-9223372036854775808)), Index: idx(2)}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	scalars := []any{"", "a", "ü\"\\\n", int64(0), int64(-1), int64(1 << 40), true, false, 1.25, math.Copysign(0, -1), nil}
	for range 500 {
		var p fieldpath.Path
		for range r.IntN(6) {
			switch r.IntN(4) {
			case 0:
				p = append(p, fieldpath.PathElement{FieldName: str(string(rune('a' + r.IntN(26))))})
			case 1:
				var kv []any
				for j := range 1 + r.IntN(3) {
					kv = append(kv, string(rune('k'+j)), scalars[r.IntN(len(scalars))])
				}
				p = append(p, fieldpath.PathElement{Key: key(kv...)})
			case 2:
				p = append(p, fieldpath.PathElement{Value: val(scalars[r.IntN(len(scalars))])})
			default:
				p = append(p, fieldpath.PathElement{Index: idx(r.IntN(1000))})
			}
		}
		paths = append(paths, p)
	}
	for _, p := range paths {
		if got, want := pathText(p), p.String(); got != want {
			t.Errorf("pathText = %q, smd's String = %q", got, want)
		}
	}
}
