package scanner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// An object the app's AppProject does not permit (config.App.ArgoProject)
// is an error naming the project's list: Argo CD validates every object
// before a sync and runs none when one fails, so the app's other drift is
// reverted by nothing, and its hint says so instead of promising
// self-heal.
func TestAnObjectTheAppProjectDoesNotPermitFailsEverySync(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	role := "reader-" + ns
	for name, text := range map[string]string{
		"cfg.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {level: info}\n",
		"role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: " + role + "}\nrules: []\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"level":"info"}}`))
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "cfg", types.MergePatchType, `{"data":{"level":"debug"}}`)

	project := &config.ProjectResources{Project: "argocd/team", ClusterBlacklist: nil}
	gitops := &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", SelfHeal: true}
	r := runScan(t, scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: dir}, ArgoProject: project, GitOps: gitops}))
	want := map[string]report.Status{"ConfigMap/cfg": report.StatusDrifted, "ClusterRole/" + role: report.StatusError}
	if d := cmp.Diff(want, statuses(r)); d != "" {
		t.Fatalf("statuses (-want +got):\n%s", d)
	}
	for _, o := range r.Apps[0].Objects {
		switch o.Kind {
		case "ClusterRole":
			if !strings.Contains(o.Error, "AppProject argocd/team does not permit the cluster-scoped rbac.authorization.k8s.io/ClusterRole "+role+": its clusterResourceWhitelist has no entry for it") || !strings.Contains(o.Error, "fails every sync of the app") {
				t.Errorf("the ClusterRole's error %q does not name the project's list and the failing syncs", o.Error)
			}
		case "ConfigMap":
			if len(o.Findings) != 1 || !strings.Contains(o.Findings[0].Hint, "every sync of Application/argocd/web fails") || strings.Contains(o.Findings[0].Hint, "will be reverted") {
				t.Errorf("the human's change: findings %+v, want one whose hint says no sync reverts it", o.Findings)
			}
		}
	}

	// Permitted, the same scan promises self-heal.
	project.ClusterWhitelist = []config.ProjectResource{{Group: "*", Kind: "*"}}
	r = runScan(t, scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: dir}, ArgoProject: project, GitOps: gitops}))
	if s := statuses(r)["ClusterRole/"+role]; s != report.StatusMissing {
		t.Errorf("the permitted ClusterRole is %s, want Missing", s)
	}
	for _, o := range r.Apps[0].Objects {
		if o.Kind == "ConfigMap" && (len(o.Findings) != 1 || !strings.Contains(o.Findings[0].Hint, "will be reverted")) {
			t.Errorf("permitted: the human's change has findings %+v, want the self-heal hint", o.Findings)
		}
	}
}
