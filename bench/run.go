package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// run builds the main estate, times both tools on it, checks that they
// agree and, with o.Scaling, times driftscan alone at other sizes. The
// control planes it starts are stopped and the temporary folder removed
// before it returns, whatever happens.
func run(ctx context.Context, o Options) (err error) {
	driftscan, err := filepath.Abs(o.Driftscan)
	if err != nil {
		return err
	}
	if _, err := os.Stat(driftscan); err != nil {
		return fmt.Errorf("driftscan binary (run `make build`): %w", err)
	}
	kubectl, skipped := findKubectl(ctx, o.Kubectl)
	if skipped != "" {
		say("kubectl diff is SKIPPED: %s", skipped)
	}
	tmp, err := os.MkdirTemp("", "driftscan-bench-")
	if err != nil {
		return err
	}
	if o.Keep {
		say("keeping the repository and outputs in %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	outDir := filepath.Join(tmp, "out")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	binDir := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	if driftscan, err = stageBinary(driftscan, binDir); err != nil {
		return err
	}
	if kubectl != "" {
		if kubectl, err = stageBinary(kubectl, binDir); err != nil {
			return err
		}
	}
	l := &launcher{path: o.Rusage, dir: outDir, limitAS: o.LimitAS}
	if o.Rusage == "" {
		if l.path, err = buildTool(ctx, outDir, "./bench/rusage"); err != nil {
			return err
		}
	}
	floorBin := o.ListFloor
	if floorBin == "" {
		if floorBin, err = buildTool(ctx, outDir, "./bench/listfloor"); err != nil {
			return err
		}
	}

	// With -serve, -mix serves a mixed estate (nothing compares it with kubectl).
	spec := estateSpec{Objects: o.Objects, Apps: o.Apps, Namespaces: o.Namespaces, WebhookNamespaces: o.WebhookNamespaces, Prefix: "bench-", Mix: o.Serve && o.Mix}
	b, err := newBed(ctx, filepath.Join(tmp, "main"), spec, o.DriftPercent, o.Workers, o.Audit)
	if err != nil {
		return err
	}
	defer b.Close()
	if o.Latency > 0 {
		if err := b.delay(ctx, o.Latency); err != nil {
			return err
		}
	}
	if o.Serve {
		say("serving until Ctrl-C or -timeout; scan it with:\n  %s scan --kubeconfig %s --config %s", driftscan, b.env.Kubeconfig, b.est.Config)
		<-ctx.Done()
		return nil
	}

	res := &Result{LatencySeconds: o.Latency.Seconds(), Date: time.Now().UTC(), Objects: len(b.est.Objects), Apps: o.Apps, Namespaces: o.Namespaces, ApplySeconds: b.ApplySeconds, Drift: b.plan.count()}
	if b.cp != nil {
		res.ControlPlaneIdleCPU = b.cp.idlePerSecond
	}

	// The request log first: the floor sends the same LISTs.
	say("scanning in process to log every request...")
	req, err := scanInProcess(ctx, b, o.CPUProfile)
	if err != nil {
		return err
	}
	res.Requests = &req
	if o.CPUProfile != "" {
		say("CPU profile of the scan: %s (go tool pprof -top %s)", o.CPUProfile, o.CPUProfile)
	}
	floor, err := newFloorRunner(floorBin, outDir, req.firstPages)
	if err != nil {
		return err
	}

	res.Machine = machine(b.ServerVersion)
	say("timing the LIST floor and driftscan scan (%d run(s) each, in turn)...", o.Runs)
	ds, fl, rep, err := timeDriftscan(ctx, l, driftscan, b, outDir, o.Runs, floor)
	if err != nil {
		return err
	}
	res.Driftscan, res.Floor = ds, fl
	res.Bound = cpuBound(ds, fl)
	say("timing driftscan scan with the scan cache (one run fills it, %d run(s) use it, in turn with the floor)...", o.Runs)
	if res.Warm, err = timeWarm(ctx, l, driftscan, b, outDir, o.Runs, floor, rep); err != nil {
		return err
	}
	settleFloors(fl, res.Warm)
	res.FloorRatios = floorRatios(ds, fl)
	if o.BinaryProfile != "" {
		if _, _, _, err := timeDriftscan(ctx, l, driftscan, b, outDir, 1, nil, "--profile", "cpu", "--profile-output", o.BinaryProfile); err != nil {
			return fmt.Errorf("the profiled run: %w", err)
		}
		say("CPU profile of the driftscan binary: %s (go tool pprof -top %s %s)", o.BinaryProfile, o.Driftscan, o.BinaryProfile)
		warm := o.BinaryProfile + ".warm"
		if _, _, _, err := timeDriftscan(ctx, l, driftscan, b, outDir, 1, nil, "--cache-dir", filepath.Join(outDir, "scan-cache"), "--profile", "cpu", "--profile-output", warm); err != nil {
			return fmt.Errorf("the profiled run with the cache: %w", err)
		}
		say("CPU profile of the driftscan binary with the scan cache: %s", warm)
	}
	if o.Audit {
		say("timing driftscan scan --audit-log (%d run(s))...", o.Runs)
		if res.Audit, err = timeAudit(ctx, l, driftscan, b, outDir, o.Runs, ds); err != nil {
			return err
		}
	}
	var changed map[string]bool
	if kubectl != "" {
		say("timing kubectl diff (%d run(s))...", o.Runs)
		kt, ch, err := timeKubectl(ctx, l, kubectl, b, outDir, o.Runs)
		if err != nil {
			return err
		}
		res.Kubectl, changed = &kt, ch
		res.Ratios = &Ratios{
			Wall:        ratio(kt.WallSeconds, ds.WallSeconds),
			APIRequests: ratio(float64(kt.APIRequests), float64(ds.APIRequests)),
			MaxRSS:      ratio(kt.MaxRSSMiB, ds.MaxRSSMiB),
		}
		if kt.Server != nil && ds.Server != nil {
			res.Ratios.ServerCPU = ratio(kt.Server.CPUSeconds(), ds.Server.CPUSeconds())
		}
	} else {
		res.KubectlSkipped = skipped
	}
	res.Agreement = agree(rep, changed, b.plan)
	argo := argoCheck(ctx, b, rep, outDir, o.Workers)
	if o.HeapProfile != "" && len(b.est.Objects) == o.HeapProfileObjects {
		if res.Heap, err = profileHeap(ctx, b, o.HeapProfile); err != nil {
			return err
		}
	}
	b.Close()

	var scaleErr error
	if o.Scaling {
		res.Scaling, scaleErr = scaling(ctx, o, l, floorBin, driftscan, tmp, res, false)
		if scaleErr != nil {
			say("scaling stopped early: %v", scaleErr)
		}
	}
	if o.Mix && scaleErr == nil {
		res.Mixed, scaleErr = scaling(ctx, o, l, floorBin, driftscan, tmp, res, true)
		if scaleErr != nil {
			say("mixed estates stopped early: %v", scaleErr)
		}
	}
	if o.Shards > 1 && scaleErr == nil {
		res.Shards, scaleErr = shardRun(ctx, o, l, floorBin, driftscan, tmp)
		if scaleErr != nil {
			say("shards stopped early: %v", scaleErr)
		}
	}
	res.targets()
	res.print(os.Stdout)
	if res.Audit != nil {
		res.Audit.print(os.Stdout)
	}
	argo.print(os.Stdout)
	if res.Heap != nil {
		res.Heap.print(os.Stdout)
	}
	if res.Shards != nil {
		res.Shards.print(os.Stdout)
	}
	if o.Out != "" {
		if err := res.write(o.Out); err != nil {
			return fmt.Errorf("write %s: %w", o.Out, err)
		}
		say("wrote %s", o.Out)
	}
	return scaleErr
}

// findKubectl resolves the kubectl binary, or says why the kubectl column
// is skipped. It never downloads one.
func findKubectl(ctx context.Context, name string) (path, skipped string) {
	if name == "" {
		return "", "-kubectl is empty"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Sprintf("%q is not on PATH (install your distribution's kubectl 1.28 or newer; the benchmark downloads nothing)", name)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version", "--client", "-o", "json").Output()
	if err != nil {
		return "", fmt.Sprintf("%s version: %v", path, err)
	}
	var v struct {
		ClientVersion struct{ Major, Minor, GitVersion string }
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", fmt.Sprintf("%s version: %v", path, err)
	}
	minor, _ := strconv.Atoi(strings.TrimRight(v.ClientVersion.Minor, "+"))
	if v.ClientVersion.Major == "1" && minor < 28 {
		return "", fmt.Sprintf("%s is %s; kubectl diff --concurrency needs 1.28 or newer", path, v.ClientVersion.GitVersion)
	}
	return path, ""
}
