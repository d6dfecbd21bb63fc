package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"reflect"
	"testing"
	"time"

	sigsyaml "sigs.k8s.io/yaml"
)

// FuzzWriteFinding renders a report holding one arbitrary finding in every
// format: no crash, and the machine formats stay well-formed.
func FuzzWriteFinding(f *testing.F) {
	f.Add(`.spec.template.spec.containers[name="app"].image`, "nginx:1.25", "nginx:1.26", "kubectl-set", "hint")
	f.Add(".data.x", "<script>|`*", "]]>\x00\xff", "", "")
	f.Add("on", "<<", "12:30", "- y", "key: value # comment\n  indented\n")
	f.Fuzz(func(t *testing.T, path, git, live, manager, hint string) {
		r := New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "c")
		r.Apps = []App{{Name: "a", Objects: []Object{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "n", Name: "o", File: "f.yaml", Line: 1,
			Findings: []Finding{{Path: path, Type: TypeChanged, Class: ClassHuman, Manager: manager, Git: git, Live: live, Hint: hint}}}}}}
		r.Finalize()
		narrow := DefaultWriteOptions()
		narrow.Width = 40
		if err := Write(&bytes.Buffer{}, FormatTable, r, narrow); err != nil {
			t.Fatalf("table at 40 columns: %v", err)
		}
		for _, format := range Formats {
			var buf bytes.Buffer
			if err := Write(&buf, format, r, DefaultWriteOptions()); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			switch format {
			case FormatJSON, FormatSARIF:
				if !json.Valid(buf.Bytes()) {
					t.Errorf("%s output is not valid JSON", format)
				}
			case FormatYAML:
				// Read as kubectl reads YAML, it is the JSON report.
				js, err := sigsyaml.YAMLToJSON(buf.Bytes())
				var got, want any
				if err == nil {
					err = json.Unmarshal(js, &got)
				}
				if err != nil {
					t.Fatalf("yaml output does not read back: %v\n%s", err, buf.Bytes())
				}
				var jsonOut bytes.Buffer
				if err := Write(&jsonOut, FormatJSON, r, DefaultWriteOptions()); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(jsonOut.Bytes(), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("yaml output reads back as another report:\n%s", buf.Bytes())
				}
			case FormatHTML:
				if err := checkHTML(buf.Bytes()); err != nil {
					t.Errorf("html output: %v", err)
				}
			case FormatJUnit:
				var v any
				if err := xml.Unmarshal(buf.Bytes(), &v); err != nil {
					t.Errorf("junit output does not parse: %v", err)
				}
			}
		}
	})
}
