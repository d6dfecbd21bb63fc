package main

import (
	"strings"
	"testing"
)

// The wall-time goals are met only when the fastest runs meet them too: a
// median floor slowed by the API server's heap collection (two of its
// three runs, as in make bench at 04c0124) must not make a goal met.
func TestAFloorTheCollectorSlowedMeetsNoGoal(t *testing.T) {
	floor := &Floor{WallSeconds: 0.94, RunsWallSeconds: []float64{0.95, 0.65, 0.94}}
	for _, tc := range []struct {
		name       string
		scan       Tool
		wantMet    bool
		wantInText string
	}{
		{"the median alone within 1.5x", Tool{WallSeconds: 1.22, RunsWallSeconds: []float64{1.16, 1.54, 1.22}}, false, "1.30x (fastest run over fastest floor run 1.78x)"},
		{"both within 1.5x", Tool{WallSeconds: 0.97, RunsWallSeconds: []float64{0.96, 0.97, 1.1}}, true, "1.03x (fastest run over fastest floor run 1.48x)"},
		{"one run each", Tool{WallSeconds: 1.2}, false, "(fastest run over fastest floor run 1.85x)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := floor
			if tc.scan.RunsWallSeconds == nil {
				fl = &Floor{WallSeconds: 0.65}
			}
			r := &Result{Objects: 20000, Driftscan: tc.scan, Floor: fl, FloorRatios: floorRatios(tc.scan, fl)}
			r.Warm = &Warm{Warm: tc.scan, Floor: fl, FloorRatios: r.FloorRatios}
			var n int
			for _, tg := range r.floorTargets() {
				if !strings.HasPrefix(tg.Name, "wall time over the LIST floor") {
					continue
				}
				n++
				if tg.Met != tc.wantMet || !strings.Contains(tg.Got, tc.wantInText) {
					t.Errorf("%s: got %q, met %v; want %q in it, met %v", tg.Name, tg.Got, tg.Met, tc.wantInText, tc.wantMet)
				}
			}
			if n != 2 {
				t.Fatalf("%d wall-time targets at 20,000 objects, want 2 (cold and warm)", n)
			}
		})
	}
}
