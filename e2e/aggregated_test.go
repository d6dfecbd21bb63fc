package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

var clusterRoles = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}

// aggregatedRoles is a Git folder of two aggregated ClusterRoles and the
// role both collect, named after prefix: "<prefix>-view" writes `rules: []`
// (as Crossplane's chart does), "<prefix>-edit" no rules. They select by
// labels named after tool (a label's name has at most 63 characters), and
// are deleted when the test ends (neither reconciler prunes here).
func aggregatedRoles(t *testing.T, tool, prefix string) map[string]string {
	t.Helper()
	role := func(name, role, rules string) string {
		return fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: %s}\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {example.com/aggregate-to-%s-%s: \"true\"}\n%s", name, tool, role, rules)
	}
	for _, n := range []string{"view", "edit", "widgets"} {
		name := prefix + "-" + n
		t.Cleanup(func() {
			_ = env.Dynamic.Resource(clusterRoles).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	return map[string]string{
		"app/view.yaml": role(prefix+"-view", "view", "rules: []\n"),
		"app/edit.yaml": role(prefix+"-edit", "edit", ""),
		"app/widgets.yaml": fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %[1]s-widgets\n  labels: {example.com/aggregate-to-%[2]s-view: \"true\", example.com/aggregate-to-%[2]s-edit: \"true\"}\n"+
			"rules:\n- apiGroups: [example.com]\n  resources: [widgets]\n  verbs: [get, list, watch]\n", prefix, tool),
	}
}

// wantAggregationFight checks that the scan's one active finding is the
// rules of "<prefix>-view", set by the aggregation controller against Git's
// empty list, with the hint that says how to end the fight.
func wantAggregationFight(t *testing.T, r *report.Report, prefix string) {
	t.Helper()
	got := activeFindings(r)
	if len(got) != 1 || got[0].Object != "ClusterRole/"+prefix+"-view" || got[0].Path != ".rules" || got[0].Type != report.TypeChanged ||
		got[0].Class != report.ClassOperator || got[0].Manager != "clusterrole-aggregation-controller" || got[0].Git != "[]" {
		t.Fatalf("want one finding, the view role's rules (changed by clusterrole-aggregation-controller, Git []), got:\n%s\nerrors %v", describe(got), appErrors(r))
	}
	if !strings.Contains(got[0].Hint, "leave rules out of Git") {
		t.Errorf("hint %q does not say to leave rules out of Git", got[0].Hint)
	}
}

// An aggregated ClusterRole whose Git writes `rules: []`, synced by the
// real Argo CD with self-heal: Argo CD holds it OutOfSync for good (the
// aggregation controller's rules differ from Git's empty list) while the
// role without rules is Synced, and driftscan finds the one and not the
// other. With argocd-cm's ignoreAggregatedRoles, Argo CD says Synced and
// driftscan's finding is ignored by the imported rule.
func TestArgoCDAndAnAggregatedClusterRoleWithEmptyRules(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	prefix := "argo-" + ns
	repo := gitServer.NewRepo(t, aggregatedRoles(t, "argo", prefix))
	const name = "aggregated"
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "app", Automated: "{selfHeal: true}"})

	var last string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u := getArgoApp(t, name)
		resources, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
		status := map[string]string{}
		for _, r := range resources {
			m, _ := r.(map[string]any)
			n, _ := m["name"].(string)
			status[strings.TrimPrefix(n, prefix+"-")], _ = m["status"].(string)
		}
		msg, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "message")
		last = fmt.Sprintf("%v (last operation: %s)", status, msg)
		return status["view"] == "OutOfSync" && status["edit"] == "Synced" && status["widgets"] == "Synced", nil
	})
	if err != nil {
		t.Fatalf("Argo CD's resource status %s; the test expects the view role (rules: []) OutOfSync, the others Synced", last)
	}
	// A scan while the controller's rules are live: self-heal empties the
	// role again and again (waiting longer each time), and the controller
	// refills it within moments; a scan in between finds live as Git has it
	// (CI ci114).
	var r *report.Report
	for i := 0; i < 5 && (r == nil || len(activeFindings(r)) == 0); i++ {
		waitAggregated(t, prefix+"-view")
		r = scan(t, "--from", "argocd", "--app", name)
	}
	wantAggregationFight(t, r, prefix)

	setArgoCM(t, "resource.compareoptions", "ignoreAggregatedRoles: true\n")
	if got := argoSyncAfterRefresh(t, name); got != "Synced" {
		t.Fatalf("with ignoreAggregatedRoles Argo CD says %s, want Synced", got)
	}
	waitAggregated(t, prefix+"-view")
	r = scan(t, "--from", "argocd", "--app", name)
	if got := activeFindings(r); len(got) != 0 {
		t.Errorf("with ignoreAggregatedRoles, active findings:\n%s", describe(got))
	}
	ignored := ignoredFindings(r)
	if len(ignored) != 1 || !strings.HasPrefix(ignored[0], "ClusterRole/"+prefix+"-view .rules ") ||
		!strings.HasSuffix(ignored[0], "(argocd: imported from Argo CD's argocd-cm (resource.compareoptions ignoreAggregatedRoles))") {
		t.Errorf("ignored findings %q, want the view role's rules, by the imported rule", ignored)
	}
}

// The same roles reconciled by the real kustomize-controller: every
// reconcile applies the view role's empty rules (the aggregation controller
// then writes them again: the role changes) and leaves the edit role as it
// is; driftscan finds the view role's rules and nothing else.
func TestFluxAndAnAggregatedClusterRoleWithEmptyRules(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	prefix := "flux-" + ns
	repo := gitServer.NewRepo(t, aggregatedRoles(t, "flux", prefix))
	const name = "aggregated"
	createFluxSource(t, ns, name, repo)
	createKustomizationOf(t, ns, name, "app", "1h")
	waitFluxReady(t, reconcilers.Kustomization, ns, name, repo.Head())
	versions := func() (view, edit string) {
		for _, n := range []string{"view", "edit"} {
			u := waitAggregated(t, prefix+"-"+n)
			if n == "view" {
				view = u.GetResourceVersion()
			} else {
				edit = u.GetResourceVersion()
			}
		}
		return view, edit
	}
	view, edit := versions()
	reconcileKustomization(t, ns, name)
	view2, edit2 := versions()
	if view2 == view || edit2 != edit {
		t.Fatalf("after a reconcile the view role is at %s (was %s), the edit role at %s (was %s); the test expects the reconcile to empty and the controller to refill the view role only", view2, view, edit2, edit)
	}
	wantAggregationFight(t, scan(t, "--from", "flux", "--app", name), prefix)
}

// waitAggregated waits until the aggregation controller has filled in the
// rules of ClusterRole name (its one aggregated rule), and returns it.
func waitAggregated(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		u, err = env.Dynamic.Resource(clusterRoles).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		return len(rules) == 1, nil
	})
	if err != nil {
		t.Fatalf("ClusterRole %s was never aggregated: %v", name, err)
	}
	return u
}
