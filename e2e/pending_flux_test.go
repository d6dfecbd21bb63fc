package e2e

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// Pending sync with the real Flux: Git moves ahead of what kustomize-
// controller applied (here because the Kustomization is suspended, as
// between two intervals or while its apply fails). The scan compares live
// with the applied commit (status.lastAppliedRevision), so nothing is
// drift, and reports what the next sync changes, naming both commits. A
// human's edit is still drift. Once Flux applies the new commit there is
// nothing pending and nothing drifted.
func TestFluxPendingSyncIsNotDrift(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, plainApp)
	const app = "pending-flux"
	createKustomization(t, ns, app, repo, "web")
	waitFluxReady(t, reconcilers.Kustomization, ns, app, repo.Head())
	applied := repo.Head()

	setFluxSuspend(t, ns, app, true)
	target := repo.Commit(t, "more logs, and a new ConfigMap", map[string]string{
		"web/config.yaml": strings.Replace(configMap, "LOG_LEVEL: info", "LOG_LEVEL: warn", 1),
		"web/extra.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-extra}\ndata: {A: b}\n",
	})
	waitFluxArtifact(t, ns, app, target)

	r := scan(t, "--from", "flux", "--app", app)
	if got := activeFindings(r); len(got) > 0 {
		t.Errorf("Git ahead of what Flux applied is reported as drift:\n%s", describe(got))
	}
	checkInSync(t, r, 3)
	a := r.Apps[0]
	if a.Source.Commit != applied {
		t.Errorf("the scan compared commit %s, want the applied %s", a.Source.Commit, applied)
	}
	want := &report.Pending{Synced: applied, Target: target, Objects: []report.PendingObject{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web-config", Change: report.PendingChanged, Paths: []string{".data.LOG_LEVEL"}},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web-extra", Change: report.PendingAdded},
	}}
	if diff := cmp.Diff(want, a.Pending); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}

	// Live differing from the applied commit is drift, pending or not.
	humanEdit(t, ns, "debug")
	got := activeFindings(scan(t, "--from", "flux", "--app", app))
	if len(got) != 1 || got[0].Path != ".data.LOG_LEVEL" || got[0].Git != "info" || got[0].Live != "debug" || got[0].Class != report.ClassHuman {
		t.Errorf("want one human finding LOG_LEVEL info -> debug against the applied commit, got:\n%s", describe(got))
	}

	setFluxSuspend(t, ns, app, false)
	waitFluxReady(t, reconcilers.Kustomization, ns, app, target)
	r = scan(t, "--from", "flux", "--app", app)
	if got := activeFindings(r); len(got) > 0 || r.Apps[0].Pending != nil {
		t.Errorf("after Flux applied %s: findings\n%spending %+v", target, describe(got), r.Apps[0].Pending)
	}
	checkInSync(t, r, 4)
}

// setFluxSuspend sets spec.suspend as `flux suspend` and `flux resume` do.
func setFluxSuspend(t *testing.T, ns, name string, suspend bool) {
	t.Helper()
	patch := `{"spec":{"suspend":false}}`
	if suspend {
		patch = `{"spec":{"suspend":true}}`
	}
	if _, err := env.Dynamic.Resource(reconcilers.Kustomization).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "flux-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
}
