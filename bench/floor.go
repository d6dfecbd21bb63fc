package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// Floor is the LIST floor of one estate (bench/listfloor): the LISTs the
// scan sent, sent again by a program that reads each page and discards it,
// through the same launcher, in the same run as driftscan's. Driftscan's
// wall time over the floor's is what its own work costs on top of reading.
type Floor struct {
	Command []string `json:"command"`
	// Lists, Pages and Bytes are what it sent and read.
	Lists int   `json:"lists"`
	Pages int64 `json:"pages"`
	Bytes int64 `json:"bytes"`
	// WallSeconds and MaxRSSMiB are those of the median run.
	WallSeconds float64     `json:"wallSeconds"`
	CPUSeconds  float64     `json:"cpuSeconds"`
	MaxRSSMiB   float64     `json:"maxRssMiB"`
	Server      *ServerCost `json:"server,omitempty"`
	// RunsWallSeconds lists every run's wall time when there was more than one.
	RunsWallSeconds []float64 `json:"runsWallSeconds,omitempty"`
	// EstateFastestSeconds is the fastest run of the floor on this estate,
	// with these runs or with the other scans' (settleFloors): the cold and
	// the warm scans' floors send the same LISTs.
	EstateFastestSeconds float64 `json:"estateFastestSeconds,omitempty"`
}

// floorList is one LIST, by its first page: what bench/listfloor reads.
type floorList struct {
	Path  string `json:"path"`
	Limit int64  `json:"limit"`
}

// floorRunner runs bench/listfloor over one estate's LISTs.
type floorRunner struct {
	bin       string
	listsFile string
	lists     int
}

// buildTool builds a package of the bench (run from the repository root)
// into dir with the go command on PATH.
func buildTool(ctx context.Context, dir, pkg string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	path := filepath.Join(dir, filepath.Base(pkg))
	out, err := exec.CommandContext(ctx, goBin, "build", "-o", path, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build %s (run from the repository root): %w\n%s", pkg, err, out)
	}
	return path, nil
}

// newFloorRunner writes the LISTs an in-process scan sent to a file in
// outDir for bin.
func newFloorRunner(bin, outDir string, lists []floorList) (*floorRunner, error) {
	if len(lists) == 0 {
		return nil, fmt.Errorf("the in-process scan sent no LIST to measure the floor with")
	}
	data, err := json.Marshal(lists)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(outDir, "floor-lists.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return nil, err
	}
	return &floorRunner{bin: bin, listsFile: file, lists: len(lists)}, nil
}

// floorRun is one run of the floor.
type floorRun struct {
	proc   process
	server ServerCost
	pages  int64
	bytes  int64
}

// args is the floor's command line for the bed's cluster.
func (f *floorRunner) args(b *bed) []string {
	return []string{"-kubeconfig", b.env.Kubeconfig, "-lists", f.listsFile, "-concurrency", strconv.Itoa(scannerListWorkers)}
}

// scannerListWorkers is how many LISTs the scanner runs at once
// (scanner's listWorkers): the floor runs as many.
const scannerListWorkers = 4

// run times the floor once.
func (f *floorRunner) run(ctx context.Context, l *launcher, b *bed) (floorRun, error) {
	var out, stderr bytes.Buffer
	var p process
	cost, err := b.cp.measure(func() error {
		var err error
		p, err = l.measure(ctx, f.bin, f.args(b), &out, &stderr, os.Environ())
		return err
	})
	if err != nil {
		return floorRun{}, err
	}
	if p.ExitCode != 0 {
		return floorRun{}, fmt.Errorf("listfloor exited %d: %s", p.ExitCode, stderr.String())
	}
	var r struct {
		Pages, Bytes int64
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return floorRun{}, fmt.Errorf("listfloor result %q: %w", out.String(), err)
	}
	return floorRun{proc: p, server: cost, pages: r.Pages, bytes: r.Bytes}, nil
}

// summary is the median of the runs as a Floor.
func (f *floorRunner) summary(b *bed, runs []floorRun) *Floor {
	if len(runs) == 0 {
		return nil
	}
	walls := make([]time.Duration, len(runs))
	for i, r := range runs {
		walls[i] = r.proc.Wall
	}
	m := runs[median(walls)]
	fl := &Floor{Command: append([]string{"listfloor"}, f.args(b)...), Lists: f.lists, Pages: m.pages, Bytes: m.bytes,
		WallSeconds: m.proc.Wall.Seconds(), CPUSeconds: m.proc.CPU.Seconds(), MaxRSSMiB: mib(m.proc.MaxRSS)}
	if b.cp != nil {
		s := m.server
		fl.Server = &s
	}
	if len(runs) > 1 {
		for _, w := range walls {
			fl.RunsWallSeconds = append(fl.RunsWallSeconds, w.Seconds())
		}
	}
	return fl
}

// CPUBound is the least wall time this machine's cores allow a run: its
// own CPU seconds and the control plane's during it, over the cores. On a
// machine whose control plane shares the scan's cores, every run is
// bound by it as well as by the LIST floor, and the floor program itself
// is too (it decrypts and inflates what the API server spends CPU to
// send): a run near its bound is waiting on no one, and only less CPU,
// the scan's or the API server's, makes it faster. Housekeeping of the
// control plane during the run is included: it takes the same cores.
type CPUBound struct {
	// CPUs is how many cores the machine has.
	CPUs    int     `json:"cpus"`
	Seconds float64 `json:"seconds"`
	// Over is the run's wall time over Seconds.
	Over float64 `json:"over"`
	// FloorSeconds and FloorOver are the same of the floor timed in turn
	// with the run.
	FloorSeconds float64 `json:"floorSeconds"`
	FloorOver    float64 `json:"floorOver"`
}

// cpuBound is t's CPUBound and fl's, on this machine's cores; nil without
// the control plane's cost of both.
func cpuBound(t Tool, fl *Floor) *CPUBound {
	if t.Server == nil || fl == nil || fl.Server == nil {
		return nil
	}
	cpus := runtime.NumCPU()
	b := &CPUBound{
		CPUs:         cpus,
		Seconds:      (t.CPUSeconds + t.Server.CPUSeconds()) / float64(cpus),
		FloorSeconds: (fl.CPUSeconds + fl.Server.CPUSeconds()) / float64(cpus),
	}
	b.Over, b.FloorOver = ratio(t.WallSeconds, b.Seconds), ratio(fl.WallSeconds, b.FloorSeconds)
	return b
}

// boundText says where a run stands against its CPU bound and the floor
// against its own, for the tables' lines.
func boundText(b *CPUBound) string {
	if b == nil {
		return ""
	}
	return fmt.Sprintf("; CPU bound %.2fs (its CPU and the control plane's over %d cores), %.2fx it; the floor %.2fx its own (%.2fs)", b.Seconds, b.CPUs, b.Over, b.FloorOver, b.FloorSeconds)
}
