package render

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// TestYAMLValuesAreWhatTheJSONRoundTripGives: converting a YAML document in
// place gives exactly the values the JSON round trip gives (what the scan
// compared before), for the values that are tricky in JSON and for every
// YAML document of the repository's fixtures.
func TestYAMLValuesAreWhatTheJSONRoundTripGives(t *testing.T) {
	docs := map[string]string{
		"integers":                  "a: 1\nb: -7\nc: 0x1F\nd: 9223372036854775807\n",
		"an integer past int64":     "a: 18446744073709551615\n",
		"floats":                    "a: 1.0\nb: 1.5\nc: -0.0\nd: 1e20\ne: 1e21\nf: 0.000001\ng: 1e-7\nh: 12345678901234567890.0\n",
		"not a number":              "a: .nan\nb: .inf\n",
		"a timestamp":               "a: 2001-12-14T21:59:43.10-05:00\nb: !!timestamp 2001-12-14\n",
		"booleans and nulls":        "a: true\nb: ~\nc: null\nd: []\ne: {}\n",
		"keys that are not strings": "1: one\ntrue: yes\n2.5: half\n",
		"keys that collide":         "1: int\n\"1\": string\n",
		"text that is not UTF-8":    "a: !!binary gIGC\n",
		"nested":                    "spec:\n  containers:\n  - name: app\n    ports: [{containerPort: 80}]\n    resources: {limits: {cpu: 0.5, memory: 512Mi}}\n",
		"a quoted number":           "a: \"1\"\nb: '1.0'\n",
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) { sameAsRoundTrip(t, []byte(doc)) })
	}
	eachFixtureYAML(t, func(t *testing.T, data []byte) { sameAsRoundTrip(t, data) })
}

// eachFixtureYAML runs check on every YAML file of the repository's
// fixtures and of testdata, each as a subtest named by its path, and fails
// when there are fewer than the repository holds (50).
func eachFixtureYAML(t *testing.T, check func(t *testing.T, data []byte)) {
	t.Helper()
	n := 0
	for _, root := range []string{"../fixtures", "testdata"} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n++
			t.Run(path, func(t *testing.T) { check(t, data) })
			return nil
		})
	}
	if n < 50 {
		t.Errorf("compared %d fixture files, want the repository's (at least 50)", n)
	}
}

// sameAsRoundTrip compares YAMLNodeValue with the JSON round trip on
// every document of data that both can read.
func sameAsRoundTrip(t *testing.T, data []byte) {
	t.Helper()
	for _, c := range SplitYAMLDocuments(data) {
		var n yaml.Node
		if err := yaml.Unmarshal(c.Data, &n); err != nil || len(n.Content) == 0 {
			continue // not YAML (a template): the renderers' business
		}
		got, gotErr := YAMLNodeValue(n.Content[0])
		var v any
		if err := n.Content[0].Decode(&v); err != nil {
			continue
		}
		want, wantErr := jsonRoundTrip(v)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("line %d: error %v, the round trip's %v", c.Line, gotErr, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("line %d: (-round trip +in place):\n%s", c.Line, diff)
		}
	}
}
