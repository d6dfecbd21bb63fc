package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
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
	var failed string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(reconcilers.Kustomization).Namespace(ns).Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		attempted, _, _ := unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Ready" && c["status"] == "False" && c["reason"] == "BuildFailed" && strings.HasSuffix(attempted, bad) {
				failed, _ = c["message"].(string)
			}
		}
		return failed != "", nil
	})
	if err != nil {
		t.Fatalf("kustomize-controller's build of %s at %s did not fail", app, bad)
	}
	t.Logf("kustomize-controller at %s: %s", bad, failed)
	humanEdit(t, ns, "debug")
	holds(t, ns, "debug", holdFor)

	r := scanExiting(t, 2, "--from", "flux", "--app", app)
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
	edit := func(level string) {
		t.Helper()
		if _, err := env.PatchAs(t.Context(), "kubectl-edit", cluster.ConfigMap, ns, cm, types.MergePatchType, `{"data":{"LOG_LEVEL":"`+level+`"}}`); err != nil {
			t.Fatal(err)
		}
	}
	level := func(ctx context.Context) string {
		c, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, cm, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return c.Data["LOG_LEVEL"]
	}
	edit("debug")
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return level(ctx) == "info", nil
	}); err != nil {
		t.Fatalf("helm-controller's drift correction did not revert the edit of %s: the test expects it to", cm)
	}

	// A chart version whose upgrade fails: its retries (none by default)
	// are soon used up.
	repo.Commit(t, "0.2.0, with a ConfigMap the API server refuses", map[string]string{
		"chart/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.2.0\n",
		"chart/templates/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\ndata: {k: v}\n",
	})
	var stalled string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(reconcilers.HelmRelease).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Stalled" && c["status"] == "True" {
				stalled = fmt.Sprintf("%v: %v", c["reason"], c["message"])
			}
		}
		return stalled != "", nil
	})
	if err != nil {
		t.Fatalf("the HelmRelease %s did not stall after its upgrade to 0.2.0 failed", name)
	}
	t.Logf("helm-controller: Stalled %s", stalled)
	edit("debug")
	deadline := time.Now().Add(holdFor)
	for time.Now().Before(deadline) {
		if got := level(t.Context()); got != "debug" {
			t.Fatalf("LOG_LEVEL became %q while the HelmRelease is Stalled; the test expects the edit to hold", got)
		}
		time.Sleep(200 * time.Millisecond)
	}

	r := scanExiting(t, 2, "--from", "flux", "--app", name)
	var hint string
	for _, f := range activeFindings(r) {
		if f.Object == "ConfigMap/"+cm && f.Path == ".data.LOG_LEVEL" {
			hint = f.Hint
		}
	}
	if !strings.Contains(hint, "helm-controller has given up on HelmRelease/"+ns+"/"+name+" (Stalled, RetriesExceeded: ") || strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that helm-controller gave up and corrects no drift (helm-controller: %s)", hint, stalled)
	}
}
