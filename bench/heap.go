package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/scanner"
)

// HeapProfile is where an in-process scan's memory goes: the live heap
// after a collection at the end of each stage, and the heap profile of the
// largest (`go tool pprof -sample_index=inuse_space -top FILE`).
type HeapProfile struct {
	Objects int         `json:"objects"`
	File    string      `json:"file"`
	Stages  []HeapStage `json:"stages"`
	// PeakStage is the stage whose end the profile shows.
	PeakStage string `json:"peakStage"`
}

// HeapStage is the live heap when a stage ended: all of it, and what the
// scan added to the heap the benchmark held before it began.
type HeapStage struct {
	Stage   string  `json:"stage"`
	HeapMiB float64 `json:"heapMiB"`
	ScanMiB float64 `json:"scanMiB"`
}

// heapProfile scans the bed's estate in process once more, collects
// garbage whenever a stage ends (so the scan runs slower: only this scan is
// profiled, none is timed) and writes the heap profile taken at the largest
// live heap to file. The benchmark's own copy of the estate is in the same
// heap: the profile's scanner frames are the scan's.
func heapProfile(ctx context.Context, b *bed, file string) (*HeapProfile, error) {
	cfg, err := config.Load(b.est.Config)
	if err != nil {
		return nil, err
	}
	opts := scanner.DefaultOptions()
	opts.RESTConfig = b.env.Config
	opts.GitCacheDir = b.est.Dir
	hp := &HeapProfile{Objects: len(b.est.Objects), File: file}
	var (
		mu      sync.Mutex
		current = "connect"
		peak    uint64
		prof    bytes.Buffer
		ms      runtime.MemStats
	)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	snapshot := func(stage string) {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		hp.Stages = append(hp.Stages, HeapStage{Stage: stage, HeapMiB: mib(int64(ms.HeapAlloc)), ScanMiB: mib(int64(ms.HeapAlloc) - int64(base))})
		if ms.HeapAlloc > peak {
			peak, hp.PeakStage = ms.HeapAlloc, stage
			prof.Reset()
			_ = pprof.Lookup("heap").WriteTo(&prof, 0)
		}
	}
	opts.Progress = func(p scanner.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if current == "report" {
			return // the compare's last reports, once it was snapshot
		}
		if p.Stage != current {
			snapshot(current)
			current = p.Stage
		}
		if p.Stage == "compare" && p.Done == p.Total {
			snapshot("compare")
			current = "report"
		}
	}
	r, err := scanner.Scan(ctx, cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("scan in process: %w", err)
	}
	snapshot("report")
	runtime.KeepAlive(r)
	if err := os.WriteFile(file, prof.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return hp, nil
}

// profileHeap takes the heap profile and says where it is.
func profileHeap(ctx context.Context, b *bed, file string) (*HeapProfile, error) {
	say("heap profile of an in-process scan of %d objects...", len(b.est.Objects))
	hp, err := heapProfile(ctx, b, file)
	if err != nil {
		return nil, err
	}
	say("heap profile at the end of %s: %s (go tool pprof -sample_index=inuse_space -top %s)", hp.PeakStage, file, file)
	return hp, nil
}

// print writes the heap by stage as one line.
func (hp *HeapProfile) print(w io.Writer) {
	var parts []string
	for _, s := range hp.Stages {
		parts = append(parts, fmt.Sprintf("%s %.0f", s.Stage, s.ScanMiB))
	}
	fmt.Fprintf(w, "\nHeap of an in-process scan of %d objects, MiB live after each stage (the benchmark's own excluded): %s; profile %s\n",
		hp.Objects, strings.Join(parts, ", "), hp.File)
}
