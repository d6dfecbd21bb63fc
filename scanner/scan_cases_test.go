package scanner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// stableJSON is the JSON report with what changes from run to run (the test
// namespace, managedFields times, request counts) replaced.
func stableJSON(t *testing.T, r *report.Report, ns string) []byte {
	t.Helper()
	r.Stats = nil
	for ai := range r.Apps {
		r.Apps[ai].Source.Path = filepath.ToSlash(r.Apps[ai].Source.Path)
		for oi := range r.Apps[ai].Objects {
			for fi := range r.Apps[ai].Objects[oi].Findings {
				if r.Apps[ai].Objects[oi].Findings[fi].Time != "" {
					r.Apps[ai].Objects[oi].Findings[fi].Time = "TIME"
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, report.FormatJSON, r, report.DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(buf.Bytes(), []byte(ns), []byte("NAMESPACE"))
}

func TestEveryFindingTypeAndObjectStatus(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Patch(t, "kubectl-patch", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
	env.Update(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "data", "FEATURE_CHECKOUT")
		_ = unstructured.SetNestedField(u.Object, "debug", "data", "LOG_LEVEL")
	})
	env.Delete(t, cluster.Service, ns, "web")
	env.Create(t, "kubectl-create", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"left-behind","labels":{"app.kubernetes.io/instance":"web"}},"data":{"k":"v"}}`))

	r := runScan(t, scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: fixture("apps", "web")}}), func(o *Options) { o.Extra = true })
	want := map[string]report.Status{
		"Deployment/web": report.StatusDrifted, "ConfigMap/web-config": report.StatusDrifted, "Service/web": report.StatusMissing,
		"Secret/web-db": report.StatusInSync, "ConfigMap/left-behind": report.StatusExtra,
	}
	if diff := cmp.Diff(want, statuses(r)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	wantRows := []row{
		{Object: "ConfigMap/web-config", Path: ".data.FEATURE_CHECKOUT", Type: report.TypeRemoved, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "on"},
		{Object: "ConfigMap/web-config", Path: ".data.LOG_LEVEL", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "info", Live: "debug"},
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].env[name="DEBUG"]`, Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-patch", Live: `{"name":"DEBUG","value":"1"}`},
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].image`, Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "kubectl-set", Git: "nginx:1.25", Live: "nginx:1.26"},
	}
	if diff := cmp.Diff(wantRows, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	s := r.Summary
	if s.Objects != 5 || s.Drifted != 2 || s.Missing != 1 || s.Extra != 1 || s.Findings != 4 || s.Errors != 0 {
		t.Errorf("summary = %+v", s)
	}
	golden.Check(t, "every-type.json.golden", stableJSON(t, r, ns))
}

func writeManifest(t *testing.T, path string, obj *unstructured.Unstructured) {
	t.Helper()
	data, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestClientSideApplierOwnsItsDefaults(t *testing.T) {
	ns := env.Namespace(t, nil)
	abs, _ := filepath.Abs(fixture("apps", "web"))
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: abs})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Create(t, "kubectl-client-side-apply", ns, mf.Object)
	}
	cfg := scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}})
	cfg.Appliers = []string{"kubectl-client-side-apply"}
	r := runScan(t, cfg)
	if got := rows(r); len(got) != 0 {
		t.Errorf("defaults owned by a client-side applier are drift:\n%s", dump(got))
	}
}

func TestAMapListDiffsByItsKeys(t *testing.T) {
	env.InstallCRDs(t, "argocd-controller", fixture("crds", "routes.example.com.yaml"))
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "routes"), ns)
	route := cluster.ObjectFile(t, fixture("apps", "routes", "route.yaml")).GroupVersionKind()
	// A human reorders the backends and shifts weight to v2.
	env.Update(t, "kubectl-edit", route, ns, "checkout", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"name": "checkout-v2", "port": int64(8080), "weight": int64(50)},
			map[string]any{"name": "checkout-v1", "port": int64(8080), "weight": int64(90)},
		}, "spec", "backends")
	})
	r := runScan(t, scanConfig(ns, config.App{Name: "routes", Source: config.Source{Path: fixture("apps", "routes")}}))
	want := []row{{Object: "Route/checkout", Path: `.spec.backends[name="checkout-v2",port=8080].weight`, Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "10", Live: "50"}}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestKustomizeOverlayAndHelmChartRenderAndScan(t *testing.T) {
	env.InstallCRDs(t, "argocd-controller", fixture("render", "helm", "web", "crds"))
	ns := env.Namespace(t, nil)
	apps := []config.App{
		{Name: "overlay", Source: config.Source{Path: fixture("render", "kustomize", "overlays", "prod")}},
		{Name: "chart", Source: config.Source{Path: fixture("render", "helm", "web"), Helm: &config.HelmSource{ReleaseName: "shop", ValuesFiles: []string{"values-prod.yaml"}, Set: map[string]string{"image.tag": "1.26.1"}}}},
	}
	// Sync both as Argo CD would, from the same renders the scan makes: with
	// the cluster's version and API versions as Helm capabilities.
	version, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := env.Client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	var apiVersions []string
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			apiVersions = append(apiVersions, v.GroupVersion)
		}
	}
	for _, a := range apps {
		abs, _ := filepath.Abs(a.Source.Path)
		manifests, err := render.Manifests(t.Context(), render.Options{Dir: abs, Root: moduleRoot(t), Namespace: ns, Helm: a.Source.Helm, KubeVersion: version.GitVersion, APIVersions: apiVersions})
		if err != nil {
			t.Fatalf("render %s: %v", a.Name, err)
		}
		for _, mf := range manifests {
			env.Apply(t, "argocd-controller", ns, mf.Object)
		}
	}
	r := runScan(t, scanConfig(ns, apps...))
	if got := rows(r); len(got) != 0 {
		t.Fatalf("findings right after sync:\n%s", dump(got))
	}
	if r.Summary.Objects < 4 || r.Summary.Errors != 0 {
		var objectErrors []string
		for _, a := range r.Apps {
			for _, o := range a.Objects {
				if o.Error != "" {
					objectErrors = append(objectErrors, a.Name+": "+o.Error)
				}
			}
		}
		t.Fatalf("summary = %+v, errors %v, object errors %q", r.Summary, r.Errors, objectErrors)
	}
	env.Scale(t, "kubectl", cluster.Deployment, ns, "prod-web", 1)
	r = runScan(t, scanConfig(ns, apps...))
	want := []row{{Object: "Deployment/prod-web", Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl", Git: "3", Live: "1"}}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestGitSourceAtATag(t *testing.T) {
	ns := env.Namespace(t, nil)
	deploy, err := os.ReadFile(fixture("apps", "web", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	repo, shas := gitrepo.Bare(t, "v1.0.0",
		map[string]string{"apps/web/deployment.yaml": string(deploy)},
		map[string]string{"apps/web/deployment.yaml": strings.Replace(string(deploy), "nginx:1.25", "nginx:1.27", 1)},
	)
	applyDir(t, fixture("apps", "web"), ns) // the cluster runs v1.0.0
	url := "file://" + repo
	r := runScan(t, scanConfig(ns, config.App{Name: "web", Source: config.Source{Repo: url, Revision: "v1.0.0", Path: "apps/web"}}))
	if got := rows(r); len(got) != 0 || r.Summary.Errors != 0 {
		t.Fatalf("scan at the deployed tag: findings %s, errors %v %v", dump(got), r.Apps[0].Error, r.Errors)
	}
	if got := r.Apps[0].Source; got.Commit != shas[0] || got.Revision != "v1.0.0" || got.Path != "apps/web" {
		t.Errorf("source = %+v, want commit %s", got, shas[0])
	}
	r = runScan(t, scanConfig(ns, config.App{Name: "web", Source: config.Source{Repo: url, Revision: "main", Path: "apps/web"}}))
	want := []row{{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].image`, Type: report.TypeChanged, Class: report.ClassUnknown, Manager: "argocd-controller", Git: "nginx:1.27", Live: "nginx:1.25"}}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings at main (-want +got):\n%s", diff)
	}
	if h := r.Apps[0].Objects[0].Findings[0].Hint; !strings.Contains(h, "not applied yet") {
		t.Errorf("hint = %q, want it to say Git was not applied yet", h)
	}
}

func TestBadInputIsNamedAndTheRestOfTheScanGoesOn(t *testing.T) {
	ns := env.Namespace(t, nil)
	for _, dir := range []string{fixture("apps", "web"), fixture("apps", "broken")} {
		env.Apply(t, "argocd-controller", ns, cluster.ObjectFile(t, filepath.Join(dir, map[bool]string{true: "configmap.yaml", false: "good.yaml"}[strings.HasSuffix(dir, "web")])))
	}
	env.Apply(t, "argocd-controller", ns, cluster.ObjectFile(t, fixture("apps", "needs-crd", "configmap.yaml")))
	cfg := scanConfig(ns,
		config.App{Name: "broken", Source: config.Source{Path: fixture("apps", "broken")}},
		config.App{Name: "needs-crd", Source: config.Source{Path: fixture("apps", "needs-crd")}},
		config.App{Name: "bad-kustomize", Source: config.Source{Path: fixture("apps", "bad-kustomize")}},
		config.App{Name: "unclonable", Source: config.Source{Repo: "file:///nonexistent/repo.git", Path: "."}},
		config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}},
		config.App{Name: "web-copy", Source: config.Source{Path: fixture("apps", "web")}},
	)
	r := runScan(t, cfg)
	apps := map[string]report.App{}
	for _, a := range r.Apps {
		apps[a.Name] = a
	}
	for app, wants := range map[string][]string{
		"broken":        {"malformed.yaml:", "noname.yaml:1", "no metadata.name"},
		"bad-kustomize": {"kustomize", "does-not-exist.yaml"},
		"unclonable":    {"git", "/nonexistent/repo.git"},
	} {
		for _, w := range wants {
			if !strings.Contains(apps[app].Error, w) {
				t.Errorf("app %s error %q does not name %q", app, apps[app].Error, w)
			}
		}
	}
	objs := map[string]report.Object{}
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			objs[a.Name+":"+o.Kind+"/"+o.Name] = o
		}
	}
	checks := []struct {
		key    string
		status report.Status
		error  string
	}{
		{"broken:ConfigMap/still-scanned", report.StatusInSync, ""},
		{"needs-crd:Gadget/not-installed", report.StatusError, "gadgets.example.com/v1/Gadget is not served by the cluster (is its CRD installed?)"},
		{"needs-crd:ConfigMap/next-to-a-missing-crd", report.StatusInSync, ""},
		{"web:ConfigMap/web-config", report.StatusInSync, ""},
		{"web-copy:ConfigMap/web-config", report.StatusError, "is declared by both app web and app web-copy"},
	}
	for _, c := range checks {
		o, ok := objs[c.key]
		if !ok {
			t.Errorf("%s is not in the report", c.key)
			continue
		}
		if o.Status != c.status || !strings.Contains(o.Error, c.error) {
			t.Errorf("%s: status %s error %q, want %s with %q", c.key, o.Status, o.Error, c.status, c.error)
		}
	}
	if got := r.ExitCode(nil); got != report.ExitError {
		t.Errorf("exit code = %d, want %d", got, report.ExitError)
	}
}

func TestRBACForbiddingAKindSaysWhatIsMissing(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	// A reader that may list everything the app has but Secrets.
	reader := user(t, "reader-"+ns, rbacv1.PolicyRule{APIGroups: []string{"", "apps"}, Resources: []string{"deployments", "configmaps", "services", "namespaces"}, Verbs: []string{"get", "list"}})
	asReader := func(o *Options) { o.RESTConfig = reader }
	cfg := scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}})
	// Without a cache, and warm: then the forbidden LIST is one the
	// scan starts from its plan before it renders (prefetch.go).
	dir := t.TempDir()
	for _, scan := range []string{"uncached", "cold", "warm"} {
		mutate := []func(*Options){asReader}
		if scan != "uncached" {
			mutate = append(mutate, func(o *Options) { o.CacheDir = dir })
		}
		r := runScan(t, cfg, mutate...)
		st := statuses(r)
		if st["Deployment/web"] != report.StatusInSync || st["Secret/web-db"] != report.StatusError {
			t.Fatalf("%s: statuses = %v", scan, st)
		}
		for _, o := range r.Apps[0].Objects {
			if o.Kind == "Secret" && !strings.Contains(o.Error, "needs list on secrets in namespace "+ns) {
				t.Errorf("%s: error %q does not say which verb and resource are missing", scan, o.Error)
			}
		}
	}
}

// moduleRoot is the repository's root, which fixtures' kustomize bases
// may read from.
func moduleRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// An empty string is a value: a human who blanks a ConfigMap key, or fills in
// one Git leaves empty, changed it, and every report says from what to what
// instead of showing an empty side as absent (a Changed row reading
// "<none> → on" looks like an addition, "on → <none>" like a removal).
func TestAnEmptiedValueReadsApartFromARemovedOne(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	writeManifest(t, filepath.Join(dir, "configmap.yaml"), cluster.Object(t,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"flags"},"data":{"BLANK":"","SET":"on","GONE":""}}`))
	applyDir(t, dir, ns)
	env.Update(t, "kubectl-edit", cluster.ConfigMap, ns, "flags", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "on", "data", "BLANK")
		_ = unstructured.SetNestedField(u.Object, "", "data", "SET")
		_ = unstructured.SetNestedField(u.Object, "", "data", "NEW")
		unstructured.RemoveNestedField(u.Object, "data", "GONE")
	})

	r := runScan(t, scanConfig(ns, config.App{Name: "flags", Source: config.Source{Path: dir}}))
	want := []row{
		{Object: "ConfigMap/flags", Path: ".data.BLANK", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: `""`, Live: "on"},
		{Object: "ConfigMap/flags", Path: ".data.GONE", Type: report.TypeRemoved, Class: report.ClassHuman, Manager: "kubectl-edit", Git: `""`},
		{Object: "ConfigMap/flags", Path: ".data.NEW", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-edit", Live: `""`},
		{Object: "ConfigMap/flags", Path: ".data.SET", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "on", Live: `""`},
	}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	var table bytes.Buffer
	if err := report.Write(&table, report.FormatTable, r, report.DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`.data.BLANK  "" → on`, `.data.SET    on → ""`, `.data.GONE   "" → <none>`, `.data.NEW    <none> → ""`} {
		if !strings.Contains(strings.Join(strings.Fields(table.String()), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("the table has no %q:\n%s", line, table.String())
		}
	}
	// The typed values keep telling an empty string from an absent one.
	for _, f := range r.Apps[0].Objects[0].Findings {
		if f.Path == ".data.SET" && f.LiveValue != "" {
			t.Errorf(".data.SET liveValue = %#v, want the empty string", f.LiveValue)
		}
	}
}
