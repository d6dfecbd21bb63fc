package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// errNoSizes is returned when -scaling has nothing to measure.
var errNoSizes = errors.New("-scaling-sizes is empty")

// scaling times driftscan alone at each of o.ScalingSizes objects, each on
// a fresh control plane holding only that estate, with apps in the same
// proportion to objects as the main run and the same namespaces. The main
// run's figures stand for its own size, unless mix: then every estate is
// a mixed one (estateSpec.Mix). It returns the points measured before any
// error.
func scaling(ctx context.Context, o Options, l *launcher, floorBin, bin, tmp string, main *Result, mix bool) ([]ScalePoint, error) {
	sizes := slices.Clone(o.ScalingSizes)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	if len(sizes) == 0 {
		return nil, errNoSizes
	}
	var out []ScalePoint
	for _, n := range sizes {
		if n == main.Objects && !mix {
			p := newScalePoint(main.Driftscan, main.Floor, main.Apps, main.ApplySeconds)
			p.Warm = main.Warm
			out = append(out, p)
			continue
		}
		apps := min(max(1, int(math.Round(float64(n)*float64(o.Apps)/float64(o.Objects)))), n)
		nss := min(o.Namespaces, apps)
		spec := estateSpec{Objects: n, Apps: apps, Namespaces: nss, WebhookNamespaces: min(o.WebhookNamespaces, nss), Prefix: fmt.Sprintf("s%d-", n), Mix: mix}
		name := fmt.Sprintf("scale-%d", n)
		if mix {
			spec.Prefix, name = fmt.Sprintf("m%d-", n), fmt.Sprintf("mixed-%d", n)
			say("mixed: %d objects in %d apps, a third of them Helm charts and a third kustomizations", n, apps)
		} else {
			say("scaling: %d objects in %d apps", n, apps)
		}
		p, hp, err := scalePoint(ctx, o, l, floorBin, bin, filepath.Join(tmp, name), spec)
		if err != nil {
			return out, fmt.Errorf("%d objects: %w", n, err)
		}
		out = append(out, p)
		if hp != nil && !mix {
			main.Heap = hp
		}
	}
	return out, nil
}

// scalePoint builds one estate on its own control plane, logs the scan's
// requests in process, times the LIST floor and the scan in turn (and takes
// the heap profile when asked for at this size), and removes it again.
func scalePoint(ctx context.Context, o Options, l *launcher, floorBin, bin, dir string, spec estateSpec) (ScalePoint, *HeapProfile, error) {
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	b, err := newBed(ctx, dir, spec, o.DriftPercent, o.Workers, false)
	if err != nil {
		return ScalePoint{}, nil, err
	}
	defer b.Close()
	return measurePoint(ctx, o, l, floorBin, bin, b, dir, spec)
}

// measurePoint is scalePoint's work on an estate already built in dir.
func measurePoint(ctx context.Context, o Options, l *launcher, floorBin, bin string, b *bed, dir string, spec estateSpec) (ScalePoint, *HeapProfile, error) {
	outDir := filepath.Join(dir, "out")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return ScalePoint{}, nil, err
	}
	req, err := scanInProcess(ctx, b, "")
	if err != nil {
		return ScalePoint{}, nil, err
	}
	floor, err := newFloorRunner(floorBin, outDir, req.firstPages)
	if err != nil {
		return ScalePoint{}, nil, err
	}
	t, fl, rep, err := timeDriftscan(ctx, l, bin, b, outDir, o.Runs, floor)
	if err != nil {
		return ScalePoint{}, nil, err
	}
	if a := agree(rep, nil, b.plan); len(a.Missed)+len(a.Unexpected) > 0 {
		say("warning: at %d objects driftscan missed %d drifted objects%s and reported %d others%s",
			spec.Objects, len(a.Missed), sample(a.Missed), len(a.Unexpected), sample(a.Unexpected))
	}
	warm, err := timeWarm(ctx, l, bin, b, outDir, o.Runs, floor, rep)
	if err != nil {
		return ScalePoint{}, nil, err
	}
	settleFloors(fl, warm)
	var hp *HeapProfile
	if o.HeapProfile != "" && spec.Objects == o.HeapProfileObjects {
		if hp, err = profileHeap(ctx, b, o.HeapProfile); err != nil {
			return ScalePoint{}, nil, err
		}
	}
	p := newScalePoint(t, fl, spec.Apps, b.ApplySeconds)
	p.Warm = warm
	return p, hp, nil
}

// newScalePoint is one size's row from driftscan's and the floor's runs.
func newScalePoint(t Tool, fl *Floor, apps int, applySeconds float64) ScalePoint {
	p := ScalePoint{Objects: t.Objects, Apps: apps, Findings: t.Findings, DriftedObjects: t.DriftedObjects,
		WallSeconds: t.WallSeconds, APIRequests: t.APIRequests, MaxRSSMiB: t.MaxRSSMiB, CPUSeconds: t.CPUSeconds,
		MicrosPerObject: t.WallSeconds / float64(max(1, t.Objects)) * 1e6, ApplySeconds: applySeconds,
		Server: t.Server, LoadAverage: loadAverage()}
	if fl != nil {
		p.FloorWallSeconds, p.FloorRatios = fl.WallSeconds, floorRatios(t, fl)
		p.FloorServer = fl.Server
		p.Bound = cpuBound(t, fl)
	}
	return p
}
