package scanner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

// fixture returns the path of a shared fixture folder.
func fixture(parts ...string) string {
	return filepath.Join(append([]string{"..", "fixtures"}, parts...)...)
}

// applyDir renders dir and server-side applies every object into ns as the
// GitOps applier, the way Argo CD syncs an app.
func applyDir(t *testing.T, dir, ns string) {
	t.Helper()
	abs, _ := filepath.Abs(dir)
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: abs, Namespace: ns})
	if err != nil {
		t.Fatalf("render %s: %v", dir, err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", ns, mf.Object)
	}
}

// scanConfig is a config with one app per folder, all in namespace ns.
func scanConfig(ns string, apps ...config.App) *config.Config {
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Appliers: []string{"argocd-controller"}, Dir: "."}
	for _, a := range apps {
		if a.Namespace == "" {
			a.Namespace = ns
		}
		cfg.Apps = append(cfg.Apps, a)
	}
	return cfg
}

// runScan scans cfg against the test control plane.
func runScan(t *testing.T, cfg *config.Config, mutate ...func(*Options)) *report.Report {
	t.Helper()
	env.Need(t)
	opts := DefaultOptions()
	opts.RESTConfig = env.Config
	opts.Cluster = "envtest"
	opts.GitCacheDir = t.TempDir()
	opts.Now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	for _, m := range mutate {
		m(&opts)
	}
	r, err := Scan(t.Context(), cfg, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return r
}

// row is a finding reduced to what the tests assert.
type row struct {
	Object, Path string
	Type         report.Type
	Class        report.Class
	Manager      string
	Git, Live    string
	Ignored      bool
}

func rows(r *report.Report) []row {
	var out []row
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, f := range o.Findings {
				out = append(out, row{Object: o.Kind + "/" + o.Name, Path: f.Path, Type: f.Type, Class: f.Class, Manager: f.Manager, Git: f.Git, Live: f.Live, Ignored: f.Ignored})
			}
		}
	}
	return out
}

func statuses(r *report.Report) map[string]report.Status {
	out := map[string]report.Status{}
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			out[o.Kind+"/"+o.Name] = o.Status
		}
	}
	return out
}

func TestAnAppJustSyncedIsInSync(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	r := runScan(t, scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: fixture("apps", "web")}}))
	if got := rows(r); len(got) != 0 {
		t.Errorf("findings right after sync (quantities, empty lists, defaults must not be drift):\n%s", dump(got))
	}
	want := map[string]report.Status{"Deployment/web": report.StatusInSync, "ConfigMap/web-config": report.StatusInSync, "Service/web": report.StatusInSync, "Secret/web-db": report.StatusInSync}
	if diff := cmp.Diff(want, statuses(r)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if r.Summary.Objects != 4 || r.ExitCode(nil) != report.ExitOK {
		t.Errorf("summary %+v, exit %d", r.Summary, r.ExitCode(nil))
	}
}

func TestEachActorsDriftIsFoundAndClassified(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	// A deploy pipeline rolls the image back; a human adds an env var and a
	// label; the HPA scales; a human edits the ConfigMap at 3 AM.
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Patch(t, "kubectl-patch", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
	env.Scale(t, "kube-controller-manager", cluster.Deployment, ns, "web", 45)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	env.Patch(t, "kubectl-label", cluster.Deployment, ns, "web", types.MergePatchType, `{"metadata":{"labels":{"oncall":"alice"}}}`)

	r := runScan(t, scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: fixture("apps", "web")}}))
	want := []row{
		{Object: "ConfigMap/web-config", Path: ".data.LOG_LEVEL", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "info", Live: "debug"},
		{Object: "Deployment/web", Path: ".metadata.labels.oncall", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label", Live: "alice"},
		{Object: "Deployment/web", Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassOperator, Manager: "kube-controller-manager", Git: "3", Live: "45"},
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].env[name="DEBUG"]`, Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-patch", Live: `{"name":"DEBUG","value":"1"}`},
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].image`, Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "kubectl-set", Git: "nginx:1.25", Live: "nginx:1.26"},
	}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if r.ExitCode(nil) != report.ExitDrift {
		t.Errorf("exit code = %d, want %d", r.ExitCode(nil), report.ExitDrift)
	}
}

func dump(v any) string {
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}

func TestSecretValuesNeverLeaveTheScan(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	env.Patch(t, "kubectl-edit", cluster.Secret, ns, "web-db", types.MergePatchType, `{"stringData":{"password":"live-password-do-not-leak","extra":"another-secret-value"}}`)
	r := runScan(t, scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}}))
	data, _ := json.Marshal(r)
	for _, secret := range []string{"git-password-do-not-leak", "live-password-do-not-leak", "another-secret-value", "Z2l0LXBhc3N3b3Jk", "bGl2ZS1wYXNzd29yZC"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("report contains Secret value %q", secret)
		}
	}
	want := []row{
		{Object: "Secret/web-db", Path: ".data.extra", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-edit", Live: "***"},
		{Object: "Secret/web-db", Path: ".data.password", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "***", Live: "*** (differs)"},
	}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
