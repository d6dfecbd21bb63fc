package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/google/go-cmp/cmp"
)

// fixturePath is the one report every format is tested on. It holds every
// class, type and object status, an app error, an ignored finding, an
// expired and an unused ignore rule, hints and a masked Secret.
const fixturePath = "testdata/report.json"

// secretPlaintext is what the fixture's Secret held before the scanner
// masked it. No output may ever contain it, plain or base64.
var secretPlaintext = []string{"s3cr3t-db-passw0rd", base64.StdEncoding.EncodeToString([]byte("s3cr3t-db-passw0rd"))}

func loadFixture(t *testing.T) *Report {
	t.Helper()
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decode %s: %v", fixturePath, err)
	}
	return &r
}

// render writes the fixture in format f with opts.
func render(t *testing.T, f Format, opts WriteOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, f, loadFixture(t), opts); err != nil {
		t.Fatalf("Write(%s): %v", f, err)
	}
	return buf.Bytes()
}

// goldenCases are every golden file and how it is rendered.
var goldenCases = []struct {
	golden string
	format Format
	opts   func() WriteOptions
}{
	{"report.table.golden", FormatTable, DefaultWriteOptions},
	{"report.table-color.golden", FormatTable, func() WriteOptions { o := DefaultWriteOptions(); o.Color = true; return o }},
	{"report.table-wide.golden", FormatTable, func() WriteOptions { o := DefaultWriteOptions(); o.Wide = true; return o }},
	{"report.table-80.golden", FormatTable, widthOptions(80, false)},
	{"report.table-120.golden", FormatTable, widthOptions(120, false)},
	{"report.table-200.golden", FormatTable, widthOptions(200, false)},
	{"report.table-80-color.golden", FormatTable, widthOptions(80, true)},
	{"report.diff.golden", FormatDiff, DefaultWriteOptions},
	{"report.json.golden", FormatJSON, DefaultWriteOptions},
	{"report.yaml.golden", FormatYAML, DefaultWriteOptions},
	{"report.markdown.golden", FormatMarkdown, DefaultWriteOptions},
	{"report.sarif.golden", FormatSARIF, DefaultWriteOptions},
	{"report.junit.golden", FormatJUnit, DefaultWriteOptions},
	{"report.html.golden", FormatHTML, DefaultWriteOptions},
}

// widthOptions are the options of a terminal width columns wide.
func widthOptions(width int, color bool) func() WriteOptions {
	return func() WriteOptions {
		o := DefaultWriteOptions()
		o.Width, o.Color = width, color
		return o
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.golden, func(t *testing.T) {
			golden.Check(t, tc.golden, render(t, tc.format, tc.opts()))
		})
	}
}

func TestFixtureIsAFinalizedReportThatCoversTheContract(t *testing.T) {
	r := loadFixture(t)
	again := loadFixture(t)
	again.Finalize()
	if diff := cmp.Diff(r, again); diff != "" {
		t.Errorf("fixture changes when finalized: order or summary is stale (-fixture +finalized):\n%s", diff)
	}

	classes, types, statuses := map[Class]bool{}, map[Type]bool{}, map[Status]bool{}
	var appError, ignored, hint, secret bool
	for _, app := range r.Apps {
		appError = appError || app.Error != ""
		for _, o := range app.Objects {
			statuses[o.Status] = true
			for _, f := range o.Findings {
				classes[f.Class], types[f.Type] = true, true
				ignored = ignored || (f.Ignored && f.IgnoreRule != nil)
				hint = hint || f.Hint != ""
				if o.Kind == "Secret" {
					secret = true
					for _, v := range []string{f.Git, f.Live} {
						if v != "" && !strings.HasPrefix(v, "***") {
							t.Errorf("Secret %s finding %s has an unmasked value %q", o.Ref(), f.Path, v)
						}
					}
					if !f.Masked || f.GitValue != nil || f.LiveValue != nil {
						t.Errorf("Secret %s finding %s: masked %v, typed values %v and %v; want masked and none", o.Ref(), f.Path, f.Masked, f.GitValue, f.LiveValue)
					}
				}
			}
		}
	}
	for _, c := range Classes {
		if !classes[c] {
			t.Errorf("fixture has no %s finding", c)
		}
	}
	for _, ty := range []Type{TypeChanged, TypeRemoved, TypeAdded} {
		if !types[ty] {
			t.Errorf("fixture has no %s finding", ty)
		}
	}
	for _, s := range []Status{StatusInSync, StatusDrifted, StatusMissing, StatusError, StatusExtra} {
		if !statuses[s] {
			t.Errorf("fixture has no %s object", s)
		}
	}
	debts := map[DebtKind]bool{}
	for _, d := range r.Debts {
		debts[d.Kind] = true
	}
	for what, ok := range map[string]bool{
		"an app error": appError, "an ignored finding with its rule": ignored, "a hint": hint, "a Secret": secret,
		"an expired-rule debt": debts[DebtExpired], "an unused-rule debt": debts[DebtUnused],
		"a scan-wide warning": hasWarning(r, ""), "an app's warning": hasWarning(r, "billing"),
	} {
		if !ok {
			t.Errorf("fixture has no %s", what)
		}
	}
}

func hasWarning(r *Report, app string) bool {
	for _, w := range r.Warnings {
		if w.App == app {
			return true
		}
	}
	return false
}

func TestNoOutputCarriesSecretPlaintext(t *testing.T) {
	for _, tc := range goldenCases {
		out := string(render(t, tc.format, tc.opts()))
		for _, s := range secretPlaintext {
			if strings.Contains(out, s) {
				t.Errorf("%s output contains the Secret's plaintext %q", tc.golden, s)
			}
		}
		if tc.format != FormatJSON && !strings.Contains(out, "*** (differs)") {
			t.Errorf("%s output does not show the Secret's masked live value", tc.golden)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		got, err := ParseFormat(strings.ToUpper(string(f)))
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", strings.ToUpper(string(f)), got, err, f)
		}
	}
	_, err := ParseFormat("xml")
	if err == nil || !strings.Contains(err.Error(), `"xml"`) || !strings.Contains(err.Error(), "table, diff, json, yaml, markdown, sarif, junit") {
		t.Errorf("ParseFormat(xml) error = %v; want one naming xml and listing the valid formats", err)
	}
}

func TestWriteRejectsAnUnknownFormat(t *testing.T) {
	err := Write(io.Discard, Format("toml"), loadFixture(t), DefaultWriteOptions())
	if err == nil || !strings.Contains(err.Error(), `"toml"`) {
		t.Errorf("Write(toml) error = %v; want one naming toml", err)
	}
}

func TestParseOutputs(t *testing.T) {
	tests := []struct {
		name    string
		specs   []string
		want    []Output
		wantErr []string // substrings of the error
	}{
		{name: "no flags gives no outputs", specs: nil, want: nil},
		{name: "a bare format goes to stdout", specs: []string{"table"}, want: []Output{{Format: FormatTable}}},
		{
			name:  "the issue's example: one to stdout, two to files",
			specs: []string{"table", "json=report.json", "sarif=drift.sarif"},
			want:  []Output{{Format: FormatTable}, {Format: FormatJSON, File: "report.json"}, {Format: FormatSARIF, File: "drift.sarif"}},
		},
		{name: "a dash means stdout", specs: []string{"junit=-"}, want: []Output{{Format: FormatJUnit}}},
		{name: "the same format may go to two files", specs: []string{"json=a.json", "json=b.json"}, want: []Output{{Format: FormatJSON, File: "a.json"}, {Format: FormatJSON, File: "b.json"}}},
		{name: "an unknown format is named with the valid ones", specs: []string{"xml=out.xml"}, wantErr: []string{`"xml"`, "valid: table, diff, json, yaml, markdown, sarif, junit"}},
		{name: "two outputs to stdout", specs: []string{"table", "json"}, wantErr: []string{"only one output can go to stdout", `"table"`}},
		{name: "a dash and a bare format both claim stdout", specs: []string{"json=-", "table"}, wantErr: []string{"only one output can go to stdout"}},
		{name: "an empty file name", specs: []string{"json="}, wantErr: []string{"no file after '='"}},
		{name: "one file named twice", specs: []string{"json=out/r", "sarif=out/./r"}, wantErr: []string{"already the target"}},
		{name: "/dev/stdout is stdout", specs: []string{"json=/dev/stdout"}, want: []Output{{Format: FormatJSON}}},
		{name: "/dev/stdout beside a bare format", specs: []string{"json=/dev/stdout", "table"}, wantErr: []string{"only one output can go to stdout", `"json=/dev/stdout"`}},
		{name: "file descriptor 1 beside a dash", specs: []string{"sarif=-", "json=/proc/self/fd/1"}, wantErr: []string{"only one output can go to stdout"}},
		{name: "one file named relative and absolute", specs: []string{"json=r.json", "sarif=" + filepath.Join(mustGetwd(t), "r.json")}, wantErr: []string{"already the target"}},
		{name: "every bad spec is reported", specs: []string{"xml", "toml=y"}, wantErr: []string{`"xml"`, `"toml"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseOutputs(tt.specs)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParseOutputs(%q) = %v, want an error", tt.specs, got)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseOutputs(%q): %v", tt.specs, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseOutputs(%q) (-want +got):\n%s", tt.specs, diff)
			}
		})
	}
}

func TestWriteFileAtomic(t *testing.T) {
	writeString := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	failHalfway := func(w io.Writer) error {
		if _, err := io.WriteString(w, `{"half":`); err != nil {
			return err
		}
		return errors.New("renderer broke")
	}
	entries := func(t *testing.T, dir string) []string {
		t.Helper()
		des, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		return names
	}

	t.Run("writes a new file readable by others", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.json")
		if err := WriteFileAtomic(path, writeString("complete\n")); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != "complete\n" {
			t.Errorf("file = %q, %v; want %q", got, err, "complete\n")
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("directory holds %v, want only report.json", names)
		}
	})

	t.Run("replaces an existing file and keeps its mode", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.json")
		if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(path, writeString("new")); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != "new" {
			t.Errorf("file = %q, want new", got)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, want 0600 kept", fi.Mode().Perm())
		}
	})

	t.Run("a failing writer leaves no partial file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.json")
		err := WriteFileAtomic(path, failHalfway)
		if err == nil || !strings.Contains(err.Error(), "renderer broke") || !strings.Contains(err.Error(), path) {
			t.Errorf("error = %v; want the writer's error with the path", err)
		}
		if names := entries(t, dir); len(names) != 0 {
			t.Errorf("directory holds %v after a failed write, want nothing", names)
		}
	})

	t.Run("a failing writer leaves an existing file untouched", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.json")
		if err := os.WriteFile(path, []byte("previous report"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(path, failHalfway); err == nil {
			t.Fatal("want an error")
		}
		got, _ := os.ReadFile(path)
		if string(got) != "previous report" {
			t.Errorf("file = %q after a failed write, want the previous report", got)
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("directory holds %v, want only report.json", names)
		}
	})

	t.Run("a missing directory is an error naming the path", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "no", "such", "report.json")
		if err := WriteFileAtomic(path, writeString("x")); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("error = %v; want one naming %s", err, path)
		}
	})

	t.Run("a directory in the way is refused", func(t *testing.T) {
		dir := t.TempDir()
		if err := WriteFileAtomic(dir, writeString("x")); err == nil {
			t.Error("want an error writing over a directory")
		}
	})

	// -o json=/dev/null, -o sarif=>(gzip >x.gz): a pipe or a device is
	// written to, not replaced by a file (as root, that rename replaced
	// /dev/null itself). A named pipe stands for both here: a test must not
	// risk the machine's /dev/null.
	t.Run("a pipe is written to as a stream and stays a pipe", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.fifo")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		read := make(chan string, 1)
		go func() {
			b, _ := os.ReadFile(path) // opens when the writer does, reads to its close
			read <- string(b)
		}()
		if err := WriteFileAtomic(path, writeString("complete\n")); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-read:
			if got != "complete\n" {
				t.Errorf("the pipe's reader got %q, want %q", got, "complete\n")
			}
		case <-time.After(10 * time.Second):
			t.Error("the pipe's reader got nothing in 10 s: the write did not go to the pipe")
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("after the write %s is %v (%v), want the named pipe still", path, fi.Mode(), err)
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("directory holds %v, want only the pipe", names)
		}
	})

	t.Run("the state is never written to a pipe: it must be read back", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.fifo")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileDurable(path, writeString("{}")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("error = %v, want not a regular file", err)
		}
	})

	t.Run("a link to a file stays a link, and its target gets the report", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "published", "report.html")
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, []byte("old"), 0o640); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "report.html")
		if err := os.Symlink(filepath.Join("published", "report.html"), link); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(link, writeString("new")); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("after the write %s is %v (%v), want the link still", link, fi.Mode(), err)
		}
		got, err := os.ReadFile(target)
		if err != nil || string(got) != "new" {
			t.Errorf("target = %q, %v; want new", got, err)
		}
		if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
			t.Errorf("target mode = %v, want 0640 kept", fi.Mode().Perm())
		}
	})

	t.Run("a link in a cache folder is replaced, not followed", func(t *testing.T) {
		dir := t.TempDir()
		elsewhere := filepath.Join(dir, "elsewhere")
		if err := os.WriteFile(elsewhere, []byte("not the cache's"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "cache", "verdicts.json")
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, link); err != nil {
			t.Fatal(err)
		}
		if err := WritePrivateFileAtomic(link, []byte("cache")); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(elsewhere); string(got) != "not the cache's" {
			t.Errorf("the link's target = %q, want it untouched", got)
		}
		if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s is %v (%v), want a regular file", link, fi.Mode(), err)
		}
	})
}

func TestDefaultWriteOptions(t *testing.T) {
	o := DefaultWriteOptions()
	if o.Color || o.Wide || !o.Now.IsZero() || o.MaxValueWidth != DefaultMaxValueWidth {
		t.Errorf("DefaultWriteOptions() = %+v", o)
	}
	if got := (WriteOptions{}).valueWidth(); got != DefaultMaxValueWidth {
		t.Errorf("zero MaxValueWidth cuts at %d, want %d", got, DefaultMaxValueWidth)
	}
	if got := (WriteOptions{Wide: true, MaxValueWidth: 10}).valueWidth(); got != 0 {
		t.Errorf("Wide cuts at %d, want no cut", got)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestParseOutputsSeesALinkToAnotherOutput: two outputs that would write
// one file, one through a link to it, are refused as the same path twice
// is; two files apart are not.
func TestParseOutputsSeesALinkToAnotherOutput(t *testing.T) {
	dir := t.TempDir()
	target, link, other := filepath.Join(dir, "report.json"), filepath.Join(dir, "latest.json"), filepath.Join(dir, "other.json")
	for _, f := range []string{target, other} {
		if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("report.json", link); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseOutputs([]string{"json=" + target, "sarif=" + link}); err == nil || !strings.Contains(err.Error(), "already the target") {
		t.Errorf("a file and a link to it: %v, want them refused as one file", err)
	}
	if _, err := ParseOutputs([]string{"json=" + target, "sarif=" + other}); err != nil {
		t.Errorf("two files: %v", err)
	}
}
