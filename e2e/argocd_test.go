package e2e

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// argoApp says what Application a test creates.
type argoApp struct {
	Name, Namespace string // the Application's name; its destination namespace
	Repo            *reconcilers.Repo
	Path            string
	// Source is extra YAML under spec.source (helm:, kustomize:), indented
	// by four spaces.
	Source string
	// SSA adds the sync option ServerSideApply=true.
	SSA bool
	// SyncOptions are more sync options (RespectIgnoreDifferences=true).
	SyncOptions []string
	// Automated is the YAML of spec.syncPolicy.automated; "" for none.
	Automated string
	// Spec is more YAML under spec (ignoreDifferences:), indented by two
	// spaces.
	Spec string
	// SyncPolicy is more YAML under spec.syncPolicy
	// (managedNamespaceMetadata:), indented by four spaces.
	SyncPolicy string
	// AppNamespace is the Application's namespace: "" for the shared Argo
	// CD's own, another Argo CD's, or one of the shared Argo CD's
	// application namespaces (apps in any namespace).
	AppNamespace string
	// Project is the AppProject; "" for default.
	Project string
	// Labels are the Application's labels, as a YAML flow map; "" for
	// none.
	Labels string
	// Destination is spec.destination as a YAML flow map; "" for
	// in-cluster by its server, in Namespace.
	Destination string
}

// createArgoApp creates the Application as a person does with kubectl, and
// deletes it (not what it deployed) when the test ends.
func createArgoApp(t *testing.T, a argoApp) {
	t.Helper()
	env.Need(t)
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s, labels: %s}
spec:
  project: %s
  destination: %s
  source:
    repoURL: %s
    targetRevision: main
    path: %s
%s%s  syncPolicy:
`, a.Name, cmp.Or(a.AppNamespace, argo.Namespace), cmp.Or(a.Labels, "{}"), cmp.Or(a.Project, "default"),
		cmp.Or(a.Destination, "{server: https://kubernetes.default.svc, namespace: "+a.Namespace+"}"), a.Repo.URL, a.Path, a.Source, a.Spec)
	if a.Automated != "" {
		fmt.Fprintf(&b, "    automated: %s\n", a.Automated)
	}
	options := a.SyncOptions
	if a.SSA {
		options = append(options, "ServerSideApply=true")
	}
	if len(options) > 0 {
		fmt.Fprintf(&b, "    syncOptions: [%s]\n", strings.Join(options, ", "))
	}
	b.WriteString(a.SyncPolicy)
	obj := cluster.Object(t, b.String())
	ns := cmp.Or(a.AppNamespace, argo.Namespace)
	if _, err := env.Dynamic.Resource(reconcilers.Application).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatalf("create Application %s/%s: %v", ns, a.Name, err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(reconcilers.Application).Namespace(ns).Delete(context.Background(), a.Name, metav1.DeleteOptions{})
	})
}

// getArgoApp reads an Application.
func getArgoApp(t *testing.T, name string) *unstructured.Unstructured {
	return getArgoAppIn(t, argo.Namespace, name)
}

// getArgoAppIn reads the Application ns/name.
func getArgoAppIn(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	env.Need(t)
	u, err := env.Dynamic.Resource(reconcilers.Application).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Application %s/%s: %v", ns, name, err)
	}
	return u
}

// waitArgoSynced waits until Argo CD reports the Application Synced at
// revision with its last sync operation Succeeded, and returns the time it
// took. Revision "" is any: a multi-source Application has no single one.
func waitArgoSynced(t *testing.T, name, revision string) time.Duration {
	t.Helper()
	return waitArgoSyncedIn(t, argo, argo.Namespace, name, revision)
}

// waitArgoSyncedIn is waitArgoSynced for the Application ns/name of the
// Argo CD a.
func waitArgoSyncedIn(t *testing.T, a *reconcilers.ArgoCD, ns, name, revision string) time.Duration {
	t.Helper()
	env.Need(t)
	start := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(reconcilers.Application).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		status, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		opRev, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "syncResult", "revision")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		last = fmt.Sprintf("sync %s at %s, operation %s at %s, conditions %v", status, rev, phase, opRev, conds)
		if revision == "" {
			history, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
			return status == "Synced" && phase == "Succeeded" && len(history) > 0, nil
		}
		return status == "Synced" && rev == revision && phase == "Succeeded" && opRev == revision, nil
	})
	if err != nil {
		t.Fatalf("Application %s/%s never synced %s: %s\n%s", ns, name, revision, last, a.Logs(3000))
	}
	return time.Since(start)
}

// refreshArgoApp asks Argo CD to compare the Application with Git now,
// bypassing its caches, as `argocd app get --hard-refresh` does.
func refreshArgoApp(t *testing.T, name string) {
	t.Helper()
	refreshArgoAppIn(t, argo.Namespace, name)
}

// refreshArgoAppIn is refreshArgoApp for the Application ns/name.
func refreshArgoAppIn(t *testing.T, ns, name string) {
	t.Helper()
	env.Need(t)
	patch := `{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`
	if _, err := env.Dynamic.Resource(reconcilers.Application).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "argocd-server"}); err != nil {
		t.Fatalf("refresh Application %s/%s: %v", ns, name, err)
	}
}
