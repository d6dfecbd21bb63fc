package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// The 3 AM drill with the real Flux: kustomize-controller reverts a human's
// hotfix at its next reconcile; after `driftscan breakglass suspend --from
// flux` (spec.suspend) the hotfix holds through many intervals; the scan
// reports it as the one human finding of a suspended app; backport writes
// it into Git; once Git has it, resume hands the app back to Flux, which
// applies the merged commit and reverts nothing.
func TestFluxThreeAMDrill(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, plainApp)
	const app = "drill-flux"
	createKustomization(t, ns, app, repo, "web")
	waitFluxReady(t, reconcilers.Kustomization, ns, app, repo.Head())

	humanEdit(t, ns, "debug")
	t.Logf("kustomize-controller reverted the human edit in %s (interval %s)", waitReverted(t, ns, "info", time.Minute), fluxInterval)
	// It forces ownership: the field is its own again, kubectl-edit's entry
	// is gone, and the scan sees nobody's change.
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "web-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cm.ManagedFields {
		t.Logf("after the revert: manager %s operation %s owns %s", e.Manager, e.Operation, e.FieldsV1.GetRawString())
		if e.Manager != "kustomize-controller" {
			t.Errorf("after the revert %s still has an entry (%s)", e.Manager, e.FieldsV1.GetRawString())
		}
	}
	if got := activeFindings(scan(t, "--from", "flux", "--app", app)); len(got) > 0 {
		t.Errorf("after Flux reverted the edit the scan still finds:\n%s", describe(got))
	}

	bg := []string{"--from", "flux", "-n", ns}
	res := runDriftscan(t, append([]string{"breakglass", "suspend", app, "--reason", "INC-4212 debug logs", "--ttl", "1h"}, bg...)...)
	if res.Code != 0 {
		t.Fatalf("breakglass suspend: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if !fluxSuspended(t, ns, app) {
		t.Fatalf("the Kustomization is not spec.suspend: true after breakglass suspend")
	}
	// Suspend returns once kustomize-controller has handled the suspended
	// object: a reconcile it had begun before would revert the edit below
	// (seen under load, 0.4s after suspend returned, before it waited).
	if !strings.Contains(res.Stdout, "the Flux controller has handled") {
		t.Errorf("breakglass suspend did not wait for kustomize-controller:\n%s%s", res.Stdout, res.Stderr)
	}
	humanEdit(t, ns, "debug")
	holds(t, ns, "debug", holdFor)

	r := scan(t, "--from", "flux", "--app", app)
	hotfixReported(t, r, "INC-4212 debug logs")
	if g := r.Apps[0].GitOps; g == nil || !g.Suspended || g.SelfHeal {
		t.Errorf("the report does not show the Kustomization suspended: %+v", g)
	}

	checkout := repo.Clone(t)
	res = runDriftscan(t, "backport", app, "--repo", checkout, "--path", filepath.Join(checkout, "web"), "-n", ns, "--reason", "INC-4212 debug logs", "--branch", "hotfix/inc-4212")
	if res.Code != 0 {
		t.Fatalf("backport: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if diff := reconcilers.Git(t, checkout, "diff", "main", "hotfix/inc-4212", "--", "web/config.yaml"); !strings.Contains(diff, "-  LOG_LEVEL: info") || !strings.Contains(diff, "+  LOG_LEVEL: debug") {
		t.Fatalf("backport's commit does not carry LOG_LEVEL: debug:\n%s", diff)
	}
	reconcilers.Git(t, checkout, "push", "--quiet", "origin", "hotfix/inc-4212:main")
	merged := reconcilers.Git(t, checkout, "rev-parse", "hotfix/inc-4212")
	if data, err := os.ReadFile(filepath.Join(checkout, "web/config.yaml")); err != nil || !strings.Contains(string(data), "LOG_LEVEL: debug") {
		t.Fatalf("web/config.yaml after backport: %s %v", data, err)
	}

	// Resume waits for source-controller to fetch the merge: until then
	// the Kustomization would apply its old artifact and revert the hotfix,
	// and resume refuses to (seen here when it ran first).
	waitFluxArtifact(t, ns, app, merged)
	res = runDriftscan(t, append([]string{"breakglass", "resume", app}, bg...)...)
	if res.Code != 0 {
		t.Fatalf("breakglass resume: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if fluxSuspended(t, ns, app) {
		t.Fatalf("the Kustomization is still suspended after resume")
	}
	waitFluxReady(t, reconcilers.Kustomization, ns, app, merged)
	holds(t, ns, "debug", holdFor)
	if r := scan(t, "--from", "flux", "--app", app); len(activeFindings(r)) > 0 || r.Apps[0].Breakglass != nil {
		t.Errorf("after resume at the merged commit: findings %s, breakglass %+v", describe(activeFindings(r)), r.Apps[0].Breakglass)
	}
}

// fluxSuspended reads spec.suspend of the Kustomization.
func fluxSuspended(t *testing.T, ns, name string) bool {
	t.Helper()
	u, err := env.Dynamic.Resource(reconcilers.Kustomization).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
	return s
}

// waitFluxArtifact waits until the GitRepository's artifact is commit.
func waitFluxArtifact(t *testing.T, ns, name, commit string) {
	t.Helper()
	waitSourceArtifact(t, reconcilers.GitRepository, ns, name, commit)
}

// waitSourceArtifact waits until the revision of the Flux source's
// artifact ends in commit (a Git commit, an OCI digest).
func waitSourceArtifact(t *testing.T, gvr schema.GroupVersionResource, ns, name, commit string) {
	t.Helper()
	waitRevisionField(t, gvr, ns, name, commit, "status", "artifact", "revision")
}

// waitRevisionField waits until the Flux object's revision at field ends
// in commit.
func waitRevisionField(t *testing.T, gvr schema.GroupVersionResource, ns, name, commit string, field ...string) {
	t.Helper()
	var rev string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		rev, _, _ = unstructured.NestedString(u.Object, field...)
		return strings.HasSuffix(rev, commit), nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s never reached %s: %s is %q\n%s", gvr.Resource, ns, name, commit, strings.Join(field, "."), rev, flux.Logs(2000))
	}
}
