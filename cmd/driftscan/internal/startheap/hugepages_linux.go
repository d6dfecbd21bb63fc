package startheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A scan touches most of its heap once: it renders, reads pages and
// compares, and the heap grows to its peak within a second. On Linux
// every 4 KiB page of that growth is a page fault the kernel zeroes, and
// on a virtual machine each costs several microseconds: on the bench's
// 5,000 objects a warm scan took 16,800 faults and spent about a seventh
// of its CPU in them (runtime.memclrNoHeapPointers under mcentral.grow).
// With 2 MiB pages the kernel takes one fault for 512 of them.
//
// Where transparent huge pages are "madvise" (Debian's and Ubuntu's
// default) a process gets them only for the memory it marks with
// madvise(MADV_HUGEPAGE), and the Go runtime has not marked its heap
// since Go 1.21.1 (golang/go#61718: long-running servers whose freed
// memory the kernel collapsed back into huge pages grew). A scan is short.
// So before it allocates (in startheap's init, before the other
// packages' init functions allocate their 6 MiB), driftscan has the
// runtime map hugeHeapReserve bytes of heap (allocations that are never
// touched), marks them, and frees them; the runtime hands out the lowest free pages first, so the
// scan's heap grows into the marked range. Untouched, the range costs
// address space only.
//
// Where the setting is "always" the kernel does this already, and where
// it is "never" it would not help; GODEBUG=disablethp=1, the runtime's
// own switch against huge pages, turns this off too. So does strict
// overcommit accounting (vm.overcommit_memory 2), which would charge the
// untouched range as if it were used.
//
// On the bench's 5,000 objects (medians of 8 interleaved warm scans):
// 16,800 page faults to 2,900, 0.845 to 0.54 CPU s, 0.665 to 0.47 s wall,
// at 7 MiB more peak RSS (the last 2 MiB page of a run is whole). Marked in
// main, after the init functions, it left those 6 MiB in small pages: moved
// into init (20 shuffled rounds on a served 5k estate) a warm scan went
// 5,300 to 3,500 page faults, 0.36 to 0.31 CPU s and 0.32 to 0.28 s wall,
// a cold one 0.69 to 0.64 CPU s and 0.50 to 0.46 s, at some 8 MiB more
// peak RSS; printing the version 51 to 41 ms. Fifty minutes later, with
// the same machine slower (warm scans 0.38 s), the faults still went
// 5,600 to 4,450 but the times did not move (20 rounds): what a fault
// costs there varies with the machine's state.

// hugeHeapReserve is the heap marked for huge pages: more than a 20,000
// object scan's peak heap. Beyond it the heap grows in small pages.
const hugeHeapReserve = 256 << 20

// hugeHeapChunk is the size of each allocation that maps the reserve. One
// allocation of the whole reserve would do, but the runtime zeroes an
// allocation that begins in heap it has used before (mheap.allocNeedsZero),
// and at start-up the package initialisers' collections leave free pages
// at the top of the heap: the whole reserve was then written, in small
// pages, before it was marked (one run in a few, 266 MiB of anonymous
// RSS). In chunks only the one chunk that straddles used and new heap is
// zeroed, and the rest is never touched.
const hugeHeapChunk = 4 << 20

// thpSetting is where Linux says when a process gets transparent huge
// pages: "always [madvise] never", the one in brackets chosen.
const thpSetting = "/sys/kernel/mm/transparent_hugepage/enabled"

// overcommitSetting is how Linux accounts for memory a process maps: "2"
// charges every mapped byte against a limit, touched or not.
const overcommitSetting = "/proc/sys/vm/overcommit_memory"

// heapRange is a range of the heap, [start, end).
type heapRange struct{ start, end uintptr }

// hugePageHeap marks hugeHeapReserve bytes of heap for huge pages when
// setting (the text of thpSetting) chooses madvise, overcommit (the text
// of overcommitSetting) is not strict and GODEBUG does not disable huge
// pages, and returns the ranges marked (none otherwise).
func hugePageHeap(setting, overcommit string) []heapRange {
	if !strings.Contains(setting, "[madvise]") || strings.TrimSpace(overcommit) == "2" || strings.Contains(os.Getenv("GODEBUG"), "disablethp=1") {
		return nil
	}
	// The chunks are live until the end: a collection while they are
	// allocated would free nothing. At the default GC percent each
	// doubling of the heap started one, six in all, about 9 ms of every
	// start (14 CPU ms).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	chunks := make([][]byte, hugeHeapReserve/hugeHeapChunk)
	for i := range chunks {
		chunks[i] = make([]byte, hugeHeapChunk)
	}
	var marked []heapRange
	for _, c := range chunks {
		if unix.Madvise(c, unix.MADV_HUGEPAGE) != nil {
			break
		}
		start := uintptr(unsafe.Pointer(unsafe.SliceData(c)))
		marked = append(marked, heapRange{start, start + hugeHeapChunk})
	}
	runtime.GC()
	return marked
}

// adviseHugePages is hugePageHeap with the system's settings.
func adviseHugePages() {
	setting, err := os.ReadFile(thpSetting)
	if err != nil {
		return
	}
	overcommit, err := os.ReadFile(overcommitSetting)
	if err != nil {
		return
	}
	hugePageHeap(string(setting), string(overcommit))
}
