package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// kustomize-controller builds before it applies anything: while the build
// of the source's revision fails, each reconcile (every interval) fails
// before the apply, so a person's edit holds until Git moves on, and the
// next good commit's apply reverts it. The scan says so, naming the failed
// build, where it said the edit would be reverted at the next sync.
func TestFluxFailedBuildAppliesNothing(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, plainApp)
	const app = "broken-flux"
	createKustomization(t, ns, app, repo, "web")
	waitFluxReady(t, reconcilers.Kustomization, ns, app, repo.Head())
	humanEdit(t, ns, "debug")
	waitReverted(t, ns, "info", time.Minute)

	bad := repo.Commit(t, "a kustomization that names a file Git lacks", map[string]string{"web/kustomization.yaml": "resources: [config.yaml, deploy.yaml, service.yaml, missing.yaml]\n"})
	failed := waitKustomizationFailed(t, ns, app, "BuildFailed", bad)
	humanEdit(t, ns, "debug")
	holds(t, ns, "debug", holdFor)

	r := scanSettled(t, "--from", "flux", "--app", app)
	hint := logLevelHint(r)
	if !strings.Contains(hint, "the build of Kustomization/"+ns+"/"+app+" at "+bad+" fails (") || !strings.Contains(hint, "until Git moves past that revision") ||
		strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that the build at %s fails, so nothing is applied until Git moves on (Flux: %s)", hint, bad, failed)
	}

	// Git moves on: the next apply reverts the edit, as the hint said.
	good := repo.Commit(t, "the file the kustomization names", map[string]string{"web/missing.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {k: v}\n"})
	waitFluxReady(t, reconcilers.Kustomization, ns, app, good)
	waitReverted(t, ns, "info", time.Minute)
	r = scan(t, "--from", "flux", "--app", app)
	if g := r.Apps[0].GitOps; g == nil || g.SyncBlocked != "" {
		t.Errorf("the app's gitOps %+v: want no syncBlocked once the build succeeds", g)
	}
}

// kustomize-controller applies in stages (cluster definitions, then
// classes, then the rest), each dry-run as a whole first: when a ConfigMap
// the API server refuses is in the last stage, each retry applies the
// first stage again and stops before the last. A person's edit of the
// app's ClusterRole is reverted; one of its ConfigMap holds. The scan says
// which: the ConfigMap's hint names the failed apply, and the app's
// syncBlockedExcept names the kinds still applied.
func TestFluxFailedApplyStillAppliesItsFirstStages(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	role := ns + "-reader"
	repo := gitServer.NewRepo(t, plainAppWith(map[string]string{"web/role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: " + role + ", labels: {team: web}}\nrules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]\n"}))
	const app = "half-applied"
	createKustomization(t, ns, app, repo, "web")
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	waitFluxReady(t, reconcilers.Kustomization, ns, app, repo.Head())

	bad := repo.Commit(t, "a ConfigMap the API server refuses", map[string]string{"web/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\ndata: {k: v}\n"})
	failed := waitKustomizationFailed(t, ns, app, "ReconciliationFailed", bad)

	humanEdit(t, ns, "debug")
	label := func(v string) {
		t.Helper()
		if _, err := env.Client.RbacV1().ClusterRoles().Patch(t.Context(), role, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"`+v+`"}}}`), metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
			t.Fatal(err)
		}
	}
	label("ops")
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cr, err := env.Client.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
		return err == nil && cr.Labels["team"] == "web", nil
	})
	if err != nil {
		t.Fatalf("the ClusterRole's label was not put back while the apply fails in a later stage: %v", err)
	}
	holds(t, ns, "debug", holdFor)

	// Each retry dry-runs the last stage at once, and for an object whose
	// dry run passes before the failing one ends the stage,
	// kustomize-controller takes over what kubectl wrote (fluxcd/pkg/ssa's
	// field-manager cleanup, a real patch): then the edit shows as
	// kustomize-controller's, a value it never applied. Whether it got
	// there first is a race (seen both ways), so the scan must be right
	// either way.
	r := scanSettled(t, "--from", "flux", "--app", app)
	var edit finding
	for _, f := range activeFindings(r) {
		if f.Object == "ConfigMap/web-config" && f.Path == ".data.LOG_LEVEL" {
			edit = f
		}
	}
	hint := edit.Hint
	t.Logf("the edit's manager in the scan: %s (class %s); its hint: %s", edit.Manager, edit.Class, hint)
	takenOver := edit.Manager == "kustomize-controller"
	want := "this change holds until then"
	if takenOver {
		want = "most likely a change made with kubectl"
	}
	if !strings.Contains(hint, "the apply of Kustomization/"+ns+"/"+app+" at "+bad+" fails (ConfigMap/"+ns+"/Bad_Name dry-run failed") ||
		!strings.Contains(hint, "applies CustomResourceDefinitions, Namespaces, ClusterRoles and *Class kinds first, and nothing else of it") ||
		!strings.Contains(hint, want) ||
		strings.Contains(hint, "will be reverted at the next sync") || strings.Contains(hint, "Git changed and was not applied yet") {
		t.Errorf("the ConfigMap edit's hint is %q, want that the apply at %s fails, applying only the first stages, and %q (manager %s; Flux: %s)", hint, bad, want, edit.Manager, failed)
	}
	if g := r.Apps[0].GitOps; g == nil || g.SyncBlockedFor("rbac.authorization.k8s.io", "ClusterRole") || !g.SyncBlockedFor("", "ConfigMap") {
		t.Errorf("the app's gitOps %+v: want its sync blocked for the ConfigMap and not for the ClusterRole (syncBlockedExcept)", g)
	}
}

// kustomize-controller builds and applies nothing of a Kustomization that
// dependsOn one that is not Ready: each reconcile stops at the dependency
// check (retried every --requeue-dependency, 30 s), so a person's edit of
// it holds while its dependency fails, and the apply after the dependency
// is Ready again reverts it. The scan says so, naming the dependency.
func TestFluxDependencyNotReadyAppliesNothing(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, plainAppWith(map[string]string{"infra/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: infra-config}\ndata: {k: v}\n"}))
	const app, infra = "dependent", "infra"
	createFluxSource(t, ns, infra, repo)
	// kustomize-controller marks a Kustomization Ready Unknown at the start
	// of each reconcile: a dependent that checks it then waits
	// --requeue-dependency (30 s). Every 3 s, infra would be caught so
	// often that the app's edits took a minute to revert (CI ci99); it
	// reconciles when its source moves, as well.
	createKustomizationOf(t, ns, infra, infra, "1h")
	createFluxSource(t, ns, app, repo)
	createKustomizationOf(t, ns, app, "web", fluxInterval, "dependsOn: [{name: "+infra+"}]")
	first := repo.Head()
	waitFluxReady(t, reconcilers.Kustomization, ns, infra, first)
	waitFluxReady(t, reconcilers.Kustomization, ns, app, first)
	humanEdit(t, ns, "debug")
	waitReverted(t, ns, "info", time.Minute)

	// The dependency's build fails; the app's own path is unchanged.
	bad := repo.Commit(t, "infra names a file Git lacks", map[string]string{"infra/kustomization.yaml": "resources: [config.yaml, missing.yaml]\n"})
	waitKustomizationFailed(t, ns, infra, "BuildFailed", bad)
	// Its source moved to the same commit, which it may have applied
	// before its dependency failed: any revision.
	waiting := waitKustomizationFailed(t, ns, app, "DependencyNotReady", "")
	humanEdit(t, ns, "debug")
	holds(t, ns, "debug", holdFor)

	r := scanSettled(t, "--from", "flux", "--app", app)
	hint := logLevelHint(r)
	if !strings.Contains(hint, "Kustomization/"+ns+"/"+app+" waits for its dependencies (dependency '"+ns+"/"+infra+"' is not ready)") ||
		!strings.Contains(hint, "this change holds until then") || strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that the app waits for %s and the edit holds until then (Flux: %s)", hint, infra, waiting)
	}
	if g := r.Apps[0].GitOps; g == nil || g.SyncBlockedReason != "DependencyNotReady" {
		t.Errorf("the app's gitOps %+v: want its sync blocked, reason DependencyNotReady", g)
	}

	// The dependency mends: at its next dependency check the app is
	// applied, and that apply reverts the edit, as the hint said.
	good := repo.Commit(t, "the file infra names", map[string]string{"infra/missing.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: infra-extra}\ndata: {k: v}\n"})
	waitFluxReady(t, reconcilers.Kustomization, ns, infra, good)
	waitFluxReady(t, reconcilers.Kustomization, ns, app, good)
	waitReverted(t, ns, "info", time.Minute)
	r = scan(t, "--from", "flux", "--app", app)
	if g := r.Apps[0].GitOps; g == nil || g.SyncBlocked != "" {
		t.Errorf("the app's gitOps %+v: want no syncBlocked once its dependency is ready", g)
	}
}

// helm-controller corrects drift (driftDetection enabled) only of a release
// in sync with its HelmRelease: once an upgrade fails and its retries are
// used up, the HelmRelease is Stalled and each reconcile stops before
// drift detection, so a person's edit holds. The scan says so, where it
// said the edit would be reverted at the next sync.
func TestFluxHelmReleaseOutOfRetriesCorrectsNoDrift(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, helmApp)
	const name = "stalled-hr"
	createFluxSource(t, ns, name, repo)
	createHelmReleaseOf(t, helmRelease{Namespace: ns, Name: name,
		Chart: []string{"chart: ./chart", "sourceRef: {kind: GitRepository, name: " + name + "}", "reconcileStrategy: ChartVersion"},
		Spec:  []string{"driftDetection: {mode: enabled}"}})
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	cm := name + "-config"
	humanEditOf(t, ns, cm, "debug")
	waitRevertedOf(t, ns, cm, "info", time.Minute)

	// A chart version whose upgrade fails: its retries (none by default)
	// are soon used up.
	repo.Commit(t, "0.2.0, with a ConfigMap the API server refuses", refusedChartVersion("chart", "web", "0.2.0"))
	stalled := waitFluxCondition(t, reconcilers.HelmRelease, ns, name, func(_ *unstructured.Unstructured, c map[string]any) bool {
		return c["type"] == "Stalled" && c["status"] == "True"
	})
	if stalled == "" {
		t.Fatalf("the HelmRelease %s did not stall after its upgrade to 0.2.0 failed", name)
	}
	t.Logf("helm-controller: Stalled %s", stalled)
	humanEditOf(t, ns, cm, "debug")
	holdsOf(t, ns, cm, "debug", holdFor)

	r := scanExiting(t, 2, "--from", "flux", "--app", name)
	hint := logLevelHintOf(r, cm)
	if !strings.Contains(hint, "helm-controller has given up on HelmRelease/"+ns+"/"+name+" (Stalled, RetriesExceeded: ") || strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that helm-controller gave up and corrects no drift (helm-controller: %s)", hint, stalled)
	}
}

// A readyExpr of dependsOn that does not compile stops kustomize-controller
// for good (a terminal error, Stalled, not retried): nothing of the
// Kustomization is applied until its spec is mended, so a person's edit
// holds. The scan says so.
func TestFluxInvalidReadyExprAppliesNothing(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, plainAppWith(map[string]string{"infra/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: infra-config}\ndata: {k: v}\n"}))
	const app, infra = "bad-expr", "infra"
	createKustomization(t, ns, infra, repo, infra)
	createKustomization(t, ns, app, repo, "web")
	waitFluxReady(t, reconcilers.Kustomization, ns, infra, repo.Head())
	waitFluxReady(t, reconcilers.Kustomization, ns, app, repo.Head())
	humanEdit(t, ns, "debug")
	waitReverted(t, ns, "info", time.Minute)

	// One parenthesis short.
	patch := `{"spec":{"dependsOn":[{"name":"` + infra + `","readyExpr":"dep.status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True'"}]}}`
	if _, err := env.Dynamic.Resource(reconcilers.Kustomization).Namespace(ns).Patch(t.Context(), app, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	stalled := waitKustomizationFailed(t, ns, app, "InvalidCELExpression", "")
	humanEdit(t, ns, "debug")
	holds(t, ns, "debug", holdFor)

	r := scanSettled(t, "--from", "flux", "--app", app)
	hint := logLevelHint(r)
	if !strings.Contains(hint, "Kustomization/"+ns+"/"+app+" cannot check its dependencies, a readyExpr of its dependsOn does not compile (") ||
		!strings.Contains(hint, "this change holds until then") || strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that the readyExpr does not compile and the edit holds until then (Flux: %s)", hint, stalled)
	}
}

// helm-controller checks a HelmRelease's dependsOn before anything else,
// drift detection included: while a HelmRelease it depends on is not Ready
// (here: its upgrade failed), a person's edit of the dependent release
// holds, and once the dependency is Ready again the next reconcile
// corrects it. The scan says so, naming the dependency.
func TestFluxHelmReleaseDependencyNotReadyCorrectsNoDrift(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	files := maps.Clone(helmApp)
	files["infra/Chart.yaml"] = "apiVersion: v2\nname: infra\nversion: 0.1.0\n"
	files["infra/templates/config.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: infra-config}\ndata: {k: v}\n"
	repo := gitServer.NewRepo(t, files)
	const name, infra = "dependent-hr", "infra"
	createFluxSource(t, ns, infra, repo)
	createGitHelmRelease(t, ns, infra, infra, infra, "reconcileStrategy: ChartVersion")
	createFluxSource(t, ns, name, repo)
	createHelmReleaseOf(t, helmRelease{Namespace: ns, Name: name,
		Chart: []string{"chart: ./chart", "sourceRef: {kind: GitRepository, name: " + name + "}", "reconcileStrategy: ChartVersion"},
		Spec:  []string{"driftDetection: {mode: enabled}", "dependsOn: [{name: " + infra + "}]"}})
	waitFluxReady(t, reconcilers.HelmRelease, ns, infra, "0.1.0")
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	cm := name + "-config"
	humanEditOf(t, ns, cm, "debug")
	waitRevertedOf(t, ns, cm, "info", time.Minute)

	// The dependency's upgrade fails; the dependent chart is unchanged.
	repo.Commit(t, "infra 0.2.0, with a ConfigMap the API server refuses", refusedChartVersion(infra, infra, "0.2.0"))
	waiting := waitFluxCondition(t, reconcilers.HelmRelease, ns, name, func(_ *unstructured.Unstructured, c map[string]any) bool {
		return c["type"] == "Ready" && c["status"] == "False" && c["reason"] == "DependencyNotReady"
	})
	if waiting == "" {
		t.Fatalf("the HelmRelease %s did not wait for %s after its upgrade to 0.2.0 failed", name, infra)
	}
	t.Logf("helm-controller on %s: %s", name, waiting)
	humanEditOf(t, ns, cm, "debug")
	holdsOf(t, ns, cm, "debug", holdFor)

	r := scanSettled(t, "--from", "flux", "--app", name)
	hint := logLevelHintOf(r, cm)
	if !strings.Contains(hint, "HelmRelease/"+ns+"/"+name+" waits for its dependencies (dependency '"+ns+"/"+infra+"' is not ready)") ||
		!strings.Contains(hint, "this change holds until then") || strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that the release waits for %s and the edit holds until then (helm-controller: %s)", hint, infra, waiting)
	}

	// The dependency mends: the dependent release's next reconcile
	// corrects the edit, as the hint said.
	repo.Commit(t, "infra 0.3.0, mended", map[string]string{
		"infra/Chart.yaml":         "apiVersion: v2\nname: infra\nversion: 0.3.0\n",
		"infra/templates/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: infra-extra}\ndata: {k: v}\n",
	})
	waitFluxReady(t, reconcilers.HelmRelease, ns, infra, "0.3.0")
	waitRevertedOf(t, ns, cm, "info", 2*time.Minute)
	r = scan(t, "--from", "flux", "--app", name)
	if g := r.Apps[0].GitOps; g == nil || g.SyncBlocked != "" {
		t.Errorf("the app's gitOps %+v: want no syncBlocked once its dependency is ready", g)
	}
}

// refusedChartVersion are the files that make the chart name in the folder
// dir of a repository the version given, with a ConfigMap the API server
// refuses: an install or upgrade of it fails.
func refusedChartVersion(dir, name, version string) map[string]string {
	return map[string]string{
		dir + "/Chart.yaml":         "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
		dir + "/templates/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\ndata: {k: v}\n",
	}
}

// scanSettled scans (exit 2 at most) until the report says the app's sync
// is blocked, at most five times. A failing Kustomization is retried every
// interval (3 s here), and while a retry runs kustomize-controller marks it
// Ready Unknown, Progressing ("Reconciliation in progress"): a scan that
// lists it then cannot tell that the retry will fail again, and says what
// it says of any reconciling app. On a loaded machine that is a retry's
// second or two of every three.
func scanSettled(t *testing.T, args ...string) *report.Report {
	t.Helper()
	for i := 1; ; i++ {
		r := scanExiting(t, 2, args...)
		if g := r.Apps[0].GitOps; g != nil && g.SyncBlocked != "" || i == 5 {
			return r
		}
		t.Logf("scan %d caught the reconciler mid-retry (gitops %+v); again", i, r.Apps[0].GitOps)
		time.Sleep(time.Second)
	}
}

// waitKustomizationFailed waits until the Kustomization ns/name is not
// Ready for reason at the commit rev (at any when rev is ""), and returns "<reason>: <message>";
// it fails the test when that does not come.
func waitKustomizationFailed(t *testing.T, ns, name, reason, rev string) string {
	t.Helper()
	failed := waitFluxCondition(t, reconcilers.Kustomization, ns, name, func(u *unstructured.Unstructured, c map[string]any) bool {
		attempted, _, _ := unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
		return c["type"] == "Ready" && c["status"] == "False" && c["reason"] == reason && strings.HasSuffix(attempted, rev)
	})
	if failed == "" {
		t.Fatalf("kustomize-controller did not report %s for %s/%s at %s", reason, ns, name, rev)
	}
	t.Logf("kustomize-controller on %s/%s: %s", ns, name, failed)
	return failed
}

// waitFluxCondition waits up to two minutes for a condition of the Flux
// object ns/name that match says is the one (given the object too), and
// returns it as "<reason>: <message>"; "" when none came.
func waitFluxCondition(t *testing.T, gvr schema.GroupVersionResource, ns, name string, match func(*unstructured.Unstructured, map[string]any) bool) string {
	t.Helper()
	var found string
	_ = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && match(u, c) {
				found = fmt.Sprintf("%v: %v", c["reason"], c["message"])
			}
		}
		return found != "", nil
	})
	return found
}
