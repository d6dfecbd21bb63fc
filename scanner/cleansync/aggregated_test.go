package cleansync_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/report"
)

// An aggregated ClusterRole whose Git writes `rules: []` (Crossplane's
// chart does) is not a clean sync: every apply sends the empty rules, the
// role holds none until kube-controller-manager's clusterrole-aggregation
// controller fills it again, and Argo CD shows it OutOfSync (e2e). The
// scan must say so, with the controller named and the way out, in both
// apply modes, where the same role without rules scans clean (the
// "aggregated" case of TestACleanSyncScansClean).
func TestAnAggregatedRoleGitDeclaresEmptyIsAFight(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ns := env.Namespace(t, nil)
			a := prepare(t, "aggregated-empty", ns)
			a.sync(t, m, ns)
			aggregated("platform-edit")(t, ns)
			r := a.scan(t, m, ns)
			want := []row{{Object: "ClusterRole/platform-edit-" + ns, Path: ".rules", Type: report.TypeChanged, Class: report.ClassOperator, Manager: "clusterrole-aggregation-controller"}}
			if diff := cmp.Diff(want, rows(r)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			f := r.Apps[0].Objects[findObject(r, "platform-edit-"+ns)].Findings[0]
			if f.Git != "[]" || !strings.Contains(f.Live, "widgets") {
				t.Errorf("git %q live %q, want [] and the aggregated rules", f.Git, f.Live)
			}
			for _, w := range []string{"aggregationRule", "leave rules out of Git", "ignoreAggregatedRoles"} {
				if !strings.Contains(f.Hint, w) {
					t.Errorf("hint %q does not say %q", f.Hint, w)
				}
			}
		})
	}
}

// findObject is the index of the object named name in r's first app.
func findObject(r *report.Report, name string) int {
	for i, o := range r.Apps[0].Objects {
		if o.Name == name {
			return i
		}
	}
	return -1
}
