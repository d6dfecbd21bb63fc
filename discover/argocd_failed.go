package discover

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// comparisonFailed says why Argo CD's automated sync of the Application u
// does not run as things stand, or "": its last compare could not render or
// fetch what Git holds (a ComparisonError condition), so its sync status is
// Unknown, and autoSync runs only for an app it finds OutOfSync
// (controller/state.go: failedToLoadObjs). Nothing is synced, self-heal
// included, until a compare succeeds again (every
// timeout.reconciliation, 3 minutes by default, or a refresh).
func comparisonFailed(u *unstructured.Unstructured, a *application) string {
	if a.Status.Sync.Status != "Unknown" {
		return ""
	}
	for _, c := range a.Status.Conditions {
		if c.Type == "ComparisonError" {
			return fmt.Sprintf("Argo CD cannot compare %s with Git (ComparisonError: %s), and its automated sync runs only for an app it finds OutOfSync: nothing is synced until what it cannot render or fetch is mended", ref(u), reconcilerMessage(c.Message))
		}
	}
	return ""
}

// failedSync says why Argo CD's automated sync (and with it self-heal) of
// the Application u will not run again as things stand, or "": its last
// sync operation failed, and that sync was to the revisions its target
// resolves to now, from the sources it has now. Argo CD's autoSync then
// skips ("failed previous sync attempt to … and will not retry",
// alreadyAttemptedSync, SyncError condition) until Git moves past that
// revision, the Application's source changes, or someone syncs by hand; a
// failed operation with no sync result is skipped the same way. A sync
// still retrying is Running, not failed.
func failedSync(u *unstructured.Unstructured, a *application) string {
	op := a.Status.OperationState
	if op == nil || (op.Phase != "Failed" && op.Phase != "Error") {
		return ""
	}
	rev := ""
	if r := op.SyncResult; r != nil {
		// The sources as the Application has them now and as that sync
		// had them (compared whole, as Argo CD compares them).
		field := "source"
		same := r.Revision == a.Status.Sync.Revision
		rev = r.Revision
		if len(a.Spec.Sources) > 0 {
			field = "sources"
			same = slices.Equal(r.Revisions, a.Status.Sync.Revisions)
			rev = strings.Join(r.Revisions, ", ")
		}
		now, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", field)
		if h := a.Spec.SourceHydrator; h != nil {
			// Its source is the sync source (spec.GetSource), as JSON
			// writes an ApplicationSource.
			field, same = "source", r.Revision == a.Status.Sync.Revision
			s := h.syncSource()
			src := map[string]any{"repoURL": s.RepoURL}
			if s.Path != "" {
				src["path"] = s.Path
			}
			if s.TargetRevision != "" {
				src["targetRevision"] = s.TargetRevision
			}
			now, rev = src, r.Revision
		}
		then, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "operationState", "syncResult", field)
		if !same || !reflect.DeepEqual(now, then) {
			return ""
		}
	}
	msg := reconcilerMessage(op.Message)
	to := ""
	if rev != "" {
		to = " to " + rev
	}
	return fmt.Sprintf("the last sync of %s%s failed (%s: %s), and Argo CD's automated sync does not retry a sync that failed until Git moves past that revision, the Application's source changes or someone syncs by hand", ref(u), to, op.Phase, msg)
}
