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
	v, err := openVerdicts(dir, "server v1", nowForTest)
	if err != nil {
		b.Fatal(err)
	}
	const n = 20000
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
		for _, e := range written {
			got, ok := v.lookup(e.key(), e.Git, e.UID, e.ResourceVersion)
			if !ok {
				b.Fatalf("%s not found", e.Name)
			}
			v.reuse(got)
		}
		if err := v.save(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc), "retained-B")
}
