package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/pflag"
)

// profiler writes a Go profile of the run, as kubectl's --profile does, so
// a slow scan on someone's cluster can be looked at with `go tool pprof`;
// trace is the execution trace (`go tool trace`), which shows where a
// scan waits rather than where it spends CPU.
type profiler struct {
	name, output string
	file         *os.File
}

func (p *profiler) addFlags(f *pflag.FlagSet) {
	f.StringVar(&p.name, "profile", "none", "name of the profile to capture: none, cpu, trace, heap, allocs, goroutine, threadcreate, block or mutex")
	f.StringVar(&p.output, "profile-output", "profile.pprof", "file to write the profile to")
}

// start begins a CPU profile or a trace; the others are taken at finish.
func (p *profiler) start() error {
	switch p.name {
	case "none":
		return nil
	case "cpu", "trace":
	default:
		if pprof.Lookup(p.name) == nil {
			return fmt.Errorf("--profile %q: want none, cpu, trace, heap, allocs, goroutine, threadcreate, block or mutex", p.name)
		}
		switch p.name {
		case "block":
			runtime.SetBlockProfileRate(1)
		case "mutex":
			runtime.SetMutexProfileFraction(1)
		}
	}
	f, err := os.Create(p.output)
	if err != nil {
		return fmt.Errorf("--profile-output: %w", err)
	}
	p.file = f
	switch p.name {
	case "cpu":
		err = pprof.StartCPUProfile(f)
	case "trace":
		err = trace.Start(f)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("--profile %s: %w", p.name, err)
	}
	return nil
}

// finish writes the profile and closes its file.
func (p *profiler) finish() error {
	if p.file == nil {
		return nil
	}
	var err error
	switch p.name {
	case "cpu":
		pprof.StopCPUProfile()
	case "trace":
		trace.Stop()
	default:
		if p.name == "heap" {
			runtime.GC() // the heap as of the last collection: make it now
		}
		err = pprof.Lookup(p.name).WriteTo(p.file, 0)
	}
	err = errors.Join(err, p.file.Close())
	p.file = nil
	if err != nil {
		return fmt.Errorf("--profile-output %s: %w", p.output, err)
	}
	return nil
}
