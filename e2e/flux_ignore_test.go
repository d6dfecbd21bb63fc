package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// A Kustomization's spec.ignore (kustomize-controller v1.9): the real
// kustomize-controller puts back a person's edit of a field it applies and
// leaves one of a path its ignore names. driftscan imports the rule as a
// debt of the app, so that edit is an ignored finding and the other,
// before the controller puts it back, an active one.
func TestFluxKustomizationIgnoreIsADebt(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		"app/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {mode: safe, level: info}\n",
	})
	const name = "ignoring"
	createFluxSource(t, ns, name, repo)
	createKustomizationOf(t, ns, name, "app", "1h", "ignore:\n- paths: [/data/mode]\n  target: {kind: ConfigMap, name: cfg}")
	waitFluxReady(t, reconcilers.Kustomization, ns, name, repo.Head())
	checkClean(t, scan(t, "--from", "flux", "--app", name), 1)

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "cfg", types.MergePatchType, `{"data":{"mode":"fast","level":"debug"}}`)
	got := activeFindings(scan(t, "--from", "flux", "--app", name))
	if len(got) != 1 || got[0].Path != ".data.level" || got[0].Live != "debug" {
		t.Errorf("before the controller reconciles, want level info -> debug the one active finding (mode is ignored as Flux ignores it), got:\n%s", describe(got))
	}

	// What the real controller does with the two edits.
	reconcileKustomization(t, ns, name)
	data, _, _ := unstructured.NestedStringMap(env.Get(t, cluster.ConfigMap, ns, "cfg").Object, "data")
	if data["mode"] != "fast" || data["level"] != "info" {
		t.Fatalf("after a reconcile the ConfigMap holds %v: the test expects kustomize-controller to keep mode fast (ignored) and put level back to info", data)
	}
	r := scan(t, "--from", "flux", "--app", name)
	if got := activeFindings(r); len(got) != 0 {
		t.Errorf("after the reconcile, want no active finding, got:\n%s", describe(got))
	}
	ignored := ignoredFindings(r)
	if want := "ConfigMap/cfg .data.mode fast (" + ns + ": imported from Flux)"; len(ignored) != 1 || ignored[0] != want {
		t.Errorf("want mode's edit ignored by the rule imported from the Kustomization (%s), got %q", want, ignored)
	}
}

// reconcileKustomization has kustomize-controller reconcile the
// Kustomization now and waits until it has handled that request.
func reconcileKustomization(t *testing.T, ns, name string) {
	t.Helper()
	reconcileFlux(t, reconcilers.Kustomization, ns, name)
}

// reconcileFlux has the Flux controller of a Flux object reconcile it now
// (as `flux reconcile` asks it: the requestedAt annotation) and waits until
// it has handled that request.
func reconcileFlux(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	at := time.Now().UTC().Format(time.RFC3339Nano)
	if _, err := env.Dynamic.Resource(gvr).Namespace(ns).Patch(t.Context(), name, types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, at), metav1.PatchOptions{FieldManager: "flux-cli"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		u, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if handled, _, _ := unstructured.NestedString(u.Object, "status", "lastHandledReconcileAt"); handled == at {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Flux controller of %s %s/%s did not handle the reconcile requested at %s", gvr.Resource, ns, name, at)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
