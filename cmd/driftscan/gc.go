package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/calricon/driftscan/cmd/driftscan/internal/startheap"
)

// A scan holds little for long (Git's objects until compared, a page of
// live ones) but allocates several times that while it renders and
// compares; at Go's default GOGC of 100 the heap grows to twice what the
// last collection found live, and on a busy node a collection finds much
// of the garbage allocated while it ran still live. So the collector
// paces the heap as GOGC=50 would (a goal of 1.5 times the live heap),
// but never collects below heapFloor: a small estate's scan, whose live
// heap is a few MiB, is not collected every few MiB it allocates. After
// each collection the GC percent is set so that the next goal is the
// larger of the two. GOGC or GOMEMLIMIT in the environment turn this off:
// the user's settings stand.
//
// The pacing once set a memory limit (debug.SetMemoryLimit) instead of the
// percent. A limit makes the runtime give pages back to the system as
// the heap nears it, and this short process then faulted them in again:
// on a warm scan of the bench's 5,000 objects, 0.13 of 0.9 CPU s went to
// scavenging. Percent pacing gave 0.83 CPU s against 0.905 (medians of
// 10 interleaved runs) at 140 MiB peak RSS against 136 (kubectl diff's
// is about 146).

// heapFloor is the heap goal below which the collector does not run.
// The binary's own code and data are about 45 MiB of a scan's RSS. With
// the heap in 4 KiB pages a higher floor cost as much in page faults as
// it saved in collections (64 MiB: 0.77 against 0.81 CPU s). In huge
// pages (hugepages_linux.go) it saves a little, and costs its size in
// RSS: on the bench's 5,000 objects, binaries staged as the bench stages
// them, medians of 8 warm (6 cold) interleaved runs:
//
//	floor    warm CPU s, peak RSS    cold CPU s, peak RSS
//	40 MiB   0.430, 136 MiB          1.078, 134 MiB
//	48 MiB   0.438, 140 MiB          0.997, 139 MiB
//	64 MiB   0.407, 152 MiB          1.028, 154 MiB
//
// kubectl diff's peak is 146 MiB, and a scan should stay below it: 48.
// At 20,000 objects, where the live heap is well above the floor, the
// collector paces as GOGC=50 does. The first goal is set at the floor
// before the other packages' init runs (internal/startheap).
const heapFloor = startheap.HeapFloor

// containerShare is the share of its container's memory limit the scan
// lets its heap grow to (the runtime's soft memory limit) before the
// collector runs more often than the pacing says; the rest is for what
// the runtime does not count, chiefly the binary's own pages.
const containerShare = 0.9

// limitToContainer sets the runtime's soft memory limit to containerShare
// of the memory limit of the process's cgroup (a pod's limits.memory, the
// chart's 1Gi by default), when it has one: near the limit the collector
// works harder rather than let the kernel kill the scan. Far below it the
// pacing above decides alone: a scan of 50,000 objects that fills the scan
// cache peaks at about 570 MiB. GOGC or GOMEMLIMIT in the environment turn
// this off, as they do the pacing (so does AUTOMEMLIMIT=off). It returns
// the limit set, math.MaxInt64 for none.
//
// The cgroup's limit is read as github.com/KimMachineGun/automemlimit
// reads it (cgroup v1 and v2, through /proc/self/mountinfo and the
// hierarchy's lowest limit), which Prometheus uses for the same.
func limitToContainer(provider memlimit.Provider) int64 {
	if startheap.Off() {
		return debug.SetMemoryLimit(-1)
	}
	limit, err := memlimit.Set(memlimit.WithProvider(provider), memlimit.WithRatio(containerShare))
	if err != nil {
		return debug.SetMemoryLimit(-1)
	}
	if limit <= 0 {
		return math.MaxInt64
	}
	return limit
}

// goalPercent is how far above the live heap the goal is set: GOGC=50.
const goalPercent = 50

// paceGC starts the pacing, unless the environment sets GOGC or GOMEMLIMIT;
// stop ends it (the GC percent stays where it was).
func paceGC() (stop func()) {
	if startheap.Off() {
		return func() {}
	}
	highGoal.Store(0)
	debug.SetGCPercent(startheap.Percent)
	return afterEachGC(func() { debug.SetGCPercent(percentGoal()) })
}

// percentGoal is the GC percent that sets the next heap goal to 1.5 times
// the heap the last collection left, at least heapFloor, and never below
// the highest goal set before it (highGoal). The runtime's goal is the live
// heap plus GOGC percent of the live heap, the stacks and the globals (what
// a collection scans).
//
// Why a goal that does not fall: a scan's live heap climbs while Git's
// objects are rendered and wait for their live pages, then falls as they
// are compared and let go. At 1.5 times a falling live heap a cold scan of
// 20,000 objects collected eleven times in its last 0.4 s, each collection
// marking what the one before it had. The process's peak RSS was set when
// the heap reached its highest goal, and the runtime keeps those pages
// (its scavenger returns what lies above the goal): letting the heap grow
// back to that goal costs a compare-bound scan no more memory, only fewer
// collections. A scan that fills the scan cache allocates after its
// compares too, and peaks higher for it (a served 20k fill: 250 to 276
// MiB); in a container, limitToContainer bounds that.
func percentGoal() int {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/globals:bytes"}, {Name: "/gc/scan/stack:bytes"}}
	metrics.Read(s)
	for _, m := range s {
		if m.Value.Kind() != metrics.KindUint64 {
			return goalPercent
		}
	}
	live := s[0].Value.Uint64()
	scanned := live + s[1].Value.Uint64() + s[2].Value.Uint64()
	if scanned == 0 {
		return goalPercent
	}
	goal := max(live+scanned*goalPercent/100, heapFloor, highGoal.Load())
	highGoal.Store(goal)
	return int((goal - live) * 100 / scanned)
}

// highGoal is the highest heap goal percentGoal has set since paceGC.
var highGoal atomic.Uint64

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
