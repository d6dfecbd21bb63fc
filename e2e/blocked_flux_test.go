package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

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
