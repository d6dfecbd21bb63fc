package report

import (
	"fmt"
	"math"
	"testing"
)

// TestValueTextOfScalarsIsFmts: integers and booleans are written as
// fmt.Sprint writes them, strings as they are, floats without an exponent,
// maps and lists as JSON.
func TestValueTextOfScalarsIsFmts(t *testing.T) {
	for _, v := range []any{int64(0), int64(-7), int64(math.MaxInt64), int64(math.MinInt64), 0, -42, math.MaxInt, true, false, uint8(3), int32(-5)} {
		if got, want := ValueText(v), fmt.Sprint(v); got != want {
			t.Errorf("ValueText(%T %v) = %q, want %q", v, v, got, want)
		}
	}
	for v, want := range map[any]string{"a b": "a b", nil: "", 1e21: "1000000000000000000000", 0.5: "0.5", float32(0.25): "0.25"} {
		if got := ValueText(v); got != want {
			t.Errorf("ValueText(%T %v) = %q, want %q", v, v, got, want)
		}
	}
	if got, want := ValueText(map[string]any{"b": []any{int64(1), "x<y"}, "a": map[string]any{}}), `{"a":{},"b":[1,"x\u003cy"]}`; got != want {
		t.Errorf("ValueText of a map = %s, want %s", got, want)
	}
}
