package breakglass

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// Settled says whether a suspension has reached the reconciler, for the
// person about to change live state by hand.
type Settled struct {
	// OK: nothing the reconciler still had in flight can revert a change
	// made from now on.
	OK bool
	// Message says what was seen, or what to check.
	Message string
}

// settleInterval is how often Settle reads the target.
const settleInterval = 250 * time.Millisecond

// fluxRequestedAt asks a Flux controller to reconcile now; it answers in
// status.lastHandledReconcileAt.
const fluxRequestedAt = "reconcile.fluxcd.io/requestedAt"

// Settle waits up to timeout until t's reconciler has taken in the
// suspension ch made. Patching spec is not enough: a reconcile that read
// the object before the patch goes on and applies Git, and reverts a hotfix
// made in the meantime (seen with the real kustomize-controller under load:
// the edit reverted 0.4s after suspend returned).
//
// Flux's controllers handle one object at a time and, at the end of every
// reconcile, suspended or not, copy reconcile.fluxcd.io/requestedAt into
// status.lastHandledReconcileAt: once it holds the value the suspension
// set, the reconcile that was in flight has ended and the next one saw
// spec.suspend. Argo CD goes on with a sync operation that already runs
// (status.operationState.phase Running) after automated sync is turned
// off: once there is none, nothing is left to revert the change.
func Settle(ctx context.Context, client dynamic.Interface, ch Change, timeout time.Duration) Settled {
	if ch.DryRun {
		return Settled{OK: true}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := ch.Target
	for {
		obj, err := client.Resource(t.Resource).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
		if err == nil {
			if s, done := settled(t, obj, ch.requestedAt); done {
				return s
			}
		}
		select {
		case <-ctx.Done():
			why := "it has not answered"
			if err != nil {
				why = err.Error()
			}
			return Settled{Message: fmt.Sprintf("%s's reconciler has not taken in the suspension after %s (%s): a sync it had begun may still revert a change made now; check `kubectl get %s %s -n %s` before you change anything",
				t, timeout, why, t.Resource.Resource, t.Name, t.Namespace)}
		case <-time.After(settleInterval):
		}
	}
}

// settled reads whether obj shows the suspension taken in.
func settled(t Target, obj *unstructured.Unstructured, requestedAt string) (Settled, bool) {
	if t.argo() {
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "operationState", "phase")
		if phase == "Running" || phase == "Terminating" {
			return Settled{}, false
		}
		return Settled{OK: true, Message: fmt.Sprintf("%s runs no sync operation: nothing Argo CD had begun can revert a change made now", t)}, true
	}
	handled, _, _ := unstructured.NestedString(obj.Object, "status", "lastHandledReconcileAt")
	if requestedAt != "" && handled == requestedAt {
		return Settled{OK: true, Message: fmt.Sprintf("the Flux controller has handled %s since it was suspended: nothing it had begun can revert a change made now", t)}, true
	}
	return Settled{}, false
}
