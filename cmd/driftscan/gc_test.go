package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestTheCollectorPacesTheHeapAboveAFloor: with neither GOGC nor GOMEMLIMIT
// set, the binary collects only at a memory limit that is at least
// heapFloor and follows the live heap (1.5 times it) after each
// collection, so a large estate's scan is not held at the floor.
func TestTheCollectorPacesTheHeapAboveAFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	restore := gcSettings(t)
	stop := paceGC()
	defer restore()
	defer stop()
	if got := debug.SetMemoryLimit(-1); got != heapFloor {
		t.Fatalf("memory limit = %d, want the floor %d", got, int64(heapFloor))
	}
	live := make([]byte, 96<<20) // above the floor, whatever else is live
	for i := range live {
		live[i] = 1
	}
	const want = 96 << 20 * 3 / 2
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) < want && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer goroutine moves the limit
	}
	if got := debug.SetMemoryLimit(-1); got < want {
		t.Errorf("memory limit = %d with 96 MiB live, want at least %d", got, want)
	}
	runtime.KeepAlive(live)
}

// TestGOGCOrGOMEMLIMITInTheEnvironmentStand: the user's settings are left
// to the Go runtime, which has read them already.
func TestGOGCOrGOMEMLIMITInTheEnvironmentStand(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, "80")
			restore := gcSettings(t)
			defer restore()
			debug.SetMemoryLimit(math.MaxInt64)
			debug.SetGCPercent(100)
			paceGC()()
			if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
				t.Errorf("memory limit = %d, want it left alone", got)
			}
			if got := debug.SetGCPercent(100); got != 100 {
				t.Errorf("GC percent = %d, want it left alone", got)
			}
		})
	}
}

// gcSettings returns a function that puts back the process's GC settings.
func gcSettings(t *testing.T) func() {
	t.Helper()
	limit := debug.SetMemoryLimit(-1)
	percent := debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}
