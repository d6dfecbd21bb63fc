package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// TestTheCollectorPacesTheHeapAboveAFloor: with neither GOGC nor GOMEMLIMIT
// set, the binary's heap goal is heapFloor while little is live, and
// follows the live heap (1.5 times it) once that is larger, so a large
// estate's scan is not held at the floor; when the live heap falls again
// the goal stays where it was. No memory limit is set.
func TestTheCollectorPacesTheHeapAboveAFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	restore := gcSettings(t)
	debug.SetMemoryLimit(math.MaxInt64)
	stop := paceGC()
	defer restore()
	defer stop()
	// goalAfterGC collects until the goal the pacing set is in [lo, hi]
	// (the finalizer goroutine sets it after each collection).
	goalAfterGC := func(lo, hi uint64) uint64 {
		t.Helper()
		var goal uint64
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
			s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
			metrics.Read(s)
			if goal = s[0].Value.Uint64(); goal >= lo && goal <= hi {
				break
			}
		}
		return goal
	}
	if goal := goalAfterGC(heapFloor*9/10, heapFloor*11/10); goal < heapFloor*9/10 || goal > heapFloor*11/10 {
		t.Errorf("heap goal %d MiB with little live, want about the floor, %d MiB", goal>>20, heapFloor>>20)
	}
	live := make([]byte, 96<<20) // above the floor, whatever else is live
	for i := range live {
		live[i] = 1
	}
	if goal := goalAfterGC(96<<20*3/2, 96<<20*2); goal < 96<<20*3/2 || goal > 96<<20*2 {
		t.Errorf("heap goal %d MiB with 96 MiB live, want 1.5 times the live heap", goal>>20)
	}
	runtime.KeepAlive(live)
	live = nil
	// The 96 MiB are garbage now: the goal 1.5 times the live heap would
	// be back at the floor.
	if goal := goalAfterGC(96<<20*3/2, 96<<20*2); goal < 96<<20*3/2 || goal > 96<<20*2 {
		t.Errorf("heap goal %d MiB after the 96 MiB were let go, want it to stay at its highest, 1.5 times 96 MiB", goal>>20)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit = %d, want none", got)
	}
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

// TestNoCollectionBeforeMainPacesTheHeap: the packages' init functions
// (Helm's JSON schema compiler, client-go's scheme) allocate some 6 MiB,
// which at the Go runtime's first goal of 4 MiB was two collections before
// main; internal/startheap sets the first goal at the floor before they run.
// The binary (this test binary, run as the command) prints `version` with
// GODEBUG=gctrace=1: the only collection is the one startheap forces
// (hugePageHeap), if any. With GOGC set, the runtime's own goal stands and
// init collects again, which shows that the check can fail.
func TestNoCollectionBeforeMainPacesTheHeap(t *testing.T) {
	collections := func(extra ...string) (unforced, all int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "version")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, "GODEBUG=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, append([]string{runAsDriftscan + "=1", "GODEBUG=gctrace=1"}, extra...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("driftscan version: %v\n%s", err, stderr.String())
		}
		for line := range strings.Lines(stderr.String()) {
			if !strings.HasPrefix(line, "gc ") {
				continue
			}
			all++
			if !strings.Contains(line, "(forced)") {
				unforced++
			}
		}
		return unforced, all
	}
	if unforced, _ := collections(); unforced != 0 {
		t.Errorf("%d collections before main set the pacing, want none", unforced)
	}
	if unforced, _ := collections("GOGC=100"); unforced == 0 {
		t.Errorf("with GOGC=100 no collection at start-up either: the check above shows nothing")
	}
}

// TestTheScanKeepsToItsContainersMemoryLimit: in a cgroup with a memory
// limit (a pod's limits.memory), the runtime's soft memory limit is
// containerShare of it, so the collector works harder near the limit
// rather than let the kernel kill the scan; without one, or with GOGC or
// GOMEMLIMIT in the environment, no limit is set.
func TestTheScanKeepsToItsContainersMemoryLimit(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("AUTOMEMLIMIT", "")
	os.Unsetenv("AUTOMEMLIMIT")
	restore := gcSettings(t)
	defer restore()
	debug.SetMemoryLimit(math.MaxInt64)

	var container uint64 = 1 << 30
	want := int64(float64(container) * containerShare)
	if got := limitToContainer(memlimit.Limit(container)); got != want {
		t.Errorf("limitToContainer with a 1 GiB cgroup = %d, want %d", got, want)
	}
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("memory limit = %d, want %d", got, want)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	unlimited := func() (uint64, error) { return 0, memlimit.ErrNoLimit }
	if got := limitToContainer(unlimited); got != math.MaxInt64 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("limitToContainer without a cgroup limit = %d, want none", got)
	}

	t.Setenv("GOGC", "100")
	if got := limitToContainer(memlimit.Limit(container)); got != math.MaxInt64 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("limitToContainer with GOGC set = %d, want the user's settings to stand", got)
	}
}
