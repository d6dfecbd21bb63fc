package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
	"k8s.io/apimachinery/pkg/types"
)

// Warm is driftscan with the scan cache a scheduled scan has
// (docs/cache.md): one run fills an empty cache, then runs are timed with
// it, each in turn with the LIST floor and each after one object was
// written and put back (toucher), as a live cluster always has written
// something since the last scan. Every other timing of the bench is of a
// scan with --no-cache.
type Warm struct {
	// Fill is the run that found the cache empty and filled it.
	Fill Tool `json:"fill"`
	// Warm is the median run with the filled cache; Floor the floor timed
	// in turn with it, FloorRatios Warm's wall time over it (settled).
	Warm  Tool   `json:"warm"`
	Floor *Floor `json:"floor,omitempty"`
	FloorRatios
	// Bound is the warm run's and its floor's CPU bound (CPUBound).
	Bound *CPUBound `json:"cpuBound,omitempty"`
	// InSync counts the objects the warm run found in sync without a
	// compare (its report's stats.cache.inSync).
	InSync int `json:"inSync"`
}

// timeWarm times driftscan with a cache of its own in outDir, and checks
// that it reports what the cold run (cold, its report) did.
func timeWarm(ctx context.Context, l *launcher, bin string, b *bed, outDir string, runs int, floor *floorRunner, cold *report.Report) (*Warm, error) {
	dir := filepath.Join(outDir, "scan-cache")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	fill, _, _, err := timeDriftscan(ctx, l, bin, b, outDir, 1, nil, "--cache-dir", dir)
	if err != nil {
		return nil, fmt.Errorf("the run that fills the cache: %w", err)
	}
	b.beforeRun = toucher(b)
	if b.beforeRun == nil {
		say("no ConfigMap of the estate is in sync to write before each warm run: the warm runs follow no write")
	}
	warm, fl, r, err := timeDriftscan(ctx, l, bin, b, outDir, runs, floor, "--cache-dir", dir)
	b.beforeRun = nil
	if err != nil {
		return nil, fmt.Errorf("the runs with the cache: %w", err)
	}
	if got, want := findingsOf(r), findingsOf(cold); got != want {
		return nil, fmt.Errorf("with the cache driftscan reported %s, without it %s", got, want)
	}
	out := &Warm{Fill: fill, Warm: warm, Floor: fl}
	if r.Stats != nil && r.Stats.Cache != nil {
		out.InSync = r.Stats.Cache.InSync
	}
	if fl != nil {
		out.Bound = cpuBound(warm, fl)
	}
	return out, nil
}

// touchAnnotation is what toucher writes and takes away again.
const touchAnnotation = "bench.driftscan.dev/touched"

// toucher returns what writes one object of b's estate before each warm
// run, as a live cluster always has written something since the last
// scan: a ConfigMap no actor drifts gets an annotation from the manager
// bench-touch and loses it again. It ends as it was, in sync, under a new
// resourceVersion (bench-touch owns nothing after and leaves
// managedFields), so the warm run compares it again and writes its
// verdict file anew, as a scheduled scan of a live cluster does
// (docs/verified.md), and reports what the cold run did.
// It returns nil when every ConfigMap is drifted.
func toucher(b *bed) func(context.Context) error {
	for _, u := range b.est.Objects {
		if u.GetKind() != "ConfigMap" || b.plan[ref(u)] != "" {
			continue
		}
		ns, name, n := u.GetNamespace(), u.GetName(), 0
		return func(ctx context.Context) error {
			n++
			for _, v := range []string{strconv.Quote(strconv.Itoa(n)), "null"} {
				patch := `{"metadata":{"annotations":{"` + touchAnnotation + `":` + v + `}}}`
				if _, err := b.env.PatchAs(ctx, "bench-touch", cluster.ConfigMap, ns, name, types.MergePatchType, patch); err != nil {
					return fmt.Errorf("touch ConfigMap %s/%s before a warm run: %w", ns, name, err)
				}
			}
			return nil
		}
	}
	return nil
}

// settleFloors gives the cold scans' floor and the warm ones' the
// fastest run of either (Floor.EstateFastestSeconds), and the warm scans
// their FloorRatios over it; the cold scans' are the caller's. In make
// bench at 68ccadc the API server's collection fell in all three floor
// runs beside the warm 20k scans (0.81-0.92 s, the control plane 0.98-1.17
// CPU s), which then met 1.5x by both ratios (1.34x, 1.31x); the same
// LISTs beside the cold scans a minute before took 0.53-0.64 s.
func settleFloors(coldFloor *Floor, w *Warm) {
	if coldFloor == nil || w.Floor == nil {
		return
	}
	f := min(fastest(coldFloor.RunsWallSeconds, coldFloor.WallSeconds), fastest(w.Floor.RunsWallSeconds, w.Floor.WallSeconds))
	coldFloor.EstateFastestSeconds, w.Floor.EstateFastestSeconds = f, f
	w.FloorRatios = floorRatios(w.Warm, w.Floor)
}

// findingsOf sums up a report for comparing two scans of one estate: each
// object's status and findings (path, class, values) and the dismissals.
func findingsOf(r *report.Report) string {
	var b strings.Builder
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			fmt.Fprintf(&b, "%s/%s/%s %s;", o.Kind, o.Namespace, o.Name, o.Status)
			for _, f := range o.Findings {
				fmt.Fprintf(&b, " %s %s %s %q %q;", f.Path, f.Type, f.Class, f.Git, f.Live)
			}
		}
	}
	if r.Stats != nil {
		fmt.Fprintf(&b, " dismissed %v", r.Stats.Dismissed)
	}
	return fmt.Sprintf("%d objects, %d findings (digest %x)", r.Summary.Objects, r.Summary.Findings, sha256.Sum256([]byte(b.String())))
}
