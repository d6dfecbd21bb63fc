package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

// process is what one child process cost.
type process struct {
	Wall time.Duration
	// MaxRSS is the child's peak resident set size in bytes, from the
	// rusage wait4 returns (ru_maxrss, KiB on Linux).
	MaxRSS   int64
	ExitCode int
}

// measure runs cmd and returns its wall time, peak RSS and exit code. A
// non-zero exit is not an error: the caller decides what the code means.
func measure(cmd *exec.Cmd) (process, error) {
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		return process{}, fmt.Errorf("run %s: %w", cmd.Path, err)
	}
	p := process{Wall: wall, ExitCode: cmd.ProcessState.ExitCode()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		p.MaxRSS = ru.Maxrss * 1024
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return p, fmt.Errorf("run %s: %w", cmd.Path, err)
	}
	return p, nil
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
