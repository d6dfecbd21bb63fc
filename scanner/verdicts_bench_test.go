package scanner

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/calricon/driftscan/report"
)

// BenchmarkVerdicts opens a cache of 20,000 verdicts (the bench's 20k
// estate keeps about 19,000), finds and keeps each as a warm scan does,
// and saves nothing. It reports the heap the open cache holds
// (retained-B): the collector marks it on every collection of the scan.
func BenchmarkVerdicts(b *testing.B) {
	dir := b.TempDir()
	written := writeVerdicts(b, dir, 20000)
	declared := declaredOf(written)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	held, err := openVerdicts(dir, "server v1", nowForTest)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(held)
	b.ReportAllocs()
	for b.Loop() {
		v, err := openVerdicts(dir, "server v1", nowForTest)
		if err != nil {
			b.Fatal(err)
		}
		v.link(declared, len(written))
		for i, e := range written {
			if v.lookup(i, e.Git, e.UID, e.ResourceVersion) == nil {
				b.Fatalf("%s not found", e.Name)
			}
			v.reuse(i)
		}
		if err := v.save(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc), "retained-B")
}

// declaredOf is the scan's map of declared objects, were vs its objects
// in this order.
func declaredOf(vs []verdict) map[objectKey]int {
	declared := make(map[objectKey]int, len(vs))
	for i, e := range vs {
		declared[e.key()] = i
	}
	return declared
}

// writeVerdicts saves n verdicts of the bench's kinds in dir and returns
// them.
func writeVerdicts(b *testing.B, dir string, n int) []verdict {
	b.Helper()
	v, err := openVerdicts(dir, "server v1", nowForTest)
	if err != nil {
		b.Fatal(err)
	}
	written := make([]verdict, 0, n)
	for i := range n {
		e := verdict{Group: "apps", Kind: "Deployment", Namespace: fmt.Sprintf("ns-%02d", i%80), Name: fmt.Sprintf("web-%05d", i),
			Git: fmt.Sprintf("%064x", i), UID: fmt.Sprintf("0b1c2d3e-0000-4000-8000-%012x", i), ResourceVersion: fmt.Sprint(1000 + i), Owner: "team"}
		if i%4 == 0 {
			e.Dismissed, e.Context = report.Dismissed{"defaulted": 4, "builtin": 1}, fmt.Sprintf("%064x", i/4)
		}
		v.record(e)
		written = append(written, e)
	}
	if err := v.save(); err != nil {
		b.Fatal(err)
	}
	return written
}

// BenchmarkVerdictsOneChanged is the save of a warm scan of a live
// cluster: of 20,000 verdicts one object was written since (its
// resourceVersion moved, and it is in sync again), so the file is written
// anew. The open and the lookups are outside the timer.
func BenchmarkVerdictsOneChanged(b *testing.B) {
	dir := b.TempDir()
	written := writeVerdicts(b, dir, 20000)
	declared := declaredOf(written)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		v, err := openVerdicts(dir, "server v1", nowForTest)
		if err != nil {
			b.Fatal(err)
		}
		v.link(declared, len(written))
		for i, e := range written[1:] {
			if v.lookup(i+1, e.Git, e.UID, e.ResourceVersion) == nil {
				b.Fatalf("%s not found", e.Name)
			}
			v.reuse(i + 1)
		}
		moved := written[0]
		moved.ResourceVersion += "1"
		v.record(moved)
		b.StartTimer()
		if err := v.save(); err != nil {
			b.Fatal(err)
		}
	}
}
