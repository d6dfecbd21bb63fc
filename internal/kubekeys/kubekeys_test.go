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
