package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestTheHeapGrowsIntoHugePages: where the system's transparent huge pages
// are "madvise", a range of the heap is marked for them (the kernel's
// smaps shows the hg flag over all of it), and what the scan allocates
// next lands in that range. It runs in a child process, whose heap is as
// fresh as a scan's at its start (in this one, earlier tests leave free
// pages below the range that are handed out first). The collector is off,
// as it would be in no hurry to run before a scan's first allocations: the
// range must be freed by hugePageHeap itself.
func TestTheHeapGrowsIntoHugePages(t *testing.T) {
	if os.Getenv(runAlone) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTheHeapGrowsIntoHugePages$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), runAlone+"=1", "GODEBUG=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestTheHeapGrowsIntoHugePages") {
			t.Fatalf("the child: %v\n%s", err, out)
		}
		return
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	start, end := hugePageHeap("always [madvise] never\n")
	if end-start != hugeHeapReserve {
		t.Fatalf("marked [%#x, %#x), want %d MiB", start, end, hugeHeapReserve>>20)
	}
	if marked := hugePageBytes(t, start, end); marked != end-start {
		t.Errorf("smaps marks %d of the range's %d bytes for huge pages (VmFlags hg)", marked, end-start)
	}

	// A scan's heap: many small objects, kept.
	keep := make([][]byte, 0, 4096)
	inside := 0
	for range cap(keep) {
		b := make([]byte, 8<<10)
		keep = append(keep, b)
		if p := uintptr(unsafe.Pointer(&b[0])); p >= start && p < end {
			inside++
		}
	}
	if inside < len(keep)*9/10 {
		t.Errorf("%d of %d allocations after the marking are in the marked range", inside, len(keep))
	}
}

// TestHugePagesAreLeftToTheSystemOrToGODEBUG: nothing is marked where the
// kernel gives huge pages to all (always) or to none (never), or where
// GODEBUG=disablethp=1 says the runtime must not use them.
func TestHugePagesAreLeftToTheSystemOrToGODEBUG(t *testing.T) {
	for _, tc := range []struct{ setting, godebug string }{
		{"[always] madvise never\n", ""},
		{"always madvise [never]\n", ""},
		{"always [madvise] never\n", "madvdontneed=1,disablethp=1"},
		{"", ""},
	} {
		t.Setenv("GODEBUG", tc.godebug)
		if start, end := hugePageHeap(tc.setting); start != 0 || end != 0 {
			t.Errorf("setting %q, GODEBUG %q: marked [%#x, %#x)", tc.setting, tc.godebug, start, end)
		}
	}
}

// hugePageBytes is how many bytes of [start, end) lie in mappings that
// /proc/self/smaps shows with the hg (MADV_HUGEPAGE) flag.
func hugePageBytes(t *testing.T, start, end uintptr) uintptr {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lo, hi, marked uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if lo < end && hi > start && strings.Contains(" "+flags+" ", " hg ") {
				marked += min(hi, end) - max(lo, start)
			}
			continue
		}
		addrs, _, _ := strings.Cut(line, " ")
		a, b, ok := strings.Cut(addrs, "-")
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(a, 16, 64)
		h, err2 := strconv.ParseUint(b, 16, 64)
		if err1 == nil && err2 == nil {
			lo, hi = uintptr(l), uintptr(h)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return marked
}
