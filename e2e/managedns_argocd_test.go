package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// restricted is the Pod Security label an Application's managed namespace
// metadata sets in TestArgoCDManagedNamespaceMetadata.
const restricted = "pod-security.kubernetes.io/enforce"

// Argo CD's managed namespace metadata (the sync option CreateNamespace=true
// with spec.syncPolicy.managedNamespaceMetadata), as platform teams set Pod
// Security labels on each app's namespace: Argo CD applies those labels
// and annotations to the destination namespace with server-side apply at
// each sync, and never compares them. A person's removal of the Pod
// Security label leaves the app Synced and self-heal idle until some sync
// puts it back. driftscan compares them as what Git declares, and its hint
// says that Argo CD does not.
func TestArgoCDManagedNamespaceMetadata(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	const name = "managed-ns"
	repo := gitServer.NewRepo(t, plainApp)
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "web", Automated: "{selfHeal: true, prune: true}",
		SyncOptions: []string{"CreateNamespace=true"},
		SyncPolicy:  "    managedNamespaceMetadata:\n      labels: {" + restricted + ": restricted, team: shop}\n      annotations: {owner: shop-oncall}\n"})
	waitArgoSynced(t, name, repo.Head())
	enforced := func(ctx context.Context) (string, bool) {
		n, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return "", false
		}
		v, ok := n.Labels[restricted]
		return v, ok
	}
	if v, _ := enforced(t.Context()); v != "restricted" {
		t.Fatalf("the namespace's %s is %q: the test expects Argo CD to have applied restricted", restricted, v)
	}
	r := scan(t, "--from", "argocd", "--app", name)
	checkClean(t, r, 4)

	// A person lifts the restriction.
	env.Patch(t, "kubectl-label", cluster.Namespace, "", ns, types.MergePatchType, `{"metadata":{"labels":{"`+restricted+`":null}}}`)
	if got := argoSyncAfterRefresh(t, name); got != "Synced" {
		t.Fatalf("Argo CD says %s after the label's removal; the test expects it not to compare managed namespace metadata (Synced)", got)
	}
	time.Sleep(5 * time.Second)
	if _, ok := enforced(t.Context()); ok {
		t.Fatal("the label came back without a sync: the test expects self-heal not to act")
	}
	got := activeFindings(scan(t, "--from", "argocd", "--app", name))
	if len(got) != 1 || got[0].Object != "Namespace/"+ns || got[0].Path != ".metadata.labels."+restricted || got[0].Type != report.TypeRemoved ||
		!strings.Contains(got[0].Hint, "never compares") || strings.Contains(got[0].Hint, "will be reverted at the next sync") {
		t.Errorf("want the removed label of the namespace, with the hint that Argo CD never compares it, got:\n%s", describe(got))
	}

	// The next sync, for any reason, puts it back.
	syncArgoApp(t, name)
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		v, _ := enforced(ctx)
		return v == "restricted", nil
	})
	if err != nil {
		t.Fatal("a sync did not put the label back")
	}
	checkClean(t, scan(t, "--from", "argocd", "--app", name), 4)
}
