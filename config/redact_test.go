package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedactRulesAreBareExpressionsOrScopedToAKind(t *testing.T) {
	cfg, err := Parse([]byte(`apiVersion: driftscan.dev/v1alpha1
kind: ScanConfig
redact:
- '\.data\.token'
- {group: example.com, kind: Database, path: '^\.spec\.password'}
sensitiveEnvNames: ['(?i)^(PASS|PIN)']
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []RedactRule{{Path: `\.data\.token`}, {Group: "example.com", Kind: "Database", Path: `^\.spec\.password`}}
	if diff := cmp.Diff(want, cfg.Redact); diff != "" {
		t.Errorf("redact (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"(?i)^(PASS|PIN)"}, cfg.SensitiveEnvNames); diff != "" {
		t.Errorf("sensitiveEnvNames (-want +got):\n%s", diff)
	}
	for _, c := range []struct{ doc, want string }{
		{"redact: ['(']", "redact[0]: path \"(\""},
		{"redact: [{kind: Database}]", "redact[0]: path is required"},
		{"redact: [{group: example.com, path: x}]", "redact[0]: group example.com needs a kind"},
		{"redact: [{kind: Database, paths: x}]", "field paths not found"},
		{"sensitiveEnvNames: ['(']", "sensitiveEnvNames[0]"},
	} {
		_, err := Parse([]byte("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\n" + c.doc + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.doc, err, c.want)
		}
	}
}
