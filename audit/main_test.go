package audit_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

// env is kube-apiserver with an audit log that rotates at 1 MB into gzip
// files, the way a busy cluster's does within minutes.
var env *cluster.Env

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWith(m, &env, cluster.Options{Audit: &cluster.AuditOptions{MaxSizeMB: 1, Compress: true}}))
}

// The people and programs that change objects in these tests, each through
// impersonation, so that the audit log records them as it records real ones.
var (
	alice    = cluster.User{Name: "alice@example.com", Groups: []string{"sre"}, UserAgent: kubectlAgent}
	bob      = cluster.User{Name: "bob@example.com", Groups: []string{"sre"}, UserAgent: kubectlAgent}
	deployer = cluster.User{Name: "system:serviceaccount:ci:deployer", UserAgent: kubectlAgent}
	argocd   = cluster.User{Name: "system:serviceaccount:argocd:argocd-application-controller",
		UserAgent: "argocd-application-controller/v3.5.7+1b2c3d4 (linux/amd64) kubernetes/$Format"}
	// hpa sends what kube-controller-manager's HPA sends: no fieldManager,
	// a user agent the API server derives the manager from.
	hpa = cluster.User{Name: "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
		UserAgent: "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/a1b2c3d/system:serviceaccount:kube-system:horizontal-pod-autoscaler"}
)

// kubectlAgent is the user agent kubectl sends.
const kubectlAgent = "kubectl/v1.32.3 (linux/amd64) kubernetes/32cc146"

var bindOnce sync.Once

// as returns a client acting as u, allowed to do anything through RBAC.
func as(t *testing.T, u cluster.User) *cluster.Env {
	t.Helper()
	env.Need(t)
	bindOnce.Do(func() {
		// Bound once for the package: the control plane goes away with it.
		if err := bindAll(t); err != nil {
			t.Fatal(err)
		}
	})
	return env.As(t, u)
}

func bindAll(t *testing.T) error {
	env.Need(t)
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "audit-test-users"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
	}
	for _, u := range []cluster.User{alice, bob, deployer, argocd, hpa} {
		b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: u.Name})
	}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, s := range b.Subjects {
		if err := env.AwaitAccess(t.Context(), s.Name, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}}); err != nil {
			return err
		}
	}
	return nil
}

// app is one app of manifests in a test namespace, synced by Argo CD's
// service account as field manager argocd-controller.
type app struct {
	t   *testing.T
	ns  string
	dir string
}

// newApp writes the manifests into a folder and applies them in a new
// namespace with the given labels.
func newApp(t *testing.T, labels map[string]string, manifests string) *app {
	t.Helper()
	a := &app{t: t, ns: env.Namespace(t, labels), dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(a.dir, "app.yaml"), []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	a.sync()
	return a
}

// sync applies the app's manifests as Argo CD.
func (a *app) sync() {
	a.t.Helper()
	argo := as(a.t, argocd)
	manifests, err := render.Manifests(a.t.Context(), render.Options{Dir: a.dir, Namespace: a.ns})
	if err != nil {
		a.t.Fatal(err)
	}
	for _, mf := range manifests {
		argo.Apply(a.t, "argocd-controller", a.ns, mf.Object)
	}
}

// scan scans the app with the audit inputs given (the whole audit log
// folder when none is), with extra config applied by mutate.
func (a *app) scan(mutate func(*config.Config, *scanner.Options)) *report.Report {
	a.t.Helper()
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Appliers: []string{"argocd-controller"},
		Apps: []config.App{{Name: "shop", Namespace: a.ns, Source: config.Source{Path: a.dir}}}}
	opts := scanner.DefaultOptions()
	opts.RESTConfig = env.Config
	opts.Cluster = "envtest"
	opts.GitCacheDir = a.t.TempDir()
	opts.AuditLogs = []string{env.AuditLog.Dir}
	if mutate != nil {
		mutate(cfg, &opts)
	}
	r, err := scanner.Scan(a.t.Context(), cfg, opts)
	if err != nil {
		a.t.Fatalf("scan: %v", err)
	}
	return r
}

// finding returns the finding at path on object kind/name.
func finding(t *testing.T, r *report.Report, kind, name, path string) report.Finding {
	t.Helper()
	var paths []string
	for _, app := range r.Apps {
		if app.Error != "" {
			t.Fatalf("app %s: %s", app.Name, app.Error)
		}
		for _, o := range app.Objects {
			if o.Error != "" {
				t.Fatalf("%s: %s", o.Ref(), o.Error)
			}
			for _, f := range o.Findings {
				if o.Kind == kind && o.Name == name && f.Path == path {
					return f
				}
				paths = append(paths, o.Kind+"/"+o.Name+" "+f.Path)
			}
		}
	}
	t.Fatalf("no finding %s/%s %s; the findings are:\n%s", kind, name, path, strings.Join(paths, "\n"))
	return report.Finding{}
}

// waitForSecondStart sleeps until just after the next second begins, so
// that a few quick requests land in the same second.
func waitForSecondStart() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 20*time.Millisecond).Sub(now))
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  labels: {app: %s, team: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
`
