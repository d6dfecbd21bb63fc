package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/report"
)

var applicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// argoApp commits fixtures/apps/web to a bare repository, creates an Argo CD
// Application for it in namespace argoNS with self-heal on, and returns the
// drifted app's namespace (see driftedWeb) and argoNS.
func argoApp(t *testing.T) (appNS, argoNS string) {
	t.Helper()
	env.InstallCRDs(t, "crd-installer", "../../fixtures/crds/applications.argoproj.io.yaml", "../../fixtures/crds/appprojects.argoproj.io.yaml")
	files := map[string]string{}
	for name, content := range gitrepo.Files(t, "../../fixtures/apps/web") {
		files["apps/web/"+name] = content
	}
	repo, _ := gitrepo.Bare(t, "", files)
	appNS = driftedWeb(t)
	argoNS = env.Namespace(t, nil)
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: default}\nspec: {sourceRepos: ['*'], destinations: [{server: '*', namespace: '*'}], clusterResourceWhitelist: [{group: '*', kind: '*'}]}\n"))
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, labels: {team: team-web}}
spec:
  project: default
  source: {repoURL: "file://%s", path: apps/web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
  ignoreDifferences:
  - {group: apps, kind: Deployment, jsonPointers: [/spec/template/spec/containers/0/image]}
`, repo, appNS)))
	return appNS, argoNS
}

func TestScanFromArgoCDFindsTheAppsAndWarnsAboutSelfHeal(t *testing.T) {
	env.Need(t)
	_, argoNS := argoApp(t)
	res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--from", "argocd", "--argocd-namespace", argoNS, "-o", "json", "--git-cache", t.TempDir())
	if res.code != 1 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Apps) != 1 || r.Apps[0].Owner != "team-web" || r.Apps[0].GitOps == nil || !r.Apps[0].GitOps.SelfHeal {
		t.Fatalf("apps = %+v", r.Apps)
	}
	var selfHeal, ignored int
	for _, o := range r.Apps[0].Objects {
		for _, f := range o.Findings {
			if strings.Contains(f.Hint, "self-heal is on for Application/"+argoNS+"/web") {
				selfHeal++
			}
			// The pipeline's image, which the Application's ignoreDifferences
			// hide: self-heal never acts on it, the next sync puts Git's back.
			if f.Ignored && strings.Contains(f.Hint, "Application/"+argoNS+"/web shows Synced and self-heal never acts on it, but a sync still applies Git's value") {
				ignored++
			}
		}
	}
	if selfHeal != 1 || ignored != 1 {
		t.Errorf("%d findings carry the self-heal hint and %d the ignored-by-Argo-CD one, want 1 each (the human change; the pipeline's image)", selfHeal, ignored)
	}
}

func TestBreakglassSuspendThenResumeOnlyOnceTheHotfixIsInGit(t *testing.T) {
	env.Need(t)
	_, argoNS := argoApp(t)
	bg := func(args ...string) result {
		return runCLI(t, append([]string{"breakglass", "--kubeconfig", env.Kubeconfig, "-n", argoNS, "--git-cache", t.TempDir()}, args...)...)
	}
	if res := bg("suspend", "web", "--ttl", "2h"); res.code != 2 || !strings.Contains(res.err, "--reason is required") {
		t.Errorf("suspend without a reason: exit %d, %q", res.code, res.err)
	}
	if res := bg("suspend", "web", "--ttl", "13h", "--reason", "INC-1"); res.code != 2 || !strings.Contains(res.err, "above --max-ttl 12h") {
		t.Errorf("suspend over the cap: exit %d, %q", res.code, res.err)
	}
	res := bg("suspend", "web", "--ttl", "2h", "--reason", "INC-4211 payment certs")
	if res.code != 0 || !strings.Contains(res.out, "spec.syncPolicy.automated removed") {
		t.Fatalf("suspend: exit %d\n%s\n%s", res.code, res.out, res.err)
	}
	app := env.Get(t, applicationGVK, argoNS, "web")
	if by := app.GetAnnotations()[breakglass.AnnotationBy]; by == "" || by == "unknown" {
		t.Errorf("who suspended is %q, want the kubeconfig identity", by)
	}

	res = bg("status")
	if res.code != 0 || !strings.Contains(res.out, "INC-4211 payment certs") || !strings.Contains(res.out, "kubectl-edit") {
		t.Errorf("status: exit %d\n%s\n%s", res.code, res.out, res.err)
	}
	res = bg("resume", "web")
	if res.code != 2 || !strings.Contains(res.err, "would revert drift that is not in Git yet") || !strings.Contains(res.err, ".data.LOG_LEVEL: human Changed by kubectl-edit") {
		t.Fatalf("resume over the hotfix: exit %d\n%s", res.code, res.err)
	}
	if res := bg("resume", "web", "--force"); res.code != 0 {
		t.Fatalf("resume --force: exit %d\n%s", res.code, res.err)
	}
	app = env.Get(t, applicationGVK, argoNS, "web")
	if self, _, _ := unstructured.NestedBool(app.Object, "spec", "syncPolicy", "automated", "selfHeal"); !self {
		t.Errorf("resume did not restore automated sync: %v", app.Object["spec"])
	}
}

func TestImportArgoCDTurnsIgnoreDifferencesIntoDebts(t *testing.T) {
	env.Need(t)
	appNS, argoNS := argoApp(t)
	res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", appNS,
		"--import-argocd", "--argocd-namespace", argoNS, "--import-expiry", "2027-03-01", "-o", "json")
	if res.code != 1 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatal(err)
	}
	var ignored []report.Finding
	for _, o := range r.Apps[0].Objects {
		for _, f := range o.Findings {
			if f.Ignored {
				ignored = append(ignored, f)
			}
		}
	}
	if len(ignored) != 1 || ignored[0].Class != report.ClassPipeline || ignored[0].IgnoreRule.Reason != "imported from Argo CD" || ignored[0].IgnoreRule.Expires != "2027-03-01" {
		t.Fatalf("ignored findings = %+v", ignored)
	}
	if r.Summary.Findings != 1 || r.Summary.Ignored != 1 {
		t.Errorf("summary = %+v", r.Summary)
	}
}
