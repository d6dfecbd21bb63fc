package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/report"
)

// TestExplainDismissedListsWhatWasNoDrift: --explain-dismissed lists every
// difference the scan dismissed, with its reason, under the findings; the
// JSON report carries the same list on each object, and its stats count
// them whether or not they are listed.
func TestExplainDismissedListsWhatWasNoDrift(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	t.Setenv("NO_COLOR", "1")
	res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", ns, "-o", "table", "--explain-dismissed")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", res.code, res.err)
	}
	out := strings.ReplaceAll(res.out, ns, "NAMESPACE")
	out = regexp.MustCompile(`scanned \S+ \S+ UTC`).ReplaceAllString(out, "scanned TIME")
	out = ageColumn.ReplaceAllString(out, "AGE")
	// The Service's cluster IP is allocated anew each run, and its length
	// moves the columns: compare the cells, not their alignment.
	out = regexp.MustCompile(`10\.0\.0\.\d+`).ReplaceAllString(out, "10.0.0.N")
	out = regexp.MustCompile(` {2,}`).ReplaceAllString(out, "  ")
	golden.Check(t, "scan-path.explain.table.golden", []byte(out))

	for _, explain := range []bool{false, true} {
		args := []string{"scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", ns, "-o", "json"}
		if explain {
			args = append(args, "--explain-dismissed")
		}
		res := runCLI(t, args...)
		var r report.Report
		if err := json.Unmarshal([]byte(res.out), &r); err != nil {
			t.Fatalf("json: %v\n%s", err, res.out)
		}
		listed := 0
		for _, a := range r.Apps {
			for _, o := range a.Objects {
				listed += len(o.Dismissed)
			}
		}
		total := r.Stats.Dismissed.Total()
		switch {
		case total == 0:
			t.Errorf("explain=%v: stats count no dismissal", explain)
		case explain && listed != total:
			t.Errorf("explain=%v: %d dismissals listed, stats count %d", explain, listed, total)
		case !explain && listed != 0:
			t.Errorf("explain=%v: %d dismissals listed without the flag", explain, listed)
		}
	}
}
