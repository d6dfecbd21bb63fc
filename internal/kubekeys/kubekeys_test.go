package kubekeys

import (
	"testing"
	"unsafe"
)

// TestInternKeepsOneCopyOfRepeatedKeys: a key Kubernetes objects repeat
// comes back as the one kept copy, without an allocation; any other key
// comes back as its text.
func TestInternKeepsOneCopyOfRepeatedKeys(t *testing.T) {
	for _, k := range []string{"metadata", "containerPort", "app.kubernetes.io/name"} {
		a, b := Intern([]byte(k)), Intern([]byte(k))
		if a != k || unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("Intern(%q) = %q and %q, want one kept copy", k, a, b)
		}
		buf := []byte(k)
		if n := testing.AllocsPerRun(100, func() { _ = Intern(buf) }); n != 0 {
			t.Errorf("Intern(%q) allocated %.0f times", k, n)
		}
	}
	for _, k := range []string{"x-team-key", "", "Metadata"} {
		if got := Intern([]byte(k)); got != k {
			t.Errorf("Intern(%q) = %q", k, got)
		}
	}
}

// TestValueKeepsOneBoxedCopyOfRepeatedValues: a value the API server writes
// over and over comes back boxed, the same box each time, without an
// allocation; any other text, or a longer one, is not kept.
func TestValueKeepsOneBoxedCopyOfRepeatedValues(t *testing.T) {
	for _, v := range []string{"TCP", "ClusterFirst", "/dev/termination-log", "25%"} {
		a, ok1 := Value([]byte(v))
		b, ok2 := Value([]byte(v))
		if !ok1 || !ok2 || a != v {
			t.Fatalf("Value(%q) = %v, %v; want it kept", v, a, ok1)
		}
		if unsafe.StringData(a.(string)) != unsafe.StringData(b.(string)) {
			t.Errorf("Value(%q) made two copies", v)
		}
		buf := []byte(v)
		if n := testing.AllocsPerRun(100, func() { _, _ = Value(buf) }); n != 0 {
			t.Errorf("Value(%q) allocated %.0f times", v, n)
		}
	}
	for _, v := range []string{"tcp", "", "nginx:1.25", "/dev/termination-log/and-then-some"} {
		if got, ok := Value([]byte(v)); ok {
			t.Errorf("Value(%q) = %v, want not kept", v, got)
		}
	}
}

// TestValuesFitMaxValue: no kept value is longer than MaxValue, past which
// Value and the live decoder do not look a string up.
func TestValuesFitMaxValue(t *testing.T) {
	for v := range values {
		if len(v) > MaxValue {
			t.Errorf("kept value %q is %d bytes, over MaxValue (%d)", v, len(v), MaxValue)
		}
	}
}
