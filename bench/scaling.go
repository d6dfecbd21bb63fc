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
// run's figures stand for its own size. It returns the points measured
// before any error.
func scaling(ctx context.Context, o Options, l *launcher, bin, tmp string, main *Result) ([]ScalePoint, error) {
	sizes := slices.Clone(o.ScalingSizes)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	if len(sizes) == 0 {
		return nil, errNoSizes
	}
	var out []ScalePoint
	for _, n := range sizes {
		if n == main.Objects {
			d := main.Driftscan
			out = append(out, ScalePoint{Objects: n, Apps: main.Apps, Findings: d.Findings, DriftedObjects: d.DriftedObjects,
				WallSeconds: d.WallSeconds, APIRequests: d.APIRequests, MaxRSSMiB: d.MaxRSSMiB,
				MicrosPerObject: d.WallSeconds / float64(n) * 1e6, ApplySeconds: main.ApplySeconds})
			continue
		}
		apps := min(max(1, int(math.Round(float64(n)*float64(o.Apps)/float64(o.Objects)))), n)
		nss := min(o.Namespaces, apps)
		spec := estateSpec{Objects: n, Apps: apps, Namespaces: nss, WebhookNamespaces: min(o.WebhookNamespaces, nss), Prefix: fmt.Sprintf("s%d-", n)}
		say("scaling: %d objects in %d apps", n, apps)
		p, err := scalePoint(ctx, o, l, bin, filepath.Join(tmp, fmt.Sprintf("scale-%d", n)), spec)
		if err != nil {
			return out, fmt.Errorf("%d objects: %w", n, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// scalePoint builds one estate on its own control plane, scans it and
// removes it again.
func scalePoint(ctx context.Context, o Options, l *launcher, bin, dir string, spec estateSpec) (ScalePoint, error) {
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	b, err := newBed(ctx, dir, spec, o.DriftPercent, o.Workers, false)
	if err != nil {
		return ScalePoint{}, err
	}
	defer b.Close()
	outDir := filepath.Join(dir, "out")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return ScalePoint{}, err
	}
	t, rep, err := timeDriftscan(ctx, l, bin, b, outDir, o.Runs)
	if err != nil {
		return ScalePoint{}, err
	}
	if a := agree(rep, nil, b.plan); len(a.Missed)+len(a.Unexpected) > 0 {
		say("warning: at %d objects driftscan missed %d drifted objects%s and reported %d others%s",
			spec.Objects, len(a.Missed), sample(a.Missed), len(a.Unexpected), sample(a.Unexpected))
	}
	return ScalePoint{Objects: t.Objects, Apps: spec.Apps, Findings: t.Findings, DriftedObjects: t.DriftedObjects,
		WallSeconds: t.WallSeconds, APIRequests: t.APIRequests, MaxRSSMiB: t.MaxRSSMiB,
		MicrosPerObject: t.WallSeconds / float64(t.Objects) * 1e6, ApplySeconds: b.ApplySeconds}, nil
}
