package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// Pending sync with the real Argo CD: an Application synced by hand stays at
// that commit when Git moves on. Argo CD then shows it OutOfSync with
// status.sync.revision at the new commit; the commit live was synced from
// is the last entry of status.history. The scan compares live with that
// one, so nothing is drift, and reports what the next sync changes. After
// the sync there is nothing pending and nothing drifted.
func TestArgoCDPendingSyncIsNotDrift(t *testing.T) {
	needArgo(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, plainApp)
	const app = "pending-argo"
	createArgoApp(t, argoApp{Name: app, Namespace: ns, Repo: repo, Path: "web"})
	syncArgoApp(t, app)
	applied := repo.Head()
	waitArgoSynced(t, app, applied)

	target := repo.Commit(t, "more logs", map[string]string{
		"web/config.yaml": strings.Replace(configMap, "LOG_LEVEL: info", "LOG_LEVEL: warn", 1),
	})
	refreshArgoApp(t, app)
	waitArgoOutOfSync(t, app, target, applied)

	r := scan(t, "--from", "argocd", "--app", app)
	if got := activeFindings(r); len(got) > 0 {
		t.Errorf("Git ahead of what Argo CD synced is reported as drift:\n%s", describe(got))
	}
	checkInSync(t, r, 3)
	want := &report.Pending{Synced: applied, Target: target, Objects: []report.PendingObject{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web-config", Change: report.PendingChanged, Paths: []string{".data.LOG_LEVEL"}},
	}}
	if diff := cmp.Diff(want, r.Apps[0].Pending); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}

	syncArgoApp(t, app)
	waitArgoSynced(t, app, target)
	r = scan(t, "--from", "argocd", "--app", app)
	if got := activeFindings(r); len(got) > 0 || r.Apps[0].Pending != nil {
		t.Errorf("after Argo CD synced %s: findings\n%spending %+v", target, describe(got), r.Apps[0].Pending)
	}
}

// syncArgoApp starts a sync of the Application as `argocd app sync` does
// through argocd-server: with the Application's spec.syncPolicy
// syncOptions (CreateNamespace=true, ServerSideApply=true, ...), which the
// controller reads from the operation only; prune: with pruning.
func syncArgoApp(t *testing.T, name string) { syncArgoAppPruning(t, name, false) }

func syncArgoAppPruning(t *testing.T, name string, prune bool) {
	t.Helper()
	syncArgoAppIn(t, argo.Namespace, name, prune)
}

// syncArgoAppIn is syncArgoAppPruning for the Application ns/name.
func syncArgoAppIn(t *testing.T, ns, name string, prune bool) {
	t.Helper()
	options, _, _ := unstructured.NestedStringSlice(getArgoAppIn(t, ns, name).Object, "spec", "syncPolicy", "syncOptions")
	op := map[string]any{"initiatedBy": map[string]any{"username": "e2e"}, "sync": map[string]any{"prune": prune, "syncOptions": options}}
	patch, err := json.Marshal(map[string]any{"operation": op})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Dynamic.Resource(reconcilers.Application).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "argocd-server"}); err != nil {
		t.Fatalf("sync Application %s/%s: %v", ns, name, err)
	}
}

// waitArgoOutOfSync waits until Argo CD compared the Application with
// target and found it OutOfSync, its last sync still at synced: what the
// discovery of pending sync relies on.
func waitArgoOutOfSync(t *testing.T, name, target, synced string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(reconcilers.Application).Namespace(argo.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		status, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
		history, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
		var newest string
		if len(history) > 0 {
			newest, _, _ = unstructured.NestedString(history[len(history)-1].(map[string]any), "revision")
		}
		last = "sync " + status + " at " + rev + ", history ends at " + newest
		return status == "OutOfSync" && rev == target && newest == synced, nil
	})
	if err != nil {
		t.Fatalf("Application %s never showed OutOfSync at %s with its last sync at %s: %s", name, target, synced, last)
	}
}
