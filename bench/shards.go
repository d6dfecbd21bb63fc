package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// ShardRun is a sharded scan of a large estate next to a scan of a quarter
// (1/Shards) of it: whether splitting the apps between the pods of an
// Indexed Job (`--shard i/N`) costs each pod no more than scanning its
// share alone. Shards split by namespace (the default, -shard-by) each list
// only their own namespaces; split by app, each reads every object of the
// kinds it lists (its apps span every namespace) and drops the other
// shards'.
type ShardRun struct {
	Objects int `json:"objects"`
	Apps    int `json:"apps"`
	Shards  int `json:"shards"`
	// By is the --shard-by of the shards.
	By string `json:"by"`
	// Each shard, run one after another as pods on their own nodes would
	// run at once; with -runs, round after round, and each figure is of the
	// shard's median run.
	Each []ShardPoint `json:"each"`
	// MaxWallSeconds is the slowest shard: the Job's wall time.
	MaxWallSeconds float64 `json:"maxWallSeconds"`
	// Covered: every object of the estate was scanned by exactly one shard.
	Covered bool `json:"covered"`
	// Share is the scan of an estate of Objects/Shards objects alone.
	Share ScalePoint `json:"share"`
	// ShareInTurn is the share's scan run once in every round of the
	// shards, its control plane up beside theirs, so that what the machine
	// does over those minutes falls on both alike; its figures are of its
	// median run.
	ShareInTurn ShardPoint `json:"shareInTurn"`
	// Ratio is MaxWallSeconds over ShareInTurn's wall time.
	Ratio float64 `json:"ratio"`
}

// ShardPoint is one shard's scan.
type ShardPoint struct {
	Shard       string  `json:"shard"`
	Objects     int     `json:"objects"`
	WallSeconds float64 `json:"wallSeconds"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	MaxRSSMiB   float64 `json:"maxRssMiB"`
	APIRequests int64   `json:"apiRequests"`
	// RunsWallSeconds are the wall times of every run, with -runs above 1.
	RunsWallSeconds []float64 `json:"runsWallSeconds,omitempty"`
	// LoadAverage is the 1-minute load when the shard was done.
	LoadAverage string `json:"loadAverage,omitempty"`
	// ControlPlaneCPUSeconds is what the shard cost kube-apiserver and etcd.
	ControlPlaneCPUSeconds float64 `json:"controlPlaneCpuSeconds"`
}

// shardRun builds an estate of o.ShardObjects objects, scans it as
// o.Shards shards, then builds one of a share of it and scans that alone.
func shardRun(ctx context.Context, o Options, l *launcher, floorBin, bin, tmp string) (*ShardRun, error) {
	n, k := o.ShardObjects, o.Shards
	apps := min(max(k, int(math.Round(float64(n)*float64(o.Apps)/float64(o.Objects)))), n)
	nss := min(o.Namespaces, apps)
	run := &ShardRun{Objects: n, Apps: apps, Shards: k, By: o.ShardBy}
	spec := estateSpec{Objects: n, Apps: apps, Namespaces: nss, WebhookNamespaces: min(o.WebhookNamespaces, nss), Prefix: fmt.Sprintf("sh%d-", n)}
	say("shards: %d objects in %d apps, %d shards", n, apps, k)
	dir := filepath.Join(tmp, fmt.Sprintf("shards-%d", n))
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	// The share's estate is built first and stays up while the shards
	// run: a scan's own CPU for the same work moved by a quarter from one
	// quarter of an hour to the next on this machine (a cold 25,000-object
	// scan took 3.4 to 5.1 CPU s), so a share timed after the shards could
	// differ from them by that alone.
	share := estateSpec{Objects: n / k, Apps: max(1, apps/k), Namespaces: nss, WebhookNamespaces: spec.WebhookNamespaces, Prefix: fmt.Sprintf("sq%d-", n/k)}
	share.Namespaces = min(share.Namespaces, share.Apps)
	say("shards: the share alone, %d objects in %d apps", share.Objects, share.Apps)
	shareDir := filepath.Join(tmp, fmt.Sprintf("share-%d", n/k))
	if !o.Keep {
		defer os.RemoveAll(shareDir)
	}
	sb, err := newBed(ctx, shareDir, share, o.DriftPercent, o.Workers, false)
	if err != nil {
		return nil, fmt.Errorf("the share alone: %w", err)
	}
	defer sb.Close()
	shareOut := filepath.Join(shareDir, "out-in-turn")
	if err := os.MkdirAll(shareOut, 0o755); err != nil {
		return nil, err
	}

	b, err := newBed(ctx, dir, spec, o.DriftPercent, o.Workers, false)
	if err != nil {
		return nil, err
	}
	// Round after round, the share once and each shard once, so what the
	// machine does over time (a neighbour's load, an etcd compaction)
	// falls on every shard and the share alike; each round takes the
	// shards in an order of its own, drawn at random, so that work the
	// control plane does every few runs (its collector) does not fall on
	// one shard's every run. Taking each round one shard further on did
	// not do that: a 100k-object API server that collected its heap about
	// every sixth run slowed the same shard in two rounds of three
	// (docs/benchmark.md, fifteenth pass). Each shard's figures, and the
	// share's, are of its median run.
	seen := map[string]int{}
	runs := make([][]Tool, k)
	var shareRuns []Tool
	for round := 0; round < max(1, o.Runs); round++ {
		t, _, _, err := timeDriftscan(ctx, l, bin, sb, shareOut, 1, nil)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("the share alone: %w", err)
		}
		shareRuns = append(shareRuns, t)
		order := rand.Perm(k)
		say("shards: round %d takes the shards in the order %v, after the share", round+1, order)
		for _, i := range order {
			outDir := filepath.Join(dir, fmt.Sprintf("out-%d", i))
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				b.Close()
				return nil, err
			}
			sh := fmt.Sprintf("%d/%d", i, k)
			t, _, r, err := timeDriftscan(ctx, l, bin, b, outDir, 1, nil, "--shard", sh, "--shard-by", o.ShardBy)
			if err != nil {
				b.Close()
				return nil, fmt.Errorf("shard %s: %w", sh, err)
			}
			if round == 0 {
				for _, a := range r.Apps {
					for _, obj := range a.Objects {
						seen[obj.Ref()]++
					}
				}
			}
			runs[i] = append(runs[i], t)
		}
	}
	for i, ts := range runs {
		p := shardPoint(fmt.Sprintf("%d/%d", i, k), ts)
		run.Each = append(run.Each, p)
		run.MaxWallSeconds = max(run.MaxWallSeconds, p.WallSeconds)
	}
	run.Covered = len(seen) == len(b.est.Objects)
	for _, c := range seen {
		run.Covered = run.Covered && c == 1
	}
	b.Close()
	run.ShareInTurn = shardPoint("share", shareRuns)
	run.Ratio = ratio(run.MaxWallSeconds, run.ShareInTurn.WallSeconds)

	// The share's own row (its floor, its warm scans), with the shards'
	// control plane gone.
	p, _, err := measurePoint(ctx, Options{Keep: o.Keep, DriftPercent: o.DriftPercent, Workers: o.Workers, Runs: o.Runs}, l, floorBin, bin, sb, shareDir, share)
	if err != nil {
		return run, fmt.Errorf("the share alone: %w", err)
	}
	run.Share = p
	return run, nil
}

// shardPoint is one shard's median run of ts, with every run's wall time.
func shardPoint(shard string, ts []Tool) ShardPoint {
	var walls []float64
	for _, t := range ts {
		walls = append(walls, t.WallSeconds)
	}
	sorted := slices.Clone(ts)
	slices.SortFunc(sorted, func(a, b Tool) int { return cmp.Compare(a.WallSeconds, b.WallSeconds) })
	t := sorted[len(sorted)/2]
	p := ShardPoint{Shard: shard, Objects: t.Objects, WallSeconds: t.WallSeconds, CPUSeconds: t.CPUSeconds, MaxRSSMiB: t.MaxRSSMiB, APIRequests: t.APIRequests,
		LoadAverage: loadAverage()}
	if len(walls) > 1 {
		p.RunsWallSeconds = walls
	}
	if t.Server != nil {
		p.ControlPlaneCPUSeconds = t.Server.CPUSeconds()
	}
	return p
}

// print writes the sharded run.
func (s *ShardRun) print(w io.Writer) {
	fmt.Fprintf(w, "\nSharded: %d objects in %d apps as %d shards by %s, one after another (each pod on its own node):\n", s.Objects, s.Apps, s.Shards, s.By)
	for _, p := range s.Each {
		fmt.Fprintf(w, "  shard %s: %d objects, %.2fs wall (runs %v), %.2f CPU s, %.0f MiB, %d requests, control plane %.2f CPU s, load %s\n", p.Shard, p.Objects, p.WallSeconds, p.RunsWallSeconds, p.CPUSeconds, p.MaxRSSMiB, p.APIRequests, p.ControlPlaneCPUSeconds, p.LoadAverage)
	}
	fmt.Fprintf(w, "  slowest shard %.2fs; every object in exactly one shard: %v\n", s.MaxWallSeconds, s.Covered)
	fmt.Fprintf(w, "  the share alone (%d objects), in turn with the shards: %.2fs wall (runs %v), %.2f CPU s, %.0f MiB, control plane %.2f CPU s; slowest shard / share = %.2fx\n",
		s.ShareInTurn.Objects, s.ShareInTurn.WallSeconds, s.ShareInTurn.RunsWallSeconds, s.ShareInTurn.CPUSeconds, s.ShareInTurn.MaxRSSMiB, s.ShareInTurn.ControlPlaneCPUSeconds, s.Ratio)
	fmt.Fprintf(w, "  the share alone after them, the shards' control plane gone: %.2fs wall, %.2f CPU s, %.0f MiB\n",
		s.Share.WallSeconds, s.Share.CPUSeconds, s.Share.MaxRSSMiB)
}
