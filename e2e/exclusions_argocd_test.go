package e2e

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// A kind argocd-cm's resource.exclusions names (Argo CD's own install
// manifest excludes Endpoints and EndpointSlices), or one Argo CD always
// excludes (Leases, Events), is dropped from an Application's Git before
// Argo CD compares or syncs it: the real Argo CD never creates it, keeps
// the app Synced and says so in an ExcludedResourceWarning condition. A
// chart's Endpoints for an outside database (kube-prometheus-stack's
// kubeEtcd.endpoints is one) is never applied. driftscan must not report
// such an object Missing with a hint that self-heal creates it: it is not
// compared, and a warning names it and why.
func TestArgoCDExcludedKindsAreNeverApplied(t *testing.T) {
	needArgo(t)
	setArgoCM(t, "resource.exclusions", "- apiGroups: ['', discovery.k8s.io]\n  kinds: [Endpoints, EndpointSlice]\n")
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		"app/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {level: info}\n",
		"app/db.yaml": `apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  ports: [{name: pg, port: 5432}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: db}
subsets:
- addresses: [{ip: 10.20.30.40}]
  ports: [{name: pg, port: 5432}]
`,
		"app/lock.yaml": "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: leader}\nspec: {holderIdentity: nobody}\n",
	})
	const name = "excluded-kinds"
	// Auto-sync without self-heal: the edit below must stay until the
	// scan sees it (self-heal reverts it within seconds, sooner than a
	// scan on a busy machine).
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "app", Automated: "{selfHeal: false}"})
	waitArgoSynced(t, name, repo.Head())
	env.Get(t, cluster.ConfigMap, ns, "cfg") // the app did sync

	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "endpoints"},
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	} {
		if _, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(t.Context(), map[string]string{"endpoints": "db", "leases": "leader"}[gvr.Resource], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: Argo CD created an object of a kind it excludes (err %v); the test expects it never applied", gvr.Resource, err)
		}
	}
	app, err := env.Dynamic.Resource(reconcilers.Application).Namespace(argo.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	var warned []string
	for _, c := range conds {
		if c, _ := c.(map[string]any); c["type"] == "ExcludedResourceWarning" {
			warned = append(warned, c["message"].(string))
		}
	}
	if len(warned) == 0 || !strings.Contains(strings.Join(warned, "|"), "Endpoints db") {
		t.Errorf("Argo CD's ExcludedResourceWarning conditions %q: the test expects one naming Endpoints db", warned)
	}

	r := scan(t, "--from", "argocd", "--app", name)
	if got := activeFindings(r); len(got) != 0 {
		t.Errorf("objects Argo CD never applies are drift:\n%s", describe(got))
	}
	excluded := map[string]string{}
	for _, w := range r.Warnings {
		if w.Code == report.WarnNotApplied {
			excluded[w.Object] = w.Message
		}
	}
	for obj, why := range map[string]string{
		"Endpoints/" + ns + "/db": "resource.exclusions",
		"Lease/" + ns + "/leader": "always excludes",
	} {
		if !strings.Contains(excluded[obj], why) || !strings.Contains(excluded[obj], "never applies") {
			t.Errorf("want a NotApplied warning for %s saying %q, got warnings %+v", obj, why, r.Warnings)
		}
	}

	// The config is still compared: an edit of it is the one finding.
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "cfg", types.MergePatchType, `{"data":{"level":"debug"}}`)
	if got := activeFindings(scan(t, "--from", "argocd", "--app", name)); len(got) != 1 || got[0].Path != ".data.level" {
		t.Errorf("want the edit of level the one active finding, got:\n%s", describe(got))
	}
}
