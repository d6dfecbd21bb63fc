package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/cluster"
)

// The replica war at every deploy: Git declares replicas 3, an
// Application ignores /spec/replicas (the HPA's), the HPA scaled to 5.
// The real Argo CD shows the app Synced, so self-heal never acts; but the
// next sync, for a change of anything else, applies Git's 3 unless the
// Application has the sync option RespectIgnoreDifferences=true. driftscan
// keeps the finding ignored (a debt) and says which of the two happens.
func TestArgoCDSyncAppliesIgnoredFieldsUnlessRespectIgnoreDifferences(t *testing.T) {
	needArgo(t)
	for _, respect := range []bool{false, true} {
		t.Run(fmt.Sprint("RespectIgnoreDifferences=", respect), func(t *testing.T) {
			ns := env.Namespace(t, nil)
			deployment := func(image string) string {
				return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n" +
					"  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: " + image + "}]\n"
			}
			repo := gitServer.NewRepo(t, map[string]string{"app/web.yaml": deployment("nginx:1.27")})
			name := fmt.Sprintf("respect-%v", respect)
			var options []string
			if respect {
				options = []string{"RespectIgnoreDifferences=true"}
			}
			createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "app", Automated: "{selfHeal: true}", SyncOptions: options,
				Spec: "  ignoreDifferences:\n  - {group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}\n"})
			waitArgoSynced(t, name, repo.Head())

			env.Scale(t, "kube-controller-manager", cluster.Deployment, ns, "web", 5)
			if got := argoSyncAfterRefresh(t, name); got != "Synced" {
				t.Fatalf("after the HPA's scale Argo CD says %s; the test expects the ignored replicas to keep it Synced", got)
			}
			r := scan(t, "--from", "argocd", "--app", name)
			if got := activeFindings(r); len(got) != 0 {
				t.Fatalf("active findings:\n%s", describe(got))
			}
			var hint string
			for _, o := range r.Apps[0].Objects {
				for _, f := range o.Findings {
					if f.Ignored && f.Path == ".spec.replicas" {
						hint = f.Hint
					}
				}
			}
			want := "puts it back; add the sync option RespectIgnoreDifferences=true"
			if respect {
				want = "with RespectIgnoreDifferences=true, keeps the live value"
			}
			if !strings.Contains(hint, want) || strings.Contains(hint, "will be reverted at the next sync") {
				t.Errorf("the ignored replicas finding's hint %q does not say %q (or says self-heal reverts it)", hint, want)
			}

			// A deploy: a new image in Git, synced by Argo CD.
			repo.Commit(t, "new image", map[string]string{"app/web.yaml": deployment("nginx:1.28")})
			refreshArgoApp(t, name)
			waitArgoSynced(t, name, repo.Head())
			replicas, _, _ := unstructured.NestedInt64(env.Get(t, cluster.Deployment, ns, "web").Object, "spec", "replicas")
			if wantReplicas := map[bool]int64{false: 3, true: 5}[respect]; replicas != wantReplicas {
				t.Errorf("after the deploy the real Argo CD left replicas at %d; the test (and driftscan's hint) expect %d", replicas, wantReplicas)
			}
		})
	}
}
