package main

import "fmt"

// floorTargets checks the run against issue 21's goals: wall time near
// the LIST floor, memory at or below kubectl's and growing slowly, and a
// control plane that barely notices the scan.
func (r *Result) floorTargets() []Target {
	var ts []Target
	// Wall time over the floor, at 5,000 and 20,000 objects (the main run
	// stands for its size): both FloorRatios within the goal.
	over, warm := map[int]FloorRatios{}, map[int]FloorRatios{}
	if r.Floor != nil {
		over[r.Objects] = r.FloorRatios
	}
	if r.Warm != nil && r.Warm.OverFloor > 0 {
		warm[r.Objects] = r.Warm.FloorRatios
	}
	for _, p := range r.Scaling {
		if p.OverFloor > 0 {
			over[p.Objects] = p.FloorRatios
		}
		if p.Warm != nil && p.Warm.OverFloor > 0 {
			warm[p.Objects] = p.Warm.FloorRatios
		}
	}
	for _, n := range []int{5000, 20000} {
		if x, ok := over[n]; ok {
			ts = append(ts, x.target(fmt.Sprintf("wall time over the LIST floor, %d objects, every object compared (--no-cache)", n), 1.5))
		}
		if x, ok := warm[n]; ok {
			ts = append(ts, x.target(fmt.Sprintf("wall time over the LIST floor, %d objects, a scheduled scan (the last one's cache)", n), 1.5))
		}
	}
	if r.Objects == 5000 {
		if k := r.Kubectl; k != nil {
			ts = append(ts, Target{Name: "max RSS vs kubectl diff, 5000 objects", Want: "<= kubectl's", Got: fmt.Sprintf("%.0f MiB vs %.0f MiB", r.Driftscan.MaxRSSMiB, k.MaxRSSMiB), Met: r.Driftscan.MaxRSSMiB <= k.MaxRSSMiB})
		} else {
			ts = append(ts, Target{Name: "max RSS vs kubectl diff, 5000 objects", Want: "<= kubectl's", Got: "kubectl skipped", Skipped: true})
		}
	}
	rss := map[int]float64{r.Objects: r.Driftscan.MaxRSSMiB}
	for _, p := range r.Scaling {
		rss[p.Objects] = p.MaxRSSMiB
	}
	if m, ok := rss[20000]; ok {
		ts = append(ts, Target{Name: "max RSS, 20000 objects", Want: "< 400 MiB", Got: fmt.Sprintf("%.0f MiB", m), Met: m < 400})
	}
	if lo, ok := rss[5000]; ok {
		for _, n := range []int{50000, 20000} {
			if hi, ok := rss[n]; ok {
				kib := (hi - lo) * 1024 / float64(n-5000)
				ts = append(ts, Target{Name: fmt.Sprintf("max RSS growth, 5000 to %d objects", n), Want: "< 15 KiB per object", Got: fmt.Sprintf("%.1f KiB per object (%.0f -> %.0f MiB)", kib, lo, hi), Met: kib < 15})
				break
			}
		}
	}
	if q := r.Ratios; q != nil && q.ServerCPU > 0 {
		ts = append(ts, Target{Name: "control plane CPU vs kubectl diff", Want: ">= 20x less", Got: fmt.Sprintf("%.1fx less (%.2f s vs %.2f s)", q.ServerCPU, r.Driftscan.Server.CPUSeconds(), r.Kubectl.Server.CPUSeconds()), Met: q.ServerCPU >= 20})
	}
	if sh := r.Shards; sh != nil && sh.ShareInTurn.WallSeconds > 0 {
		ts = append(ts, Target{Name: fmt.Sprintf("%d objects as %d shards vs a share alone", sh.Objects, sh.Shards), Want: "slowest shard <= 1.2x the share's time, every object in one shard",
			Got: fmt.Sprintf("%.2fx (%.2f s vs %.2f s, in turn), covered %v", sh.Ratio, sh.MaxWallSeconds, sh.ShareInTurn.WallSeconds, sh.Covered), Met: sh.Ratio <= 1.2 && sh.Covered})
	}
	return ts
}

// target is the goal of at most max times the floor, met when both
// ratios are within it (FastestOverFloor only when measured).
func (o FloorRatios) target(name string, max float64) Target {
	got := fmt.Sprintf("%.2fx", o.OverFloor)
	met := o.OverFloor <= max
	if o.FastestOverFloor > 0 {
		got += fmt.Sprintf(" (fastest run over the estate's fastest floor run %.2fx)", o.FastestOverFloor)
		met = met && o.FastestOverFloor <= max
	}
	return Target{Name: name, Want: fmt.Sprintf("<= %.1fx", max), Got: got, Met: met}
}
