package render

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// TestPlainValuesAreWhatYAMLDecodes: reading a node tree straight into JSON
// values gives exactly what decoding it with yaml.v3 gives, for the
// documents that are tricky in YAML and for every YAML document of the
// repository's fixtures; and the fixtures' manifests are read that way.
func TestPlainValuesAreWhatYAMLDecodes(t *testing.T) {
	docs := map[string]string{
		"integers":                   "a: 1\nb: -7\nc: 0x1F\nd: 9223372036854775807\ne: 0o17\nf: 017\ng: 1_000\nh: +3\ni: -0b101\nj: 0b11\n",
		"an integer past int64":      "a: 18446744073709551615\nb: -9223372036854775809\n",
		"floats":                     "a: 1.0\nb: 1.5\nc: -0.0\nd: 1e20\ne: 1e21\nf: 0.000001\ng: 1e-7\nh: 12345678901234567890.0\ni: .5\nj: +.5\nk: 1_0.5\nl: 1e400\nm: 0x1p4\n",
		"not a number":               "a: .nan\nb: .inf\nc: -.Inf\nd: nan\ne: infinity\n",
		"timestamps":                 "a: 2001-12-14T21:59:43.10-05:00\nb: !!timestamp 2001-12-14\nc: 2001-12-14\nd: \"2001-12-14\"\n",
		"booleans and nulls":         "a: true\nb: ~\nc: null\nd: []\ne: {}\nf: False\ng: yes\nh: on\ni: NULL\nj:\n",
		"keys that are not strings":  "1: one\ntrue: yes\n2.5: half\n~: nothing\n",
		"keys that collide":          "1: int\n\"1\": string\n",
		"a key twice":                "a: 1\nb: 2\na: 3\n",
		"a quoted key twice":         "a: 1\n'a': 3\n",
		"text that is not UTF-8":     "a: !!binary gIGC\n",
		"binary":                     "a: !!binary aGVsbG8=\nb: !!binary \"!!\"\n",
		"explicit tags":              "a: !!str 123\nb: !!int \"12\"\nc: !!float 3\nd: !!float \"017\"\ne: !!int 1.5\nf: !!bool yes\ng: !!null x\nh: !!null ''\ni: !!str\nj: !custom 5\nk: !!map {x: 1}\nl: !!seq [1]\nm: ! 12\nn: !!float .5_0\no: !!float 0x10\np: !!int abc\n",
		"long tags":                  "a: !<tag:yaml.org,2002:str> 1\nb: !<tag:yaml.org,2002:int> 2\n",
		"anchors and aliases":        "a: &x {k: v}\nb: *x\nc: &y 1\nd: [*y, *y]\n",
		"merge keys":                 "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n",
		"a quoted merge key":         "m: {\"<<\": 1}\n",
		"a merge value":              "m: <<\n",
		"a mapping as a key":         "? {a: 1}\n: v\n",
		"nested":                     "spec:\n  containers:\n  - name: app\n    ports: [{containerPort: 80}]\n    resources: {limits: {cpu: 0.5, memory: 512Mi}}\n",
		"a quoted number":            "a: \"1\"\nb: '1.0'\nc: |\n  text\nd: >-\n  folded\n",
		"a scalar document":          "just text\n",
		"a sequence document":        "- 1\n- [a, {b: ~}]\n- []\n",
		"escapes":                    "a: \"\\x80\\u00e9\\t\\0\"\nb: \"\\uD800\"\n",
		"a null in a list and a map": "a: [~, null, ]\nb: {c: }\n",
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) { plainSameAsDecoded(t, []byte(doc)) })
	}
	var plain, all int
	eachFixtureYAML(t, func(t *testing.T, data []byte) {
		p, a := plainSameAsDecoded(t, data)
		plain, all = plain+p, all+a
	})
	// The fixtures are ordinary manifests: nearly all of them should take
	// the direct path, or it saves nothing.
	if plain < all*9/10 {
		t.Errorf("%d of %d fixture documents read directly, want at least 90%%", plain, all)
	}
}

// TestPlainScalarsAreWhatYAMLDecodes compares the two on scalar nodes built
// by hand, as backport builds them, with tags and values the parser would
// never put together.
func TestPlainScalarsAreWhatYAMLDecodes(t *testing.T) {
	values := []string{"", "~", "null", "Null", "true", "TRUE", "yes", "0", "017", "0_17", "0x1F", "0o17", "0b101", "-0b101",
		"1_000", "1.5", ".5", ".5_0", "+.5", "-.inf", ".nan", "1e5", "1e5_0", "1e400", "0x1p4", "0x10", "Inf", "nan",
		"9223372036854775807", "9223372036854775808", "18446744073709551615", "2001-12-14", "abc", "<<", "\xff"}
	tags := []string{"", "!", "!!str", "!!null", "!!bool", "!!int", "!!float", "!!timestamp", "!!binary", "!!merge", "!custom", "tag:yaml.org,2002:int"}
	for _, tag := range tags {
		for _, value := range values {
			for _, style := range []yaml.Style{0, yaml.DoubleQuotedStyle, yaml.TaggedStyle} {
				n := &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value, Style: style}
				want, wantErr := decodedValue(n)
				got, ok := plainValue(n)
				if !ok {
					continue
				}
				if wantErr != nil {
					t.Errorf("tag %q value %q style %d: read directly as %#v, yaml.v3 refuses it: %v", tag, value, style, got, wantErr)
					continue
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("tag %q value %q style %d: (-yaml.v3 +direct):\n%s", tag, value, style, diff)
				}
			}
		}
	}
}

// FuzzPlainValue: whatever the YAML, the direct read never disagrees with
// yaml.v3's decoder.
func FuzzPlainValue(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: \"1\", b: 2, c: 1.5, d: true, e: ~}\n",
		"a: [1, 0x10, 017, 1e3, .5, -.inf, 2001-12-14, !!binary aGk=]\n",
		"a: &x {b: 1}\nc: {<<: *x, d: 2}\n",
		"1: a\n\"1\": b\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { plainSameAsDecoded(t, data) })
}

// plainSameAsDecoded compares plainValue with decodedValue on every
// document of data that yaml.v3 parses, and counts the documents that
// plainValue read, of all it compared.
func plainSameAsDecoded(t *testing.T, data []byte) (plain, all int) {
	t.Helper()
	for _, c := range SplitYAMLDocuments(data) {
		var n yaml.Node
		if err := yaml.Unmarshal(c.Data, &n); err != nil || len(n.Content) == 0 {
			continue // not YAML (a template): the renderers' business
		}
		all++
		root := n.Content[0]
		got, ok := plainValue(root)
		if !ok {
			continue
		}
		plain++
		want, err := decodedValue(root)
		if err != nil {
			t.Errorf("line %d: read directly, yaml.v3 refuses it: %v", c.Line, err)
			continue
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(sameFloat)); diff != "" {
			t.Errorf("line %d: (-yaml.v3 +direct):\n%s", c.Line, diff)
		}
	}
	return plain, all
}

// sameFloat tells -0.0 from 0.0, as JSON would print them.
func sameFloat(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b)
}

// TestKeysThatAreOneJSONKeyAreAnError: a mapping whose keys differ in YAML
// but are one string in JSON ("0" and .0, 1.0 and "1") holds one of them as
// an object, and which one yaml.v3's map gave was chance: the same file
// rendered one value or the other from one run to the next. It is an
// error naming the file, the line and the keys, the same every time; the
// file's other objects and a mapping whose keys stay apart are read.
func TestKeysThatAreOneJSONKeyAreAnError(t *testing.T) {
	data := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\ndata: {\"1\": a, \"2\": b}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: clash}\nextra: {\"0\": 1e3, .0: x}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: numbers}\nextra: {1.0: a, \"1\": b}\n")
	for range 20 { // map order differs from run to run
		ms, errs, _ := parseFile(nil, "cm.yaml", data, false)
		if len(ms) != 1 || ms[0].Object.GetName() != "ok" {
			t.Fatalf("rendered %v, want only the ConfigMap whose keys stay apart", renderSummary(ms))
		}
		if len(errs) != 2 {
			t.Fatalf("errors %v, want one for each mapping whose keys meet", errs)
		}
		for i, want := range []string{`cm.yaml:6: `, `cm.yaml:11: `} {
			if got := errs[i].Error(); !strings.HasPrefix(got, want) || !strings.Contains(got, "in JSON") {
				t.Errorf("error %q, want one at %s naming the keys that meet in JSON", got, want)
			}
		}
		if got, want := errs[0].Error(), `the keys "0" and 0 of one mapping are both "0" in JSON`; !strings.Contains(got, want) {
			t.Errorf("error %q, want it to say %q", got, want)
		}
	}
}
