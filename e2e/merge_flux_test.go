package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// kustomize-controller takes over, at every reconcile, the fields kubectl
// wrote (fluxcd/pkg/ssa's field-manager cleanup, managers named kubectl*)
// and its apply then removes those Git does not declare; an object Git
// marks `kustomize.toolkit.fluxcd.io/ssa: Merge` is left out of that
// cleanup, so what kubectl added to it stays. The scan says which, where
// it said of both that the label would be removed at the next reconcile.
func TestFluxMergeKeepsWhatKubectlAdded(t *testing.T) {
	needFlux(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, plainAppWith(map[string]string{"web/merged.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: merged\n  annotations: {kustomize.toolkit.fluxcd.io/ssa: merge}\ndata: {k: v}\n"}))
	const app = "merged"
	createKustomization(t, ns, app, repo, "web")
	waitFluxReady(t, reconcilers.Kustomization, ns, app, repo.Head())

	onCall := func(cm string) string {
		c, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), cm, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Labels["on-call"]
	}
	for _, cm := range []string{"web-config", "merged"} {
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Patch(t.Context(), cm, types.MergePatchType, []byte(`{"metadata":{"labels":{"on-call":"paged"}}}`), metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return onCall("web-config") == "", nil
	}); err != nil {
		t.Fatalf("kustomize-controller did not remove the label kubectl added to web-config: %v", err)
	}
	for deadline := time.Now().Add(holdFor); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if v := onCall("merged"); v != "paged" {
			t.Fatalf("the label kubectl added to the ConfigMap marked ssa: merge became %q, want it kept", v)
		}
	}

	r := scanExiting(t, 1, "--from", "flux", "--app", app)
	var hint string
	for _, f := range activeFindings(r) {
		if f.Object == "ConfigMap/merged" && f.Path == ".metadata.labels.on-call" {
			hint = f.Hint
		}
		if f.Object == "ConfigMap/web-config" {
			t.Errorf("a finding on web-config, whose label kustomize-controller removed: %+v", f)
		}
	}
	if !strings.Contains(hint, "it does not remove this") || strings.Contains(hint, "removes this one at the next reconcile") {
		t.Errorf("the hint of the label kubectl added to the ConfigMap marked ssa: merge is %q, want that kustomize-controller leaves it", hint)
	}
}
