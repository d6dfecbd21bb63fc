package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// An ignore rule in argocd-cm (resource.customizations.ignoreDifferences.
// <kind>) is every Application's: the real Argo CD keeps an app Synced
// when a person edits the path it names, and OutOfSync for another edit.
// driftscan imports it as a debt of every Argo CD app, so the first edit
// is an ignored finding and the second an active one.
func TestArgoCDSystemLevelIgnoreDifferencesAreDebts(t *testing.T) {
	needArgo(t)
	const key = "resource.customizations.ignoreDifferences.ConfigMap"
	setArgoCM(t, key, "jsonPointers: [/data/note]\n")
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		"app/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {note: from-git, level: info}\n",
	})
	const name = "cm-ignores"
	createGitApp(t, name, ns, repo.URL, "app", "")
	waitArgoSynced(t, name, "")

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "cfg", types.MergePatchType, `{"data":{"note":"by-hand"}}`)
	if got := argoSyncAfterRefresh(t, name); got != "Synced" {
		t.Fatalf("after an edit of /data/note Argo CD says %s: the test expects argocd-cm's rule to keep it Synced", got)
	}
	r := scan(t, "--from", "argocd", "--app", name)
	if got := activeFindings(r); len(got) != 0 {
		t.Errorf("the edit argocd-cm ignores is an active finding:\n%s", describe(got))
	}
	ignored := ignoredFindings(r)
	if want := "ConfigMap/cfg .data.note by-hand (argocd: imported from Argo CD's argocd-cm (" + key + "))"; len(ignored) != 1 || ignored[0] != want {
		t.Errorf("ignored findings %q, want [%q]", ignored, want)
	}

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "cfg", types.MergePatchType, `{"data":{"level":"debug"}}`)
	if got := argoSyncAfterRefresh(t, name); got != "OutOfSync" {
		t.Fatalf("after an edit of /data/level Argo CD says %s, want OutOfSync", got)
	}
	if got := activeFindings(scan(t, "--from", "argocd", "--app", name)); len(got) != 1 || got[0].Path != ".data.level" {
		t.Errorf("want the edit of level the one active finding, got:\n%s", describe(got))
	}
}

// setArgoCM sets key of argocd-cm to value until the test ends: other
// tests' scans would list a rule left there as an unused debt.
func setArgoCM(t *testing.T, key, value string) {
	t.Helper()
	if err := argo.Set(t.Context(), key, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = env.Client.CoreV1().ConfigMaps(argo.Namespace).Patch(context.Background(), "argocd-cm", types.MergePatchType,
			[]byte(`{"data":{"`+key+`":null}}`), metav1.PatchOptions{FieldManager: "kubectl-patch"})
	})
}

// argoSyncAfterRefresh hard-refreshes the Application and returns its sync
// status once Argo CD has compared it again.
func argoSyncAfterRefresh(t *testing.T, name string) string {
	t.Helper()
	return argoSyncAfterRefreshIn(t, argo.Namespace, name)
}

// argoSyncAfterRefreshIn is argoSyncAfterRefresh for the Application
// ns/name.
func argoSyncAfterRefreshIn(t *testing.T, ns, name string) string {
	t.Helper()
	before := time.Now().Add(-time.Second)
	refreshArgoAppIn(t, ns, name)
	var status string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, false, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(reconcilers.Application).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if _, pending := u.GetAnnotations()["argocd.argoproj.io/refresh"]; pending {
			return false, nil
		}
		at, _, _ := unstructured.NestedString(u.Object, "status", "reconciledAt")
		done, err := time.Parse(time.RFC3339, at)
		if err != nil || done.Before(before) {
			return false, nil
		}
		status, _, _ = unstructured.NestedString(u.Object, "status", "sync", "status")
		return true, nil
	})
	if err != nil {
		t.Fatalf("Application %s/%s was not compared again after a refresh: %v", ns, name, err)
	}
	return status
}
