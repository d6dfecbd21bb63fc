package e2e

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
)

// An object Argo CD syncs with Replace=true (kubectl replace, for objects
// too large for kubectl apply's annotation), set for the whole Application
// or by the object's own argocd.argoproj.io/sync-options annotation: a
// label a person adds is out of Argo CD's diff, so it stays Synced and
// self-heal never acts, but the next sync replaces the whole object and
// the label is gone, where an apply would have kept it. driftscan's
// finding must say that, not that the reconciler leaves fields others
// added.
func TestArgoCDReplaceDropsWhatGitDoesNotDeclare(t *testing.T) {
	needArgo(t)
	for _, c := range []struct {
		name, annotation string
		options          []string
	}{
		{name: "replace-app", options: []string{"Replace=true"}},
		{name: "replace-object", annotation: `argocd.argoproj.io/sync-options: "Prune=false,Replace=true"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := env.Namespace(t, nil)
			cm := func(level string) string {
				return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, annotations: {" + c.annotation + "}}\ndata: {level: " + level + "}\n"
			}
			repo := gitServer.NewRepo(t, map[string]string{"app/cfg.yaml": cm("info")})
			createArgoApp(t, argoApp{Name: c.name, Namespace: ns, Repo: repo, Path: "app", Automated: "{selfHeal: true}", SyncOptions: c.options})
			waitArgoSynced(t, c.name, repo.Head())

			env.Patch(t, "kubectl-label", cluster.ConfigMap, ns, "cfg", types.MergePatchType, `{"metadata":{"labels":{"on-call":"paged"}}}`)
			if got := argoSyncAfterRefresh(t, c.name); got != "Synced" {
				t.Fatalf("after a person's label Argo CD says %s; the test expects Synced (the label is not in Git)", got)
			}
			got := activeFindings(scan(t, "--from", "argocd", "--app", c.name))
			if len(got) != 1 || got[0].Path != ".metadata.labels.on-call" || !strings.Contains(got[0].Hint, "Replace=true") || strings.Contains(got[0].Hint, "does not remove this") {
				t.Errorf("want the label, with the hint that the next sync replaces the object and drops it, got:\n%s", describe(got))
			}

			repo.Commit(t, "more logs", map[string]string{"app/cfg.yaml": cm("warn")})
			refreshArgoApp(t, c.name)
			waitArgoSynced(t, c.name, repo.Head())
			if labels := env.Get(t, cluster.ConfigMap, ns, "cfg").GetLabels(); labels["on-call"] != "" {
				t.Errorf("after the next sync the label is still there (%v); the test (and driftscan's hint) expect kubectl replace to drop it", labels)
			}
		})
	}
}
