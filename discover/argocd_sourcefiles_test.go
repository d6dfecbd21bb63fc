package discover

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/scanner"
)

// An Application's parameter files are merged into its source as Argo
// CD's repo server merges them: .argocd-source.yaml, then
// .argocd-source-<instance>.yaml (the name alone in Argo CD's namespace,
// <namespace>_<name> in another), each a JSON merge patch; where the app
// is stays the Application's (checked against the real Argo CD by e2e
// TestArgoCDSourceParameterFilesScanClean).
func TestArgoSourceFiles(t *testing.T) {
	d := &discovery{opts: Options{From: FromArgoCD}}
	app := func(ns string, s appSource) config.App {
		u := &unstructured.Unstructured{}
		u.SetName("web")
		u.SetNamespace(ns)
		src, problems := d.argoSource("web", s, nil)
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		a := &application{}
		a.Spec.Project, a.Spec.Destination.Namespace = "shop", "web-prod"
		return config.App{Name: "web", Source: src, ArgoSource: d.argoSourceOf(u, a, s, nil), ArgoInstance: d.argoInstance(u)}
	}
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	kust := appSource{RepoURL: "https://git.example.com/deploy.git", Path: "apps/web", TargetRevision: "main",
		Kustomize: &appKustomize{Images: []string{"nginx:1.25"}, NamePrefix: "p-"}}

	t.Run("Image Updater's write-back replaces the images, the rest stays", func(t *testing.T) {
		a := app("argocd", kust)
		dir := write(t, map[string]string{
			".argocd-source.yaml":     "kustomize:\n  commonLabels: {team: web}\n",
			".argocd-source-web.yaml": "kustomize:\n  images: [nginx:1.27, redis=redis:7]\n",
			// Another app's file, and where the app is, are not read.
			".argocd-source-other.yaml": "kustomize:\n  images: [nginx:9]\n",
		})
		src, problems, changed, err := ArgoSourceFiles(a, dir, commit)
		if err != nil || !changed || len(problems) > 0 {
			t.Fatalf("changed %v, problems %v, err %v", changed, problems, err)
		}
		want := &config.ArgoKustomize{NamePrefix: "p-", Images: []string{"nginx:1.27", "redis=redis:7"}, CommonLabels: map[string]string{"team": "web"}}
		if d := cmp.Diff(want, src.Kustomize.Argo); d != "" {
			t.Errorf("overrides (-want +got):\n%s", d)
		}
		if src.Repo != a.Source.Repo || src.Path != "apps/web" || src.Revision != a.Source.Revision {
			t.Errorf("source %+v: where the app is must stay", src)
		}
	})
	t.Run("outside Argo CD's namespace the file names namespace_name", func(t *testing.T) {
		a := app("team-a", kust)
		dir := write(t, map[string]string{".argocd-source-web.yaml": "kustomize:\n  images: [nginx:9]\n", ".argocd-source-team-a_web.yaml": "kustomize:\n  images: [nginx:1.27]\n"})
		src, _, _, err := ArgoSourceFiles(a, dir, commit)
		if err != nil || strings.Join(src.Kustomize.Argo.Images, ",") != "nginx:1.27" {
			t.Errorf("images %v, %v", src.Kustomize.Argo.Images, err)
		}
	})
	t.Run("Helm parameters", func(t *testing.T) {
		a := app("argocd", appSource{RepoURL: "https://git.example.com/deploy.git", Path: "charts/web", Helm: &appHelm{ValueFiles: []string{"values-prod.yaml"}}})
		dir := write(t, map[string]string{".argocd-source-web.yaml": "helm:\n  parameters:\n  - {name: image.tag, value: v1.2.3, forcestring: true}\n"})
		src, _, changed, err := ArgoSourceFiles(a, dir, commit)
		if err != nil || !changed || src.Helm.SetString["image.tag"] != "v1.2.3" || len(src.Helm.ValuesFiles) != 1 {
			t.Errorf("helm %+v, %v", src.Helm, err)
		}
	})
	t.Run("what discovery said of the Application's own source is not said again", func(t *testing.T) {
		s := appSource{RepoURL: "https://git.example.com/deploy.git", Path: "charts/web", Helm: &appHelm{
			FileParameters: []struct {
				Name string `json:"name"`
				Path string `json:"path"`
			}{{Name: "cfg", Path: "../../../etc/passwd"}}}}
		_, said := d.argoSource("web", s, nil)
		if len(said) != 1 {
			t.Fatalf("discovery's problems %v, want the fileParameter that leaves the repository", said)
		}
		u := &unstructured.Unstructured{}
		u.SetName("web")
		u.SetNamespace("argocd")
		a := config.App{Name: "web", Source: config.Source{Repo: s.RepoURL, Path: s.Path}, ArgoSource: d.argoSourceOf(u, &application{}, s, nil), ArgoInstance: d.argoInstance(u)}
		dir := write(t, map[string]string{".argocd-source-web.yaml": "helm:\n  parameters:\n  - {name: image.tag, value: v1.2.3}\n  fileParameters:\n  - {name: other, path: ../../../etc/shadow}\n"})
		_, problems, changed, err := ArgoSourceFiles(a, dir, commit)
		if err != nil || !changed {
			t.Fatalf("changed %v, %v", changed, err)
		}
		if len(problems) != 1 || !strings.Contains(problems[0], "fileParameters other") {
			t.Errorf("problems %q: want only the file's own (its fileParameter that leaves the repository), not discovery's again", problems)
		}
	})
	t.Run("Argo CD's build environment, where Argo CD substitutes it", func(t *testing.T) {
		a := app("team-a", appSource{RepoURL: "https://git.example.com/deploy.git", Path: "apps/web", TargetRevision: "main",
			Kustomize: &appKustomize{Images: []string{"web=registry/web:$ARGOCD_APP_REVISION_SHORT"},
				CommonLabels:      map[string]string{"app": "$ARGOCD_APP_NAME", "cost": "$$ARGOCD_APP_NAME", "unknown": "x${NOT_ARGO}y"},
				CommonAnnotations: map[string]string{"left": "$ARGOCD_APP_PROJECT_NAME"}}})
		src, _, changed, err := ArgoSourceFiles(a, write(t, nil), commit)
		want := &config.ArgoKustomize{Images: []string{"web=registry/web:0123456"},
			CommonLabels:      map[string]string{"app": "team-a_web", "cost": "$ARGOCD_APP_NAME", "unknown": "xy"},
			CommonAnnotations: map[string]string{"left": "$ARGOCD_APP_PROJECT_NAME"}}
		if err != nil || !changed {
			t.Fatalf("changed %v, %v", changed, err)
		}
		if d := cmp.Diff(want, src.Kustomize.Argo); d != "" {
			t.Errorf("overrides (-want +got): annotations only with commonAnnotationsEnvsubst\n%s", d)
		}
		var helm appHelm
		if err := json.Unmarshal([]byte(`{"valueFiles": ["values-$ARGOCD_APP_NAMESPACE.yaml"], "parameters": [{"name": "fullnameOverride", "value": "$ARGOCD_APP_NAME-$ARGOCD_APP_REVISION_SHORT_8"}]}`), &helm); err != nil {
			t.Fatal(err)
		}
		h := app("argocd", appSource{RepoURL: "https://git.example.com/deploy.git", Path: "charts/web", TargetRevision: "main", Helm: &helm})
		src, _, _, err = ArgoSourceFiles(h, write(t, nil), commit)
		if err != nil || src.Helm.Set["fullnameOverride"] != "web-01234567" || src.Helm.ValuesFiles[0] != "values-web-prod.yaml" {
			t.Errorf("helm %+v, %v", src.Helm, err)
		}
	})
	t.Run("without files nothing changes", func(t *testing.T) {
		a := app("argocd", kust)
		if _, _, changed, err := ArgoSourceFiles(a, write(t, nil), commit); changed || err != nil {
			t.Errorf("changed %v, %v", changed, err)
		}
	})
	t.Run("a file that is not YAML fails the app, as in Argo CD", func(t *testing.T) {
		a := app("argocd", kust)
		_, _, _, err := ArgoSourceFiles(a, write(t, map[string]string{".argocd-source.yaml": "kustomize: [unclosed\n"}), commit)
		if err == nil || !strings.Contains(err.Error(), ".argocd-source.yaml") {
			t.Errorf("err %v: want the file named", err)
		}
	})
}

// Image Updater wrote nginx:1.27 and Argo CD synced it; then it wrote 1.28,
// not synced yet. The scan compares live with the synced commit's
// parameter file (clean) and names the Deployment in the pending sync; it
// reads the file only through Options.ArgoSourceFiles, as run sets it.
func TestArgoParameterFilesAtTheSyncedAndTheTargetCommit(t *testing.T) {
	installCRDs(t)
	ns := env.Namespace(t, nil)
	app := map[string]string{
		"app/kustomization.yaml":      "resources: [deploy.yaml]\nimages:\n- {name: nginx, newTag: \"1.25\"}\n",
		"app/deploy.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx}]\n",
		"app/.argocd-source-web.yaml": "kustomize:\n  images: [nginx:1.27]\n",
	}
	next := map[string]string{"app/.argocd-source-web.yaml": "kustomize:\n  images: [nginx:1.28]\n"}
	dir, shas := gitrepo.Bare(t, "v1.0.0", app, next)
	applyAll(t, "kubectl", ns, "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: default}\nspec:\n  sourceRepos: ['*']\n  destinations: [{server: '*', namespace: '*'}]\n  clusterResourceWhitelist: [{group: '*', kind: '*'}]\n", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: `+ns+`}
  source: {repoURL: "file://`+dir+`", targetRevision: main, path: app}
status:
  history:
  - {revision: `+shas[0]+`, id: 1}
`)
	applyAll(t, "argocd-controller", ns, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: \"nginx:1.27\"}]\n")
	res := discover(t, options(FromArgoCD, ns))
	if len(res.Apps) != 1 || res.Apps[0].ArgoSource == nil || res.Apps[0].Source.Revision != shas[0] {
		t.Fatalf("apps %+v: want the Application at its synced commit", res.Apps)
	}

	r := scanWith(t, res, func(o *scanner.Options) { o.ArgoSourceFiles = ArgoSourceFiles })
	if got := findings(r, ns); len(got) != 0 {
		t.Errorf("live runs the synced parameter file's image: want no finding, got %+v", got)
	}
	if p := r.Apps[0].Pending; p == nil || len(p.Objects) != 1 || p.Objects[0].Kind != "Deployment" {
		t.Errorf("pending %+v: want the Deployment, whose image the next parameter file changes", p)
	}
	// Without the files the kustomization's tag is Git's, and live differs.
	r = scanWith(t, res, nil)
	if got := findings(r, ns); len(got) != 1 || got[0].Path != `.spec.template.spec.containers[name="web"].image` {
		t.Errorf("without the parameter files: %+v, want the image", got)
	}
}

// A parameter file is the tenant's: one that expands without bound (a
// billion laughs of aliases) or is too large is an error on the app, in
// bounded time and memory (run in a child under ulimit -v).
func TestHostileArgoSourceFiles(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	d := &discovery{opts: Options{From: FromArgoCD}}
	u := &unstructured.Unstructured{}
	u.SetName("web")
	s := appSource{RepoURL: "https://git.example.com/deploy.git", Path: "apps/web", Kustomize: &appKustomize{Images: []string{"nginx:1.25"}}}
	src, _ := d.argoSource("web", s, nil)
	app := config.App{Name: "web", Source: src, ArgoSource: d.argoSourceOf(u, &application{}, s, nil), ArgoInstance: d.argoInstance(u)}
	laughs := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i := 'b'; i <= 'j'; i++ {
		prev := string(i - 1)
		laughs += fmt.Sprintf("%c: &%c [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", i, i, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	for name, text := range map[string]string{
		"aliases": "kustomize:\n  images: [nginx:1.27]\n" + laughs,
		"large":   "kustomize:\n  images: [\"" + strings.Repeat("x", 2<<20) + "\"]\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".argocd-source.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := ArgoSourceFiles(app, dir, "0123456789abcdef0123456789abcdef01234567"); err == nil {
			t.Errorf("%s: a hostile parameter file merged", name)
		}
	}
}
