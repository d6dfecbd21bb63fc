package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// yamlCorners is a report whose values are the strings a plain YAML scalar
// would turn into another type, for YAML 1.1 readers (kubectl, Helm and
// Argo CD read YAML through sigs.k8s.io/yaml) or 1.2 ones, next to the
// typed values they look like.
func yamlCorners() *Report {
	r := New(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC), "prod: eu # west")
	live := map[string]any{
		"port": "80", "portNumber": 80.0, "bool": "true", "yes": "yes", "on": "on", "off": "Off",
		"y": "y", "null": "null", "tilde": "~", "empty": "", "hex": "0x1F", "octal": "0o17",
		"old-octal": "017", "exp": "1e3", "base60": "12:30", "base60f": "-1:20.5", "merge": "<<", "value": "=",
		"under": "1_000", "binary": "0b101", "plus": "+12", "dot": ".5", "sign": "-.inf", "False": "FALSE", "NO": "NO", "inf": ".inf", "nan": ".NaN", "time": "12:30:00",
		"date": "2026-12-05", "colon": "a: b", "hash": "# not a comment", "dash": "- item",
		"star": "*anchor", "amp": "&anchor", "bang": "!tag", "quote": `"`, "lead": " space",
		"multi": "server:\n  port: 8080\n", "tab": "a\tb", "unicode": "é\u2028", "html": "<a&b>", "cr": "a\r\nb", "nel": "a\u0085b", "del": "\x7f", "c1": "\u0090", "bom": "\ufeffx", "emoji": "\U0001F600", "trail": "x\n\n", "lead-multi": "  a\nb",
		"list": []any{"1", 1.0, false, nil, map[string]any{}, "on", "<<"}, "float": 1.5, "<<": "merge?", "On": "key",
	}
	r.Apps = []App{{Name: "corners", Objects: []Object{{
		APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "flags", Status: StatusDrifted,
		Findings: []Finding{{
			Path: ".data", Pointer: "/data", PathElements: []string{"f:data"}, Type: TypeChanged, Class: ClassHuman,
			Manager: "kubectl-edit", Git: `""`, Live: "{}", GitValue: "", LiveValue: live,
		}},
	}}}}
	r.Finalize()
	return r
}

// TestYAMLIsTheJSONReport: -o yaml read back, by sigs.k8s.io/yaml (YAML
// 1.1, as kubectl reads it) and by yaml.v3 (1.2), is the JSON report value
// for value, every string a string and every number a number; and its keys
// come in the JSON report's order.
func TestYAMLIsTheJSONReport(t *testing.T) {
	for name, r := range map[string]*Report{"fixture": loadFixture(t), "corners": yamlCorners()} {
		t.Run(name, func(t *testing.T) {
			js, ym := mustWrite(t, FormatJSON, r), mustWrite(t, FormatYAML, r)
			var want any
			if err := json.Unmarshal(js, &want); err != nil {
				t.Fatal(err)
			}
			viaSigs, err := sigsyaml.YAMLToJSON(ym)
			if err != nil {
				t.Fatalf("sigs.k8s.io/yaml cannot read the YAML report: %v\n%s", err, ym)
			}
			var got any
			if err := json.Unmarshal(viaSigs, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("YAML read by sigs.k8s.io/yaml is not the JSON report (-json +yaml):\n%s\n%s", diff, ym)
			}
			var v3 any
			if err := yaml.Unmarshal(ym, &v3); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, floats(v3)); diff != "" {
				t.Errorf("YAML read by yaml.v3 is not the JSON report (-json +yaml):\n%s", diff)
			}
			if j, y := topKeys(t, yamlSafe(js)), topKeys(t, ym); !cmp.Equal(j, y) {
				t.Errorf("keys in another order: JSON %v, YAML %v", j, y)
			}
			if !bytes.HasSuffix(ym, []byte("\n")) {
				t.Errorf("the YAML does not end in a newline:\n%s", ym)
			}
		})
	}
	out := string(mustWrite(t, FormatYAML, yamlCorners()))
	if !strings.Contains(out, "multi: |\n") {
		t.Errorf("a multi-line value is not a literal block:\n%s", out)
	}
}

// floats gives the whole numbers yaml.v3 decodes (int) the type
// encoding/json gives them, in place.
func floats(v any) any {
	switch t := v.(type) {
	case int:
		return float64(t)
	case map[string]any:
		for k, c := range t {
			t[k] = floats(c)
		}
	case []any:
		for i, c := range t {
			t[i] = floats(c)
		}
	}
	return v
}

// topKeys lists the top-level keys of a JSON or YAML mapping in order.
func topKeys(t *testing.T, doc []byte) []string {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < len(n.Content[0].Content); i += 2 {
		keys = append(keys, n.Content[0].Content[i].Value)
	}
	return keys
}
