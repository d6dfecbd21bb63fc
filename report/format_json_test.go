package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestJSONRoundTripsTheContract(t *testing.T) {
	out := render(t, FormatJSON, DefaultWriteOptions())
	if !bytes.HasSuffix(out, []byte("}\n")) {
		t.Error("JSON does not end in a newline")
	}
	var got Report
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(loadFixture(t), &got); diff != "" {
		t.Errorf("JSON does not decode to the report it was written from (-want +got):\n%s", diff)
	}
}

func TestJSONLeavesHTMLCharactersAlone(t *testing.T) {
	r := New(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), "a<b&c>")
	r.Finalize()
	if out := string(mustWrite(t, FormatJSON, r)); !strings.Contains(out, `"cluster": "a<b&c>"`) {
		t.Errorf("JSON escapes HTML characters:\n%s", out)
	}
}

// TestIndentIsWhatEncodingJSONWrites: the report's indenting gives, byte
// for byte, what json.Encoder with SetIndent writes, for every report the
// tests and fuzz seeds know and for JSON that tries its corners.
func TestIndentIsWhatEncodingJSONWrites(t *testing.T) {
	inputs := []any{
		loadFixture(t),
		map[string]any{},
		[]any{},
		map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{map[string]any{}, []any{[]any{}}}},
		map[string]any{`k"ey\`: `va"l\ue{}[],:`, "esc": "\\\"", "tail": "\\", "html": "<a href=\"x\">&</a>", "u": "\u2028\u00e9\x01"},
		[]any{1.5, math.Copysign(0, -1), 1e21, true, false, nil, "", `\`},
		"just a string", 42, nil,
	}
	for i, v := range inputs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		enc = json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1, 7, indentChunk} {
			if got := indented(t, compact.Bytes(), chunk); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("input %d, written %d bytes at a time: writeIndented differs from encoding/json (-want +got):\n%s", i, chunk, cmp.Diff(want.String(), string(got)))
			}
		}
	}
}

// TestJSONIsWhatEncodingJSONWrites: the report written with its apps
// encoded in batches by several goroutines is, byte for byte, what
// json.Encoder with SetIndent writes of the whole report, for every number
// of apps (none, one, and batches of uneven sizes), with a cluster name
// that holds the text the apps are placed by, and written in small
// chunks; a write that fails stops it with its error.
func TestJSONIsWhatEncodingJSONWrites(t *testing.T) {
	fixture := loadFixture(t)
	for _, n := range []int{0, 1, 2, 3, 17, 33, 250} {
		r := *fixture
		r.Cluster = `a<b>,"apps":null,` + "\\"
		r.Apps = nil
		for i := 0; len(r.Apps) < n; i++ {
			app := fixture.Apps[i%len(fixture.Apps)]
			app.Name = fmt.Sprintf("%s-%d", app.Name, i)
			r.Apps = append(r.Apps, app)
		}
		if n == 0 {
			r.Apps = []App{}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := writeJSON(&got, &r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%d apps: writeJSON differs from encoding/json (-want +got):\n%s", n, cmp.Diff(want.String(), got.String()))
		}
		broken := errors.New("disk full")
		if err := writeJSON(failingWriter{broken}, &r); n >= 2 && !errors.Is(err, broken) {
			t.Errorf("%d apps: a failing write gave %v, want %v", n, err, broken)
		}
	}
}

// indented is writeIndented's output, written chunk bytes or more at a
// time: each write is checked to be at least chunk bytes, but the last.
func indented(t *testing.T, src []byte, chunk int) []byte {
	t.Helper()
	return indentedBy(t, src, chunk).out.Bytes()
}

// indentedBy is indented's writer, with the size of every write.
func indentedBy(t *testing.T, src []byte, chunk int) *chunkWriter {
	t.Helper()
	var w chunkWriter
	if err := writeIndented(&w, src, "  ", chunk); err != nil {
		t.Fatal(err)
	}
	for i, n := range w.writes[:max(0, len(w.writes)-1)] {
		if n < chunk {
			t.Errorf("write %d of %d is %d bytes, under the chunk of %d", i+1, len(w.writes), n, chunk)
		}
	}
	return &w
}

// chunkWriter records what is written to it and the size of each write.
type chunkWriter struct {
	out    bytes.Buffer
	writes []int
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, len(p))
	return w.out.Write(p)
}

// TestIndentHoldsAChunk: a report far larger than the chunk is written in
// writes of about the chunk, and a failing write stops the indenting
// with its error.
func TestIndentHoldsAChunk(t *testing.T) {
	r := loadFixture(t)
	for len(r.Apps) < 2000 {
		r.Apps = append(r.Apps, r.Apps...)
	}
	var compact bytes.Buffer
	if err := json.NewEncoder(&compact).Encode(r); err != nil {
		t.Fatal(err)
	}
	w := indentedBy(t, compact.Bytes(), indentChunk)
	if w.out.Len() < 4*indentChunk {
		t.Fatalf("the report is %d bytes indented: too small to show chunking", w.out.Len())
	}
	for i, n := range w.writes {
		if n > indentChunk+compact.Len()/len(r.Apps) {
			t.Errorf("write %d of %d is %d bytes: want about %d", i+1, len(w.writes), n, indentChunk)
		}
	}
	broken := errors.New("disk full")
	if err := writeIndented(failingWriter{broken}, compact.Bytes(), "  ", indentChunk); !errors.Is(err, broken) {
		t.Errorf("a failing write gave %v, want %v", err, broken)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// FuzzIndentJSON: for any JSON encoding/json writes, writeIndented is
// json.Indent, whatever its chunk.
func FuzzIndentJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":""}],"c":{}}`, `"x\"y"`, `[[],[{}],"\\"]`, `{"a\\":"\\\"}"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		var compact bytes.Buffer
		enc := json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1, 5, indentChunk} {
			if got := indented(t, compact.Bytes(), chunk); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("writeIndented(%q) in chunks of %d differs from json.Indent (-want +got):\n%s", compact.String(), chunk, cmp.Diff(want.String(), string(got)))
			}
		}
	})
}

// BenchmarkWriteJSON writes a report of 200 apps, made from the fixture's,
// as the scan writes its JSON report.
func BenchmarkWriteJSON(b *testing.B) {
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		b.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		b.Fatal(err)
	}
	apps := r.Apps
	r.Apps = nil
	for i := 0; len(r.Apps) < 200; i++ {
		r.Apps = append(r.Apps, apps[i%len(apps)])
	}
	for b.Loop() {
		if err := writeJSON(io.Discard, &r); err != nil {
			b.Fatal(err)
		}
	}
}
