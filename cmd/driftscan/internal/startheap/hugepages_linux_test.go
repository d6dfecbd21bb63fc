package startheap

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestTheHeapGrowsIntoHugePages: where the system's transparent huge pages
// are "madvise", hugeHeapReserve bytes of heap are marked for them (the
// kernel's smaps shows the hg flag over all of them), none of it is
// written before the scan uses it, and what the scan allocates next lands
// in it. It runs in a child process, whose heap is as fresh as a scan's at
// its start (in this one, earlier tests leave free pages below the range
// that are handed out first), but for what start-up may leave: heap used
// and freed at the top. After the marking the collector is off, as it
// would be in no hurry to run before a scan's first allocations: the range
// must be freed by hugePageHeap itself.
// runAlone set to "1" makes the test binary run TestTheHeapGrowsIntoHugePages
// as the child it starts.
const runAlone = "DRIFTSCAN_TEST_RUN_ALONE"

func TestTheHeapGrowsIntoHugePages(t *testing.T) {
	if os.Getenv(runAlone) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTheHeapGrowsIntoHugePages$", "-test.count=1", "-test.v")
		// disablethp: the child's init does not mark its heap (startheap's
		// init), so the test marks a heap as fresh as a scan's at its start.
		cmd.Env = append(os.Environ(), runAlone+"=1", "GODEBUG=disablethp=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestTheHeapGrowsIntoHugePages") {
			t.Fatalf("the child: %v\n%s", err, out)
		}
		return
	}
	os.Setenv("GODEBUG", "") // hugePageHeap reads it: now it marks
	// What start-up leaves: heap at the top used (written, so resident)
	// and freed. An allocation that begins there is zeroed whole.
	const freed = 32 << 20
	garbage := make([]byte, freed)
	for i := range garbage {
		garbage[i] = 1
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	runtime.GC()

	// Marking costs one collection, not one each time the heap doubles
	// while the reserve is mapped, and leaves the collector as it was.
	var gcs debug.GCStats
	debug.ReadGCStats(&gcs)
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	ranges := hugePageHeap("always [madvise] never\n", "0\n")
	collections := gcs.NumGC
	debug.ReadGCStats(&gcs)
	if n := gcs.NumGC - collections; n != 1 {
		t.Errorf("marking the heap took %d collections, want 1", n)
	}
	if p := debug.SetGCPercent(-1); p != percent {
		t.Errorf("after marking the GC percent is %d, want %d as before", p, percent)
	}
	defer debug.SetGCPercent(percent)
	var total uintptr
	for _, r := range ranges {
		total += r.end - r.start
	}
	if total != hugeHeapReserve {
		t.Fatalf("marked %d MiB in %d ranges, want %d MiB", total>>20, len(ranges), hugeHeapReserve>>20)
	}
	marked, resident := hugePageMappings(t, ranges)
	if marked != total {
		t.Errorf("smaps marks %d of the ranges' %d bytes for huge pages (VmFlags hg)", marked, total)
	}
	// The chunk that straddles the freed heap and new heap is zeroed, and
	// nothing else.
	if resident > freed+16<<20 {
		t.Errorf("%d MiB of the marked heap is resident before the scan allocates, more than the %d MiB freed at the top: it was written (zeroed) before it was marked", resident>>20, freed>>20)
	}

	// A scan's heap: many small objects, kept.
	keep := make([][]byte, 0, 4096)
	inside := 0
	for range cap(keep) {
		b := make([]byte, 8<<10)
		keep = append(keep, b)
		p := uintptr(unsafe.Pointer(&b[0]))
		for _, r := range ranges {
			if p >= r.start && p < r.end {
				inside++
				break
			}
		}
	}
	if inside < len(keep)*9/10 {
		t.Errorf("%d of %d allocations after the marking are in the marked ranges", inside, len(keep))
	}
}

// TestHugePagesAreLeftToTheSystemOrToGODEBUG: nothing is marked where the
// kernel gives huge pages to all (always) or to none (never), where it
// charges mapped memory strictly (overcommit 2), or where
// GODEBUG=disablethp=1 says the runtime must not use them.
func TestHugePagesAreLeftToTheSystemOrToGODEBUG(t *testing.T) {
	for _, tc := range []struct{ setting, overcommit, godebug string }{
		{"[always] madvise never\n", "0\n", ""},
		{"always madvise [never]\n", "0\n", ""},
		{"always [madvise] never\n", "2\n", ""},
		{"always [madvise] never\n", "0\n", "madvdontneed=1,disablethp=1"},
		{"", "0\n", ""},
	} {
		t.Setenv("GODEBUG", tc.godebug)
		if ranges := hugePageHeap(tc.setting, tc.overcommit); len(ranges) != 0 {
			t.Errorf("setting %q, overcommit %q, GODEBUG %q: marked %d ranges", tc.setting, tc.overcommit, tc.godebug, len(ranges))
		}
	}
}

// hugePageMappings reads /proc/self/smaps: marked is how many bytes of
// ranges lie in mappings with the hg (MADV_HUGEPAGE) flag, and resident
// the RSS of those mappings (which hold nothing but the marked heap).
func hugePageMappings(t *testing.T, ranges []heapRange) (marked, resident uintptr) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lo, hi, rss uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if kb, ok := strings.CutPrefix(line, "Rss:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			rss = uintptr(n) << 10
			continue
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if !strings.Contains(" "+flags+" ", " hg ") {
				continue
			}
			overlap := uintptr(0)
			for _, r := range ranges {
				if lo < r.end && hi > r.start {
					overlap += min(hi, r.end) - max(lo, r.start)
				}
			}
			if overlap > 0 {
				marked += overlap
				resident += rss
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
	return marked, resident
}
