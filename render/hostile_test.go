package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/bounded"
)

// renderBytes renders one manifest file holding data.
func renderBytes(t testing.TB, name string, data []byte) ([]Manifest, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return Manifests(t.Context(), Options{Dir: dir})
}

func TestHostileManifestsAreRejectedWithinBounds(t *testing.T) {
	// A bomb that escaped the limits would take the machine down: the
	// cases run in a child with its own memory and time bound.
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	bomb := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i := 'b'; i <= 'k'; i++ {
		prev := string(i - 1)
		bomb += fmt.Sprintf("%c: &%c [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", i, i, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	deep := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n"
	var wide strings.Builder
	wide.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wide}\ndata:\n")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&wide, "  k%d: v\n", i)
	}
	cases := []struct {
		name, file string
		data       []byte
		wantErr    string // "" means it renders
	}{
		{"a YAML bomb of aliases", "bomb.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n" + bomb), "bomb.yaml"},
		{"a file over the size limit", "huge.yaml", []byte("# " + strings.Repeat("x", MaxManifestBytes) + "\n"), "over the limit"},
		{"deeply nested lists", "deep.yaml", []byte(deep), "deep.yaml"},
		{"invalid UTF-8", "utf8.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \xff\xfe}\n"), "utf8.yaml"},
		{"an object with 10,000 fields", "wide.yaml", []byte(wide.String()), ""},
		{"a JSON key defined twice", "dup.json", []byte("{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",\n \"metadata\": {\"name\": \"a\"},\n \"data\": {\"k\": \"git\",\n  \"k\": \"injected\"}}\n"), `dup.json:4: key "k" is defined twice in one object`},
		{"invalid UTF-8 in JSON", "utf8.json", []byte("{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",\n \"metadata\": {\"name\": \"\xff\xfe\"}}\n"), "utf8.json:2: invalid UTF-8"},
		{"a YAML key defined twice, as before", "dup.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  k: git\n  k: injected\n"), "dup.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			ms, err := renderBytes(t, c.file, c.data)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %s", took)
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("error: %v", err)
			case c.wantErr == "" && len(ms) != 1:
				t.Fatalf("%d manifests, want 1", len(ms))
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one naming %q", err, c.wantErr)
			}
		})
	}
}

func FuzzRenderYAML(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n",
		"apiVersion: v1\nkind: ConfigMap\n",
		"key: [unclosed\n",
		"--- \n# only a comment\n---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := renderBytes(t, "f.yaml", data)
		for _, m := range ms {
			if m.Object.GetKind() == "" || m.Object.GetAPIVersion() == "" {
				t.Errorf("rendered an object without kind or apiVersion: %v", m.Object.Object)
			}
		}
		if err != nil && !strings.Contains(err.Error(), "f.yaml") {
			t.Errorf("error does not name the file: %v", err)
		}
	})
}
