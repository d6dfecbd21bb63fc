package breakglass

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/cluster"
)

// TestSettleWaitsForTheFluxControllerToAnswer: the real kustomize-controller
// answers in e2e (TestFluxThreeAMDrill); here nobody reconciles the
// Kustomization, so Settle says, after its timeout, that a hand change may
// still be reverted, and turns to OK once status.lastHandledReconcileAt
// holds the request the suspension made, as a controller writes it.
func TestSettleWaitsForTheFluxControllerToAnswer(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, nil)
	env.Apply(t, "kustomize-controller", ns, cluster.Object(t, kustomization))
	target := Target{Resource: Kustomization, Namespace: ns, Name: "payments"}
	opts := suspendOpts()
	opts.Now = time.Now
	ch, err := Suspend(t.Context(), env.Dynamic, target, opts)
	if err != nil {
		t.Fatal(err)
	}
	if ch.requestedAt == "" {
		t.Fatal("the suspension asked the controller for no answer")
	}
	s := Settle(t.Context(), env.Dynamic, ch, time.Second)
	if s.OK || !strings.Contains(s.Message, "has not taken in the suspension after 1s") || !strings.Contains(s.Message, "kubectl get kustomizations payments -n "+ns) {
		t.Errorf("with no controller: %+v, want not OK, saying what to check", s)
	}

	obj := env.Get(t, kustomizationGVK, ns, "payments")
	if got := obj.GetAnnotations()[fluxRequestedAt]; got != ch.requestedAt {
		t.Fatalf("%s = %q, want %q", fluxRequestedAt, got, ch.requestedAt)
	}
	_ = unstructured.SetNestedField(obj.Object, ch.requestedAt, "status", "lastHandledReconcileAt")
	if _, err := env.Dynamic.Resource(Kustomization).Namespace(ns).UpdateStatus(t.Context(), obj, metav1.UpdateOptions{FieldManager: "kustomize-controller"}); err != nil {
		t.Fatal(err)
	}
	if s := Settle(t.Context(), env.Dynamic, ch, 10*time.Second); !s.OK || !strings.Contains(s.Message, "has handled") {
		t.Errorf("after the controller answered: %+v, want OK", s)
	}
}
