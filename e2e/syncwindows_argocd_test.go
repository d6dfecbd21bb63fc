package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// An AppProject's deny sync window (a change freeze, a night without
// deploys) holds Argo CD's automated sync, and with it self-heal: a
// person's edit during the window stays until it closes, and the first
// automated sync after reverts it. The scan says so, and until when, where
// it said the edit would be reverted at the next sync; once the window is
// gone, self-heal reverts the edit at the app's next reconcile, as the hint
// said it would.
func TestArgoCDSyncWindowDefersSelfHeal(t *testing.T) {
	needArgo(t)
	t.Parallel()
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	name := "window-" + suffix
	repo := gitServer.NewRepo(t, plainApp)
	createProjectSpec(t, argo.Namespace, name, map[string]any{
		"sourceRepos":  []any{"*"},
		"destinations": []any{map[string]any{"server": "*", "namespace": "*"}},
	})
	createSelfHealingApp(t, argoApp{Name: name, Namespace: dest, Repo: repo, Path: "web", Project: name, Automated: "{selfHeal: true}"})

	// A deny window opened a minute ago, for two hours, for this app.
	start := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	window := map[string]any{
		"kind": "deny", "schedule": fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour()), "duration": "2h",
		"applications": []any{name}, "description": "change freeze",
	}
	setWindows := func(windows ...any) {
		t.Helper()
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"syncWindows": windows}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Dynamic.Resource(reconcilers.AppProject).Namespace(argo.Namespace).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}
	setWindows(window)
	time.Sleep(3 * time.Second) // for Argo CD to see the project change
	humanEdit(t, dest, "debug")
	if got := argoSyncAfterRefresh(t, name); got != "OutOfSync" {
		t.Fatalf("Argo CD says %s after the edit in the window; the test expects OutOfSync", got)
	}
	holds(t, dest, "debug", holdFor)

	r := scanExiting(t, 1, "--from", "argocd", "--app", name)
	until := start.Add(2 * time.Hour).Format("2006-01-02 15:04 UTC")
	hint := logLevelHint(r)
	if !strings.Contains(hint, "the deny sync window") || !strings.Contains(hint, "(change freeze) of AppProject "+argo.Namespace+"/"+name+" blocks automated syncs until "+until) ||
		strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that the window blocks self-heal until %s, and no revert at the next sync", hint, until)
	}
	if g := r.Apps[0].GitOps; g == nil || !strings.Contains(g.SyncBlocked, until) {
		t.Errorf("the app's gitOps %+v: want syncBlocked to say until %s", g, until)
	}

	// The window goes: at its next reconcile of the app, self-heal reverts
	// the edit, as the hint said. (Argo CD does not reconcile a project's
	// apps when the project changes: the revert waits for the app's resync
	// period, or a refresh, as it does when a window closes on its own.)
	setWindows()
	holds(t, dest, "debug", 5*time.Second)
	refreshArgoApp(t, name)
	waitReverted(t, dest, "info", time.Minute)
	r = scan(t, "--from", "argocd", "--app", name)
	if g := r.Apps[0].GitOps; g == nil || g.SyncBlocked != "" {
		t.Errorf("the app's gitOps %+v: want no syncBlocked once the project has no window", g)
	}
}

// A sync that failed is not retried by Argo CD's automated sync for the
// same revision (autoSync: "failed previous sync attempt … and will not
// retry"), self-heal included: a person's edit after it holds until Git
// moves on. The scan says so, and which sync failed, where it said the
// edit would be reverted at the next sync; the next commit's sync reverts
// the edit, as the hint said it would.
func TestArgoCDFailedSyncIsNotRetried(t *testing.T) {
	needArgo(t)
	t.Parallel()
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	name := "failed-" + suffix
	repo := gitServer.NewRepo(t, plainApp)
	createSelfHealingApp(t, argoApp{Name: name, Namespace: dest, Repo: repo, Path: "web", Automated: "{selfHeal: true}", SyncPolicy: "    retry: {limit: 0}\n"})

	// A commit the API server refuses: its sync fails.
	bad := repo.Commit(t, "a ConfigMap with an invalid name", map[string]string{"web/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\ndata: {k: v}\n"})
	refreshArgoApp(t, name)
	var failed string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		op, _, _ := unstructured.NestedMap(getArgoApp(t, name).Object, "status", "operationState")
		rev, _, _ := unstructured.NestedString(op, "syncResult", "revision")
		if op["phase"] == "Failed" && rev == bad {
			failed, _ = op["message"].(string)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Argo CD's automated sync of %s to %s did not fail", name, bad)
	}
	t.Logf("Argo CD's sync to %s: %s", bad, failed)
	humanEdit(t, dest, "debug")
	if got := argoSyncAfterRefresh(t, name); got != "OutOfSync" {
		t.Fatalf("Argo CD says %s after the edit; the test expects OutOfSync", got)
	}
	holds(t, dest, "debug", holdFor)

	r := scanExiting(t, 2, "--from", "argocd", "--app", name)
	hint := logLevelHint(r)
	if !strings.Contains(hint, "the last sync of Application/"+argo.Namespace+"/"+name+" to "+bad+" failed (Failed: ") ||
		!strings.Contains(hint, "does not retry a sync that failed until Git moves past that revision") || strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that the failed sync to %s is not retried (Argo CD: %s), and no revert at the next sync", hint, bad, failed)
	}

	// Git moves on: its sync reverts the edit, as the hint said.
	good := repo.Commit(t, "the invalid ConfigMap goes", map[string]string{"web/bad.yaml": ""})
	refreshArgoApp(t, name)
	waitArgoSynced(t, name, good)
	waitReverted(t, dest, "info", time.Minute)
	r = scan(t, "--from", "argocd", "--app", name)
	if g := r.Apps[0].GitOps; g == nil || g.SyncBlocked != "" {
		t.Errorf("the app's gitOps %+v: want no syncBlocked once a sync succeeded", g)
	}
}

// Argo CD syncs automatically only an app it finds OutOfSync: when it
// cannot render what Git holds (a ComparisonError; here a manifest that
// does not parse), the app's sync status is Unknown and nothing is synced,
// self-heal included, so a person's edit holds until Git is mended. The
// scan says so, where it said the edit would be reverted at the next sync.
func TestArgoCDComparisonErrorSyncsNothing(t *testing.T) {
	needArgo(t)
	t.Parallel()
	dest := env.Namespace(t, nil)
	name := "uncompared-" + dest[strings.LastIndex(dest, "-")+1:]
	repo := gitServer.NewRepo(t, plainApp)
	createSelfHealingApp(t, argoApp{Name: name, Namespace: dest, Repo: repo, Path: "web", Automated: "{selfHeal: true}"})

	repo.Commit(t, "a manifest that does not parse", map[string]string{"web/bad.yaml": "apiVersion: v1\nkind: [ConfigMap\nmetadata: {name: bad}\n"})
	refreshArgoApp(t, name)
	failed := waitArgoCondition(t, argo.Namespace, name, "bad.yaml")
	if !strings.HasPrefix(failed, "ComparisonError: ") {
		t.Fatalf("Argo CD did not fail to compare %s: condition %q", name, failed)
	}
	t.Logf("Argo CD: %s", failed)
	humanEdit(t, dest, "debug")
	holds(t, dest, "debug", holdFor)

	r := scanExiting(t, 2, "--from", "argocd", "--app", name)
	hint := logLevelHint(r)
	if !strings.Contains(hint, "Argo CD cannot compare Application/"+argo.Namespace+"/"+name+" with Git (ComparisonError: ") ||
		!strings.Contains(hint, "this change holds until then") || strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("the edit's hint is %q, want that Argo CD cannot compare the app, so the edit holds (Argo CD: %s)", hint, failed)
	}

	// Git is mended: the next compare finds the app OutOfSync, and
	// self-heal reverts the edit.
	good := repo.Commit(t, "the manifest goes", map[string]string{"web/bad.yaml": ""})
	refreshArgoApp(t, name)
	waitArgoSynced(t, name, good)
	waitReverted(t, dest, "info", time.Minute)
	r = scan(t, "--from", "argocd", "--app", name)
	if g := r.Apps[0].GitOps; g == nil || g.SyncBlocked != "" {
		t.Errorf("the app's gitOps %+v: want no syncBlocked once Argo CD compares it again", g)
	}
}

// createSelfHealingApp creates the Application app of plainApp's web (its
// Automated self-healing), waits for its sync, and sees self-heal revert a
// person's edit of web-config's LOG_LEVEL.
func createSelfHealingApp(t *testing.T, app argoApp) {
	t.Helper()
	createArgoApp(t, app)
	waitArgoSynced(t, app.Name, app.Repo.Head())
	humanEdit(t, app.Namespace, "debug")
	waitReverted(t, app.Namespace, "info", time.Minute)
}

// logLevelHint is the hint of the report's finding of web-config's
// LOG_LEVEL, "" when there is none.
func logLevelHint(r *report.Report) string {
	return logLevelHintOf(r, "web-config")
}

// logLevelHintOf is logLevelHint of the ConfigMap cm.
func logLevelHintOf(r *report.Report, cm string) string {
	for _, f := range activeFindings(r) {
		if f.Object == "ConfigMap/"+cm && f.Path == ".data.LOG_LEVEL" {
			return f.Hint
		}
	}
	return ""
}
