// Package startheap sets up the heap before the other packages' init
// functions run: the collector's first goal at the scan's heap floor, and
// the heap in huge pages (hugepages_linux.go). Their init allocates some
// 6 MiB (Helm's JSON schema compiler, client-go's scheme). At the Go
// runtime's first goal of 4 MiB that was two collections, each with its
// stop-the-world pauses, before main could set the pacing
// (cmd/driftscan/gc.go); and in 4 KiB pages it was some 1,800 page faults
// (on a virtual machine several microseconds each) before the huge pages
// main asked for. Go initializes the packages whose imports are
// initialized in the order of their import paths, and this one imports
// only the runtime's, os and golang.org/x/sys/unix: it comes before
// github.com/santhosh-tekuri and k8s.io. GOGC or GOMEMLIMIT in the
// environment leave the collector as they set it, as they turn off the
// pacing.
package startheap

import (
	"os"
	"runtime/debug"
)

// HeapFloor is the heap goal below which the collector does not run
// (cmd/driftscan/gc.go says why 48 MiB).
const HeapFloor = 48 << 20

// MinHeapGoal is the Go runtime's goal before its first collection at
// GOGC=100 (its heapMinimum scales with GOGC).
const MinHeapGoal = 4 << 20

// Percent is the GC percent that puts the first goal at HeapFloor.
const Percent = HeapFloor * 100 / MinHeapGoal

// Off says whether the environment sets the collector (GOGC or
// GOMEMLIMIT): the user's settings stand.
func Off() bool { return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" }

func init() {
	if !Off() {
		debug.SetGCPercent(Percent)
	}
	adviseHugePages()
}
