package report

import (
	"fmt"
	"os"
	"regexp"
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
	// Cut in the middle: both ends of the value stay.
	if strings.Contains(cut, long) || !strings.Contains(cut, `{"imag…`) || !strings.Contains(cut, `:"TCP"}]}`) {
		t.Error("table does not cut the long value in the middle at MaxValueWidth with …")
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

func TestTableFitsTheTerminalAndKeepsEveryColumn(t *testing.T) {
	r := loadFixture(t)
	for _, width := range []int{80, 120, 200} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			opts := DefaultWriteOptions()
			opts.Width, opts.Color = width, true
			var b strings.Builder
			if err := Write(&b, FormatTable, r, opts); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			for _, l := range lines {
				if w := textWidth(l); w > width && strings.Contains(strings.TrimSpace(l), " ") {
					t.Errorf("line is %d columns wide on a %d-column terminal:\n%s", w, width, l)
				}
			}
			// Each finding keeps one row with its class, type, the end of its
			// path, manager and age; its values follow on the row or the next line.
			for _, app := range r.Apps {
				for _, o := range app.Objects {
					for _, f := range o.Findings {
						end := f.Path[len(f.Path)-min(len(f.Path), 12):]
						row := -1
						for i, l := range lines {
							plain := stripANSI(l)
							if strings.HasPrefix(strings.TrimSpace(plain), string(f.Class)+" ") && strings.Contains(plain, " "+string(f.Type)+" ") &&
								strings.Contains(plain, end) && strings.Contains(plain, f.Age(r.ScannedAt)) {
								row = i
								break
							}
						}
						if row < 0 {
							t.Errorf("no row for %s %s with class, type, path, age", o.Ref(), f.Path)
							continue
						}
						valueLine := stripANSI(lines[row]) + stripANSI(lines[min(row+1, len(lines)-1)])
						if !strings.Contains(valueLine, "→") {
							t.Errorf("%s %s: no git → live on its row or the line under it", o.Ref(), f.Path)
						}
						if m := f.manager(); m != "" && !strings.Contains(stripANSI(lines[row]), m[len(m)-min(len(m), 5):]) {
							t.Errorf("%s %s: its row %q does not name the manager (%s)", o.Ref(), f.Path, lines[row], m)
						}
						// The person the audit log names: on the row, or on the
						// lines under it, whole.
						if p := f.Attribution.Who(); p != "" {
							next := strings.Join(lines[row:min(row+5, len(lines))], " ")
							if !strings.Contains(strings.Join(strings.Fields(stripANSI(next)), " "), p) {
								t.Errorf("%s %s: %q is not on its row or the lines under it", o.Ref(), f.Path, p)
							}
						}
					}
				}
			}
		})
	}
}

func TestTableWideIgnoresTheWidth(t *testing.T) {
	opts := DefaultWriteOptions()
	opts.Width, opts.Wide = 80, true
	wide := render(t, FormatTable, opts)
	opts.Width = 0
	if unlimited := render(t, FormatTable, opts); string(wide) != string(unlimited) {
		t.Error("--wide output depends on the terminal's width")
	}
}

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

func stripANSI(s string) string { return ansiEscape.ReplaceAllString(s, "") }

// An app whose reconciler applies nothing now (a sync window, a failed
// sync) says so under its name in the table and in Markdown: its findings'
// hints depend on it, and a self-heal that does not run is news to on-call.
func TestTableAndMarkdownSayWhenSyncIsBlocked(t *testing.T) {
	r := loadFixture(t)
	const why = "the last sync of Application/argocd/web to abc failed (Failed: boom)"
	for i := range r.Apps {
		if !r.Apps[i].Quiet() {
			r.Apps[i].GitOps = &GitOps{Tool: "argocd", Object: "Application/argocd/web", SelfHeal: true, SyncBlocked: why}
			break
		}
	}
	for format, want := range map[Format]string{FormatTable: "sync blocked: " + why, FormatMarkdown: "**Sync blocked:** " + mdText(why)} {
		var b strings.Builder
		if err := Write(&b, format, r, DefaultWriteOptions()); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s output does not say %q:\n%s", format, want, b.String())
		}
	}
}
