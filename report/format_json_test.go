package report

import (
	"bytes"
	"encoding/json"
	"math"
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
		if got := appendIndented(nil, compact.Bytes(), "  "); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("input %d: appendIndented differs from encoding/json (-want +got):\n%s", i, cmp.Diff(want.String(), string(got)))
		}
	}
}

// FuzzIndentJSON: for any JSON encoding/json writes, appendIndented is
// json.Indent.
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
		if got := appendIndented(nil, compact.Bytes(), "  "); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendIndented(%q) differs from json.Indent (-want +got):\n%s", compact.String(), cmp.Diff(want.String(), string(got)))
		}
	})
}
