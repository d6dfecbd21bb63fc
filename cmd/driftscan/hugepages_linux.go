package main

import (
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A scan touches most of its heap once: it renders, reads pages and
// compares, and the heap grows to its peak within a second. On Linux
// every 4 KiB page of that growth is a page fault the kernel zeroes, and
// on a virtual machine each costs several microseconds: on the bench's
// 5,000 objects a warm scan took 16,800 faults and spent a tenth of its
// CPU in them (runtime.memclrNoHeapPointers under mcentral.grow). With
// 2 MiB pages the kernel takes one fault for 512 of them.
//
// Where transparent huge pages are "madvise" (Debian's and Ubuntu's
// default) a process gets them only for the memory it marks with
// madvise(MADV_HUGEPAGE), and the Go runtime has not marked its heap
// since Go 1.21.1 (golang/go#61718: long-running servers whose freed
// memory the kernel collapsed back into huge pages grew). A scan is short.
// So before it allocates, driftscan has the runtime map hugeHeapReserve
// bytes of heap in one piece (one allocation that is never touched),
// marks that range, and frees it; the runtime hands out the lowest free
// pages first, so the scan's heap grows into the marked range. Untouched,
// the range costs address space only.
//
// Where the setting is "always" the kernel does this already, and where
// it is "never" it would not help; GODEBUG=disablethp=1, the runtime's
// own switch against huge pages, turns this off too.
//
// On the bench's 5,000 objects (medians of 8 interleaved warm scans):
// 16,800 page faults to 2,900, 0.845 to 0.54 CPU s, 0.665 to 0.47 s wall,
// at 7 MiB more peak RSS (the last 2 MiB page of a run is whole).

// hugeHeapReserve is the heap marked for huge pages: more than a 20,000
// object scan's peak heap. Beyond it the heap grows in small pages.
const hugeHeapReserve = 256 << 20

// thpSetting is where Linux says when a process gets transparent huge
// pages: "always [madvise] never", the one in brackets chosen.
const thpSetting = "/sys/kernel/mm/transparent_hugepage/enabled"

// hugePageHeap marks a heap range for huge pages when setting (the text of
// thpSetting) chooses madvise and GODEBUG does not disable them, and
// returns the range marked (0, 0 when none).
func hugePageHeap(setting string) (start, end uintptr) {
	if !strings.Contains(setting, "[madvise]") || strings.Contains(os.Getenv("GODEBUG"), "disablethp=1") {
		return 0, 0
	}
	reserve := make([]byte, hugeHeapReserve)
	if unix.Madvise(reserve, unix.MADV_HUGEPAGE) == nil {
		start = uintptr(unsafe.Pointer(unsafe.SliceData(reserve)))
		end = start + hugeHeapReserve
	}
	runtime.GC()
	return start, end
}

// adviseHugePages is hugePageHeap with the system's setting.
func adviseHugePages() {
	setting, err := os.ReadFile(thpSetting)
	if err != nil {
		return
	}
	hugePageHeap(string(setting))
}
