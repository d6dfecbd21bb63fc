// Command rusage runs a command and writes its wall time and peak resident
// set size as JSON to a file, then exits with the command's exit code:
//
//	rusage RESULT.json -- COMMAND [ARG]...
//
// The benchmark starts each timed tool through it because on Linux a child's
// ru_maxrss is never lower than the peak RSS of the process that spawned it:
// at exec the kernel folds the peak of the address space being left into
// the new program's (exec_mmap calls setmax_mm_hiwater_rss), and Go spawns
// with vfork, so that address space is the spawner's. The benchmark holds
// thousands of objects and would lend the tool its own peak; this small
// program lends it only a few MiB, and reports that floor too.
// https://github.com/golang/go/issues/32054
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Result is what the result file holds.
type Result struct {
	WallSeconds float64 `json:"wallSeconds"`
	// MaxRSSKiB is the command's ru_maxrss; FloorKiB this program's own peak
	// RSS when it started the command, below which MaxRSSKiB cannot go.
	MaxRSSKiB int64 `json:"maxRssKiB"`
	FloorKiB  int64 `json:"floorKiB"`
	ExitCode  int   `json:"exitCode"`
	// CPUSeconds is the command's user and system time.
	CPUSeconds float64 `json:"cpuSeconds"`
	// MaxAnonKiB is the highest RssAnon of the command seen in
	// /proc/PID/status, read every 5 ms: its heap and stacks, without the
	// pages of its own binary that ru_maxrss also counts (how many of those
	// are resident depends on how the file's page cache was filled).
	MaxAnonKiB int64 `json:"maxAnonKiB"`
}

func main() {
	if len(os.Args) < 4 || os.Args[2] != "--" {
		fmt.Fprintln(os.Stderr, "usage: rusage RESULT.json -- COMMAND [ARG]...")
		os.Exit(2)
	}
	out, args := os.Args[1], os.Args[3:]
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The command dies with this program, so a cancelled benchmark leaves
	// nothing running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	floor := selfHWM()
	start := time.Now()
	err := cmd.Start()
	var maxAnon int64
	if err == nil {
		done := make(chan struct{})
		sampled := make(chan int64)
		go func() { sampled <- sampleAnon(cmd.Process.Pid, done) }()
		err = cmd.Wait()
		close(done)
		maxAnon = <-sampled
	}
	r := Result{WallSeconds: time.Since(start).Seconds(), FloorKiB: floor, MaxAnonKiB: maxAnon}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintf(os.Stderr, "rusage: %v\n", err)
		os.Exit(127)
	}
	r.ExitCode = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSKiB = ru.Maxrss
		r.CPUSeconds = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	data, _ := json.Marshal(r)
	if err := os.WriteFile(out, data, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "rusage: %v\n", err)
		os.Exit(127)
	}
	os.Exit(r.ExitCode)
}

// sampleAnon reads the RssAnon of process pid every 5 ms until done is
// closed, and returns the highest, in KiB.
func sampleAnon(pid int, done <-chan struct{}) int64 {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	var peak int64
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		peak = max(peak, statusKiB(path, "RssAnon:"))
		select {
		case <-done:
			return peak
		case <-t.C:
		}
	}
}

// selfHWM returns this process's peak RSS in KiB (VmHWM), 0 if unknown.
func selfHWM() int64 { return statusKiB("/proc/self/status", "VmHWM:") }

// statusKiB returns the field of a /proc status file, in KiB; 0 if the
// file or the field cannot be read (the process is gone).
func statusKiB(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
