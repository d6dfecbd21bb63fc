package run

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

var applicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// argoApp syncs fixtures/apps/web into a new namespace as Argo CD would, has
// a pipeline set the image and a human edit the ConfigMap, and creates the
// Application (self-heal on, the image ignored) whose source is a bare repository holding the
// folder. It returns the app's namespace and the Application's.
func argoApp(t *testing.T) (appNS, argoNS string) {
	t.Helper()
	repo, _ := gitrepo.Bare(t, "", webFiles(t))
	return argoAppFrom(t, "file://"+repo)
}

// webFiles are fixtures/apps/web at apps/web.
func webFiles(t *testing.T) map[string]string {
	t.Helper()
	dir, _ := filepath.Abs("../fixtures/apps/web")
	files := map[string]string{}
	for name, content := range gitrepo.Files(t, dir) {
		files["apps/web/"+name] = content
	}
	return files
}

// argoAppFrom is argoApp with the Application's repoURL repo.
func argoAppFrom(t *testing.T, repo string) (appNS, argoNS string) {
	t.Helper()
	env.InstallCRDs(t, "crd-installer", "../fixtures/crds/applications.argoproj.io.yaml", "../fixtures/crds/appprojects.argoproj.io.yaml")
	dir, _ := filepath.Abs("../fixtures/apps/web")
	appNS, argoNS = env.Namespace(t, nil), env.Namespace(t, nil)
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: default}\nspec: {sourceRepos: ['*'], destinations: [{server: '*', namespace: '*'}], clusterResourceWhitelist: [{group: '*', kind: '*'}]}\n"))
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", appNS, mf.Object)
	}
	env.Patch(t, "kubectl-set", cluster.Deployment, appNS, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, appNS, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  project: default
  source: {repoURL: "%s", path: apps/web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
  ignoreDifferences:
  - {group: apps, kind: Deployment, jsonPointers: [/spec/template/spec/containers/0/image]}
`, repo, appNS)))
	return appNS, argoNS
}

// scanAt runs a scan of the Applications in argoNS, with auto-resume, on a
// clock that reads now.
func scanAt(t *testing.T, argoNS string, now time.Time) *report.Report {
	t.Helper()
	env.Need(t)
	opts := DefaultOptions()
	opts.Scan.RESTConfig, opts.Scan.GitCacheDir = env.Config, t.TempDir()
	dopts := discover.DefaultOptions()
	dopts.Namespace = argoNS
	opts.Discover = &Discover{Options: dopts}
	opts.AutoResume = true
	opts.Now = func() time.Time { return now }
	res, err := Scan(t.Context(), config.New(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Apps) != 1 {
		t.Fatalf("apps = %+v", res.Report.Apps)
	}
	return res.Report
}

// expiry is the human finding on the Application that an expired
// suspension becomes, or nil.
func expiry(app report.App) *report.Finding {
	for _, o := range app.Objects {
		for i, f := range o.Findings {
			if o.Kind == "Application" && f.Class == report.ClassHuman {
				return &o.Findings[i]
			}
		}
	}
	return nil
}

func TestAnExpiredSuspensionIsDriftUntilAutoResumedSafely(t *testing.T) {
	env.Need(t)
	appNS, argoNS := argoApp(t)
	client, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	suspended := time.Now()
	sopts := breakglass.DefaultSuspendOptions()
	sopts.Reason, sopts.TTL, sopts.Who = "INC-7", time.Hour, "test"
	sopts.Now = func() time.Time { return suspended }
	target := breakglass.Target{Resource: breakglass.Application, Namespace: argoNS, Name: "web"}
	if _, err := breakglass.Suspend(t.Context(), client, target, sopts); err != nil {
		t.Fatal(err)
	}

	r := scanAt(t, argoNS, suspended.Add(30*time.Minute))
	if bg := r.Apps[0].Breakglass; bg == nil || bg.Expired || bg.Reason != "INC-7" {
		t.Fatalf("within the deadline: breakglass = %+v, want suspended and not expired", bg)
	}
	if f := expiry(r.Apps[0]); f != nil {
		t.Fatalf("within the deadline the suspension is drift: %+v", f)
	}

	later := suspended.Add(2 * time.Hour)
	r = scanAt(t, argoNS, later)
	if bg := r.Apps[0].Breakglass; bg == nil || !bg.Expired || bg.Resumed {
		t.Fatalf("past the deadline: breakglass = %+v, want expired and not resumed while the hotfix is not in Git", bg)
	}
	if f := expiry(r.Apps[0]); f == nil || f.Hint == "" {
		t.Fatalf("no human finding for the expired suspension: %+v", r.Apps[0].Objects)
	}
	if r.Summary.ByClass[report.ClassHuman] < 2 {
		t.Errorf("summary counts %d human findings, want the hotfix and the expiry", r.Summary.ByClass[report.ClassHuman])
	}

	// The hotfix reaches Git (here: Git's value is put back live); now the
	// expired suspension is resumed, and is drift no more.
	env.Apply(t, "argocd-controller", appNS, cluster.ObjectFile(t, "../fixtures/apps/web/configmap.yaml"))
	r = scanAt(t, argoNS, later)
	if bg := r.Apps[0].Breakglass; bg == nil || !bg.Resumed {
		t.Fatalf("breakglass = %+v, want resumed", bg)
	}
	if f := expiry(r.Apps[0]); f != nil {
		t.Errorf("a resumed suspension is still reported as drift: %+v", f)
	}
	app := env.Get(t, applicationGVK, argoNS, "web")
	if _, found, _ := unstructured.NestedFieldNoCopy(app.Object, "spec", "syncPolicy", "automated"); !found {
		t.Errorf("automated sync not restored")
	}
}
