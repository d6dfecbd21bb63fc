package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// Argo CD's documentation says a repository is permitted when an allowing
// sourceRepos entry matches it and no denying ("!") one does. Its code
// (AppProject.IsSourcePermitted) counts a denial that does not match as a
// match, so a project of denials alone lets its Applications use every
// other repository; a denial that matches refuses, whatever allows. The
// scan fetches nothing Argo CD refuses, nor what only that reading of a
// denial permits: it says Argo CD syncs it.
func TestArgoCDDenyOnlySourceRepos(t *testing.T) {
	needArgo(t)
	t.Parallel()
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	repo := gitServer.NewRepo(t, configMaps("cfg-deny-only"))

	denyOnly, denied := "deny-only-"+suffix, "denied-"+suffix
	createProjectOf(t, argo.Namespace, denyOnly, []string{"!https://git.example.com/**"}, nil)
	createProjectOf(t, argo.Namespace, denied, []string{"!" + repo.URL, "*"}, nil)
	createArgoApp(t, argoApp{Name: denyOnly, Namespace: dest, Repo: repo, Path: "app", Project: denyOnly})
	createArgoApp(t, argoApp{Name: denied, Namespace: dest, Repo: repo, Path: "app", Project: denied})

	syncArgoApp(t, denyOnly)
	waitArgoSynced(t, denyOnly, repo.Head())
	refusal := waitArgoCondition(t, argo.Namespace, denied, "not permitted in project")
	if refusal == "" {
		t.Fatalf("Argo CD did not refuse %s, whose project denies its repository", denied)
	}

	// driftscan holds to what the documentation says (the project's author
	// meant it) and says what Argo CD does instead.
	r := scanExiting(t, 2, "--from", "argocd", "--app", denyOnly)
	if errs := appErrors(r); len(errs) != 1 || !strings.Contains(errs[0], "matches no allowing sourceRepos entry") || !strings.Contains(errs[0], "Argo CD does sync it") {
		t.Errorf("scan of %s: errors %q, want one: no allowing entry, and Argo CD syncs it anyway", denyOnly, errs)
	}
	r = scanExiting(t, 2, "--from", "argocd", "--app", denied)
	if errs := appErrors(r); len(errs) != 1 || !strings.Contains(errs[0], `is denied by sourceRepos entry "!`+repo.URL+`"`) {
		t.Errorf("scan of %s: errors %q, want one: its repository denied by its project (Argo CD: %s)", denied, errs, refusal)
	}
}

// An AppProject's resource lists: Argo CD validates every object of a sync
// against them and runs none when one is not permitted (gitops-engine: "one
// or more synchronization tasks are not valid"), so with a cluster-scoped
// object the project does not permit, self-heal reverts nothing of the app.
// The scan says the object is not permitted and promises no revert.
func TestArgoCDProjectResources(t *testing.T) {
	needArgo(t)
	t.Parallel()
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	name, role := "res-"+suffix, "reader-"+dest
	files := plainAppWith(map[string]string{"web/role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: " + role + "}\nrules: []\n"})
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	app := argoApp{Name: name, Namespace: dest, Repo: gitServer.NewRepo(t, files), Path: "web", Project: name, Automated: "{selfHeal: true}"}
	checkProjectStopsPermitting(t, app, "ClusterRole", "does not permit the cluster-scoped rbac.authorization.k8s.io/ClusterRole "+role)
}

// The namespace Argo CD manages for an Application (CreateNamespace=true
// with managedNamespaceMetadata) is a task of every sync, validated against
// the project as any object (gitops-engine autoCreateNamespace, then the
// permission check): a project whose clusterResourceWhitelist lacks
// Namespace fails every sync of such an app, the namespace existing or not.
func TestArgoCDManagedNamespaceTheProjectDoesNotPermit(t *testing.T) {
	needArgo(t)
	t.Parallel()
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	name := "mns-" + suffix
	app := argoApp{Name: name, Namespace: dest, Repo: gitServer.NewRepo(t, plainApp), Path: "web", Project: name, Automated: "{selfHeal: true}",
		SyncOptions: []string{"CreateNamespace=true"},
		SyncPolicy:  "    managedNamespaceMetadata:\n      labels: {team: shop}\n"}
	checkProjectStopsPermitting(t, app, "Namespace", "does not permit the cluster-scoped Namespace "+dest)
}

// checkProjectStopsPermitting syncs app (web-config's LOG_LEVEL, with a
// cluster-scoped object of kind) under a project of its name that permits
// every cluster-scoped kind, sees self-heal revert a person's edit, takes
// the project's clusterResourceWhitelist away, and then sees the person's
// next edit hold while each sync fails. The scan must say the object of
// kind is not permitted (its error holding refused) and promise no revert.
func checkProjectStopsPermitting(t *testing.T, app argoApp, kind, refused string) {
	t.Helper()
	name, dest := app.Name, app.Namespace
	createProjectSpec(t, argo.Namespace, name, map[string]any{
		"sourceRepos":              []any{"*"},
		"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
		"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
	})
	createSelfHealingApp(t, app)

	// The project stops permitting cluster-scoped objects.
	projects := env.Dynamic.Resource(reconcilers.AppProject).Namespace(argo.Namespace)
	if _, err := projects.Patch(t.Context(), name, types.MergePatchType, []byte(`{"spec":{"clusterResourceWhitelist":null}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	humanEdit(t, dest, "debug")
	var failed string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		// Failed, or Running while the automated sync retries.
		op, _, _ := unstructured.NestedMap(getArgoApp(t, name).Object, "status", "operationState")
		if msg, _ := op["message"].(string); strings.Contains(msg, "one or more synchronization tasks are not valid") {
			failed = msg
		}
		return failed != "", nil
	})
	if err != nil {
		a := getArgoApp(t, name)
		op, _, _ := unstructured.NestedMap(a.Object, "status", "operationState")
		sync, _, _ := unstructured.NestedMap(a.Object, "status", "sync")
		res, _, _ := unstructured.NestedSlice(a.Object, "status", "resources")
		conds, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
		level, _ := logLevel(t.Context(), dest)
		t.Fatalf("Argo CD's self-heal of %s did not fail after its project stopped permitting the %s: LOG_LEVEL %q\noperation %v\nsync %v\nresources %v\nconditions %v", name, kind, level, op, sync, res, conds)
	}
	holds(t, dest, "debug", holdFor)

	r := scanExiting(t, 2, "--from", "argocd", "--app", name)
	var objErr string
	for _, o := range r.Apps[0].Objects {
		if o.Kind == kind {
			objErr = o.Error
		}
	}
	hint := logLevelHint(r)
	if !strings.Contains(objErr, refused) || !strings.Contains(objErr, "fails every sync") {
		t.Errorf("the %s's error is %q, want the project's refusal and the failing syncs (Argo CD: %s)", kind, objErr, failed)
	}
	if !strings.Contains(hint, "every sync of Application/"+argo.Namespace+"/"+name+" fails") || strings.Contains(hint, "will be reverted") {
		t.Errorf("the human's LOG_LEVEL hint is %q, want that no sync reverts it", hint)
	}
}

// An AppProject's destinations apply to every namespaced object of a sync,
// not only to the Application's destination: an object a chart puts in
// another namespace (a ServiceMonitor in monitoring, say) fails the sync of
// the whole app (validateSyncPermissions). The scan names that object and
// the project.
func TestArgoCDProjectDestinations(t *testing.T) {
	needArgo(t)
	t.Parallel()
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	other := "elsewhere-" + suffix
	createNamespace(t, other)
	name := "dst-" + suffix
	files := configMaps("cfg-here")
	files["app/elsewhere.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-elsewhere, namespace: " + other + "}\ndata: {k: v}\n"
	repo := gitServer.NewRepo(t, files)
	createProjectSpec(t, argo.Namespace, name, map[string]any{
		"sourceRepos":  []any{"*"},
		"destinations": []any{map[string]any{"server": "https://kubernetes.default.svc", "namespace": dest}},
	})
	createArgoApp(t, argoApp{Name: name, Namespace: dest, Repo: repo, Path: "app", Project: name})
	syncArgoApp(t, name)
	var failed string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		op, _, _ := unstructured.NestedMap(getArgoApp(t, name).Object, "status", "operationState")
		if msg, _ := op["message"].(string); strings.Contains(msg, "namespace "+other+" is not permitted in project") {
			failed = msg
		}
		return failed != "", nil
	})
	if err != nil {
		t.Fatalf("Argo CD's sync of %s did not fail over the ConfigMap in %s", name, other)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(dest).Get(t.Context(), "cfg-here", metav1.GetOptions{}); err == nil {
		t.Fatalf("Argo CD applied cfg-here although its sync failed (%s): the test expects nothing applied", failed)
	}

	r := scanExiting(t, 2, "--from", "argocd", "--app", name)
	got := map[string]string{}
	for _, o := range r.Apps[0].Objects {
		got[o.Name] = string(o.Status) + " " + o.Error
	}
	if !strings.HasPrefix(got["cfg-elsewhere"], "Error ") || !strings.Contains(got["cfg-elsewhere"], "does not permit namespace "+other) || !strings.HasPrefix(got["cfg-here"], "Missing") {
		t.Errorf("objects %q: want cfg-elsewhere an error naming the project's destinations (Argo CD: %s), cfg-here Missing", got, failed)
	}
}

// An Application whose own destination its AppProject does not permit:
// Argo CD gives it the condition InvalidSpecError and neither compares nor
// syncs anything of it, auto-sync or not. The scan says so once, as an app
// error, where each of its objects was an error of its own.
func TestArgoCDApplicationDestinationRefused(t *testing.T) {
	needArgo(t)
	t.Parallel()
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	other := "refused-" + suffix
	createNamespace(t, other)
	name := "dst-refused-" + suffix
	repo := gitServer.NewRepo(t, configMaps("cfg-a", "cfg-b"))
	createProjectSpec(t, argo.Namespace, name, map[string]any{
		"sourceRepos":  []any{"*"},
		"destinations": []any{map[string]any{"server": "https://kubernetes.default.svc", "namespace": dest}},
	})
	createArgoApp(t, argoApp{Name: name, Namespace: other, Repo: repo, Path: "app", Project: name, Automated: "{selfHeal: true}"})
	invalid := waitArgoCondition(t, argo.Namespace, name, "do not match any of the allowed destinations")
	if !strings.HasPrefix(invalid, "InvalidSpecError: ") {
		t.Fatalf("Argo CD did not refuse %s, whose project does not permit its destination namespace %s: condition %q", name, other, invalid)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(other).Get(t.Context(), "cfg-a", metav1.GetOptions{}); err == nil {
		t.Fatalf("Argo CD synced cfg-a although %s is refused (%s): the test expects nothing synced", name, invalid)
	}

	r := scanExiting(t, 2, "--from", "argocd", "--app", name)
	errs := appErrors(r)
	if len(errs) != 1 || !strings.Contains(errs[0], "does not permit the Application's destination") || !strings.Contains(errs[0], "Argo CD does not sync") {
		t.Errorf("scan of %s: app errors %q, want one: its destination not permitted by its project, so Argo CD syncs nothing (Argo CD: %s)", name, errs, invalid)
	}
	for _, a := range r.Apps {
		if len(a.Objects) > 0 {
			t.Errorf("app %s has %d objects: a refused Application's source is not fetched", a.Name, len(a.Objects))
		}
	}
}

// waitArgoCondition waits up to a minute for a condition of the Application
// ns/name whose message holds substr, and returns it as "<type>: <message>";
// "" when none came.
func waitArgoCondition(t *testing.T, ns, name, substr string) string {
	t.Helper()
	var found string
	_ = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		conds, _, _ := unstructured.NestedSlice(getArgoAppIn(t, ns, name).Object, "status", "conditions")
		for _, c := range conds {
			c, _ := c.(map[string]any)
			if msg, _ := c["message"].(string); strings.Contains(msg, substr) {
				found = fmt.Sprintf("%v: %s", c["type"], msg)
			}
		}
		return found != "", nil
	})
	return found
}
