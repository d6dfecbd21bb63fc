package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// A scan holds little for long (Git's objects until compared, a page of
// live ones) but allocates several times that while it renders and
// compares; at Go's default GOGC of 100 the heap grows to twice what the
// last collection found live, and on a busy node a collection finds much
// of the garbage allocated while it ran still live. So the collector
// paces the heap as GOGC=50 would (a goal of 1.5 times the live heap),
// but never collects below heapFloor: a small estate's scan, whose live
// heap is a few MiB, is not collected every few MiB it allocates. The
// goal is a soft memory limit (debug.SetMemoryLimit), moved after each
// collection, with GOGC off. GOGC or GOMEMLIMIT in the environment turn
// this off: the user's settings stand.

// heapFloor is the memory limit below which the collector does not run.
// The binary's own code and data are about 80 MiB of a scan's RSS. On the
// bench's 5,000 objects this took the scan from 1.27 to 1.06 CPU seconds
// (medians of 6 runs, load 1.4-4.4) at the same peak RSS as GOGC=50
// (131-133 MiB, kubectl diff's 132-137); at 20,000 objects, where the
// live heap is well above the floor, it paces as GOGC=50 does.
const heapFloor = 40 << 20

// goalPercent is how far above the live heap the goal is set: GOGC=50.
const goalPercent = 50

// paceGC starts the pacing, unless the environment sets GOGC or GOMEMLIMIT;
// stop ends it (the limit stays where it was).
func paceGC() (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(heapFloor)
	return afterEachGC(func() { debug.SetMemoryLimit(memoryGoal()) })
}

// memoryGoal is the memory limit for the heap the last collection left:
// the Go runtime's memory other than the heap's objects, plus 1.5 times
// the live heap, and at least heapFloor.
func memoryGoal() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	for _, m := range s {
		if m.Value.Kind() != metrics.KindUint64 {
			return heapFloor
		}
	}
	live, total, objects, released := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64(), s[3].Value.Uint64()
	other := total - objects - released
	return max(heapFloor, int64(other+live+live*goalPercent/100))
}

// afterEachGC calls f after every collection, from the finalizer goroutine:
// a sentinel that only the collector can free re-arms itself each time,
// until stop.
func afterEachGC(f func()) (stop func()) {
	var stopped atomic.Bool
	// 32 bytes, so not a tiny allocation (under 16 bytes without
	// pointers), whose finalizer may never run.
	type sentinel [32]byte
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
			if stopped.Load() {
				return
			}
			f()
			arm()
		})
	}
	arm()
	return func() { stopped.Store(true) }
}
