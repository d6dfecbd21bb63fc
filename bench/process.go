package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// process is what one run of a tool cost.
type process struct {
	Wall time.Duration
	// MaxRSS is the tool's peak resident set size in bytes (ru_maxrss);
	// Floor is the launcher's own peak, below which MaxRSS cannot go.
	MaxRSS, Floor int64
	// MaxAnon is the tool's highest anonymous RSS (heap, stacks) seen,
	// sampled every 5 ms: ru_maxrss less its binary's mapped pages.
	MaxAnon  int64
	ExitCode int
	// CPU is the tool's own user and system time.
	CPU time.Duration
}

// launcher starts timed tools through the rusage program (bench/rusage),
// so that their peak RSS is theirs and not the benchmark's: see the
// program's doc comment.
type launcher struct {
	path string
	dir  string
	seq  atomic.Int64
	// limitAS, when positive, bounds each tool's address space in bytes
	// (prlimit --as): a tool that grows past it fails instead of taking
	// the machine's memory.
	limitAS int64
}

// measure runs name with args through the launcher and returns its wall
// time, peak RSS and exit code. A non-zero exit is not an error: the caller
// decides what the code means.
func (l *launcher) measure(ctx context.Context, name string, args []string, stdout, stderr io.Writer, env []string) (process, error) {
	result := filepath.Join(l.dir, fmt.Sprintf("rusage-%d.json", l.seq.Add(1)))
	argv := append([]string{result, "--", name}, args...)
	if l.limitAS > 0 {
		// prlimit execs the tool in its own process: rusage measures the tool.
		argv = append([]string{result, "--", "prlimit", fmt.Sprintf("--as=%d", l.limitAS), "--", name}, args...)
	}
	cmd := exec.CommandContext(ctx, l.path, argv...)
	cmd.Stdout, cmd.Stderr, cmd.Env = stdout, stderr, env
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	if err := ctx.Err(); err != nil {
		return process{}, err
	}
	data, err := os.ReadFile(result)
	if err != nil {
		return process{}, fmt.Errorf("run %s: %v (and no rusage result: %w)", name, runErr, err)
	}
	var r struct {
		WallSeconds float64 `json:"wallSeconds"`
		MaxRSSKiB   int64   `json:"maxRssKiB"`
		FloorKiB    int64   `json:"floorKiB"`
		ExitCode    int     `json:"exitCode"`
		CPUSeconds  float64 `json:"cpuSeconds"`
		MaxAnonKiB  int64   `json:"maxAnonKiB"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return process{}, fmt.Errorf("rusage result of %s: %w", name, err)
	}
	return process{
		Wall:     time.Duration(r.WallSeconds * float64(time.Second)),
		MaxRSS:   r.MaxRSSKiB * 1024,
		Floor:    r.FloorKiB * 1024,
		ExitCode: r.ExitCode,
		CPU:      time.Duration(r.CPUSeconds * float64(time.Second)),
		MaxAnon:  r.MaxAnonKiB * 1024,
	}, nil
}

// median returns the index of the run with the median wall time.
func median(walls []time.Duration) int {
	idx := make([]int, len(walls))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return walls[idx[a]] < walls[idx[b]] })
	return idx[len(idx)/2]
}

// tail returns the last lines of a file, for error messages.
func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }
