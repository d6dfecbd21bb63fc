package report

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestColorForSeesNoTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if ColorFor(w) {
		t.Error("ColorFor(pipe) = true, want no colour when not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ColorFor(f) {
		t.Error("ColorFor(file) = true, want no colour when not a terminal")
	}
	if ColorFor(nil) {
		t.Error("ColorFor(nil) = true")
	}
}

func TestColorForRules(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	tests := []struct {
		name     string
		terminal bool
		env      func(string) (string, bool)
		want     bool
	}{
		{"a terminal without NO_COLOR gets colour", true, env("TERM", "xterm-256color"), true},
		{"not a terminal gets none", false, env(), false},
		{"NO_COLOR set gets none", true, env("NO_COLOR", "1"), false},
		{"NO_COLOR empty is as if unset (no-color.org)", true, env("NO_COLOR", ""), true},
		{"a dumb terminal gets none", true, env("TERM", "dumb"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := colorFor(tt.terminal, tt.env); got != tt.want {
				t.Errorf("colorFor = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTableHasNoEscapeCodesWithoutColor(t *testing.T) {
	if out := render(t, FormatTable, DefaultWriteOptions()); strings.Contains(string(out), "\x1b[") {
		t.Error("table without Color contains ANSI escape codes")
	}
	if out := render(t, FormatTable, WriteOptions{Color: true}); !strings.Contains(string(out), ansiBoldRed+"human"+ansiReset) {
		t.Error("table with Color does not colour the human class")
	}
}

func TestTableCutsLongValuesUnlessWide(t *testing.T) {
	long := `{"image":"docker.io/istio/proxyv2:1.24.0","name":"istio-proxy"`
	cut := string(render(t, FormatTable, WriteOptions{MaxValueWidth: 20}))
	if strings.Contains(cut, long) || !strings.Contains(cut, `{"image":"docker.io…`) {
		t.Error("table does not cut the long value at MaxValueWidth with …")
	}
	if wide := string(render(t, FormatTable, WriteOptions{MaxValueWidth: 20, Wide: true})); !strings.Contains(wide, long) {
		t.Error("table --wide cuts the long value")
	}
}

func TestTableMeasuresAgeFromNow(t *testing.T) {
	r := loadFixture(t)
	opts := DefaultWriteOptions()
	opts.Now = r.ScannedAt.Add(48 * time.Hour)
	var b strings.Builder
	if err := Write(&b, FormatTable, r, opts); err != nil {
		t.Fatal(err)
	}
	// The image was set 3h before the scan: 51h before Now.
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "kubectl-set") && !strings.HasSuffix(line, " 2d3h") {
			t.Errorf("image row = %q, want its age measured from opts.Now (2d3h)", line)
		}
	}
}

func TestTableOfAQuietScanIsShort(t *testing.T) {
	r := New(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), "prod")
	r.Apps = []App{{Name: "web", Objects: []Object{{Kind: "ConfigMap", Namespace: "web", Name: "a"}, {Kind: "ConfigMap", Namespace: "web", Name: "b"}}}}
	r.Finalize()
	var b strings.Builder
	if err := Write(&b, FormatTable, r, DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	want := "CLUSTER prod  scanned 2026-07-01 12:00:00 UTC\n\nscan: 1 app (1 in sync), 2 objects, 0 drifted, 0 findings\n"
	if b.String() != want {
		t.Errorf("table of an in-sync scan =\n%s\nwant\n%s", b.String(), want)
	}
}
