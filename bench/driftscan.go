package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/calricon/driftscan/report"
)

// Tool is what one tool cost and found on the estate (the median of Runs).
type Tool struct {
	Version string   `json:"version,omitempty"`
	Command []string `json:"command"`
	Objects int      `json:"objects"`
	// Findings counts driftscan's findings that are not ignored; kubectl has
	// none to count.
	Findings int `json:"findings,omitempty"`
	// FindingsByClass splits driftscan's findings by class.
	FindingsByClass map[report.Class]int `json:"findingsByClass,omitempty"`
	// Dismissed counts the differences driftscan dismissed as no drift, by
	// reason: what a naive compare would have reported on this estate.
	Dismissed report.Dismissed `json:"dismissed,omitempty"`
	// DriftedObjects counts objects driftscan reports Drifted, or kubectl
	// shows a diff for.
	DriftedObjects int     `json:"driftedObjects"`
	WallSeconds    float64 `json:"wallSeconds"`
	APIRequests    int64   `json:"apiRequests"`
	// RequestsByVerb splits APIRequests where the tool's log tells the verb.
	RequestsByVerb map[string]int64 `json:"requestsByVerb,omitempty"`
	MaxRSSMiB      float64          `json:"maxRssMiB"`
	// MaxAnonMiB is the peak anonymous RSS (heap and stacks, sampled):
	// MaxRSSMiB without the binary's own mapped pages.
	MaxAnonMiB float64 `json:"maxAnonMiB"`
	// CPUSeconds is the tool's own CPU time (user and system).
	CPUSeconds float64 `json:"cpuSeconds"`
	// Server is what the run cost kube-apiserver and etcd.
	Server *ServerCost `json:"server,omitempty"`
	// RSSFloorMiB is the launcher's own peak RSS, below which MaxRSSMiB
	// cannot go (see bench/rusage).
	RSSFloorMiB float64 `json:"rssFloorMiB"`
	ExitCode    int     `json:"exitCode"`
	// RunsWallSeconds lists every run's wall time when there was more than one.
	RunsWallSeconds []float64 `json:"runsWallSeconds,omitempty"`
}

// timeDriftscan runs `driftscan scan` over the estate runs times as a child
// process and returns the median run and its report. With a floor, each
// run has a run of the LIST floor right before or right after it, at
// random, so that both see the same load on the machine; the floor's
// median is returned too. The order is drawn for each pair because the
// API server collects its heap every other LIST set or so: with the floor
// always first, the collection fell on the scan's run every time in a
// run of the bench (control plane 0.44 CPU s during two of three scans,
// 0.22 during the floors; docs/benchmark.md, fifteenth pass).
func timeDriftscan(ctx context.Context, l *launcher, bin string, b *bed, outDir string, runs int, floor *floorRunner, extra ...string) (Tool, *Floor, *report.Report, error) {
	t := Tool{Version: toolVersion(ctx, bin, "version")}
	var walls []time.Duration
	var procs []process
	var costs []ServerCost
	var reports []*report.Report
	var floors []floorRun
	for i := 0; i < runs; i++ {
		runFloor := func() error {
			fr, err := floor.run(ctx, l, b)
			if err != nil {
				return err
			}
			say("LIST floor run %d: %.2fs (%.2f CPU s), %d pages, %.1f MiB read, %.0f MiB, control plane %.2f CPU s", i+1, fr.proc.Wall.Seconds(), fr.proc.CPU.Seconds(), fr.pages, mib(fr.bytes), mib(fr.proc.MaxRSS), fr.server.CPUSeconds())
			floors = append(floors, fr)
			return nil
		}
		if b.beforeRun != nil {
			if err := b.beforeRun(ctx); err != nil {
				return t, nil, nil, err
			}
		}
		floorAfter := floor != nil && rand.IntN(2) == 1
		if floor != nil && !floorAfter {
			if err := runFloor(); err != nil {
				return t, nil, nil, err
			}
		}
		name := fmt.Sprintf("driftscan-%s%d", runLabel(extra), i)
		file := filepath.Join(outDir, name+".json")
		errFile := filepath.Join(outDir, name+".stderr")
		args := append([]string{"scan", "--kubeconfig", b.env.Kubeconfig, "--config", b.est.Config, "-o", "json=" + file, "--fail-on", "none", "--quiet"}, extra...)
		if !slices.Contains(extra, "--cache-dir") {
			// Each run compares everything, as the first scheduled scan
			// does; timeWarm times the runs after.
			args = append(args, "--no-cache")
		}
		t.Command = append([]string{"driftscan"}, args...)
		stderr, err := os.Create(errFile)
		if err != nil {
			return t, nil, nil, err
		}
		var p process
		cost, err := b.cp.measure(func() error {
			var err error
			p, err = l.measure(ctx, bin, args, io.Discard, stderr, os.Environ())
			return err
		})
		_ = stderr.Close()
		if err != nil {
			return t, nil, nil, err
		}
		if p.ExitCode != 0 {
			return t, nil, nil, fmt.Errorf("driftscan exited %d:\n%s", p.ExitCode, tail(errFile, 20))
		}
		r, err := readReport(file)
		if err != nil {
			return t, nil, nil, err
		}
		say("driftscan run %d: %.2fs (%.2f CPU s), %d requests, %.0f MiB, control plane %.2f CPU s", i+1, p.Wall.Seconds(), p.CPU.Seconds(), r.Stats.APIRequests, mib(p.MaxRSS), cost.CPUSeconds())
		walls, procs, costs, reports = append(walls, p.Wall), append(procs, p), append(costs, cost), append(reports, r)
		if floorAfter {
			if err := runFloor(); err != nil {
				return t, nil, nil, err
			}
		}
	}
	m := median(walls)
	p, r := procs[m], reports[m]
	if b.cp != nil {
		t.Server = &costs[m]
	}
	t.Objects, t.Findings, t.DriftedObjects = r.Summary.Objects, r.Summary.Findings, r.Summary.Drifted
	t.FindingsByClass = r.Summary.ByClass
	t.Dismissed = r.Stats.Dismissed
	t.WallSeconds, t.MaxRSSMiB, t.RSSFloorMiB, t.ExitCode = p.Wall.Seconds(), mib(p.MaxRSS), mib(p.Floor), p.ExitCode
	t.MaxAnonMiB = mib(p.MaxAnon)
	t.CPUSeconds = p.CPU.Seconds()
	t.APIRequests = r.Stats.APIRequests
	if runs > 1 {
		for _, w := range walls {
			t.RunsWallSeconds = append(t.RunsWallSeconds, w.Seconds())
		}
	}
	var fl *Floor
	if floor != nil {
		fl = floor.summary(b, floors)
	}
	if r.Summary.Errors > 0 {
		return t, fl, r, fmt.Errorf("driftscan reported %d errors: %s", r.Summary.Errors, firstErrors(r))
	}
	return t, fl, r, nil
}

// runLabel names the files of runs with extra flags apart: the flags'
// names, without dashes.
func runLabel(extra []string) string {
	var b strings.Builder
	for _, a := range extra {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			b.WriteString(name + "-")
		}
	}
	return b.String()
}

func readReport(path string) (*report.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read driftscan report: %w", err)
	}
	var r report.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("parse driftscan report %s: %w", path, err)
	}
	if r.Stats == nil {
		r.Stats = &report.Stats{}
	}
	return &r, nil
}

// firstErrors names a few of the report's errors.
func firstErrors(r *report.Report) string {
	var out []string
	out = append(out, r.Errors...)
	for _, a := range r.Apps {
		if a.Error != "" {
			out = append(out, a.Error)
		}
		for _, o := range a.Objects {
			if o.Error != "" {
				out = append(out, o.Error)
			}
		}
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return strings.Join(out, "; ")
}

// toolVersion runs a tool's version command and returns its first line.
func toolVersion(ctx context.Context, bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
