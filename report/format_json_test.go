package report

import (
	"bytes"
	"encoding/json"
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
