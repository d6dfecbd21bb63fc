// Package cleansync_test proves that a clean sync scans clean: each fixture
// of fixtures/cleansync is applied to the real API server, with the real
// kube-controller-manager acting on it, both server-side (as Argo CD or
// Flux apply) and client-side (as `kubectl apply` does, with the
// last-applied annotation), and must give no finding; one real edit on each
// must then be found with the right class. Every difference the scan
// dismisses is counted by reason, and each test checks the mechanism it
// expects did the dismissing.
package cleansync_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

var env *cluster.Env

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWith(m, &env, cluster.Options{ControllerManager: true}))
}

// mode is one way a GitOps tool writes Git to the cluster.
type mode struct {
	name    string
	manager string
	apply   func(t *testing.T, ns string, obj *unstructured.Unstructured)
}

// lastApplied is the annotation kubectl's client-side apply records.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

var modes = []mode{
	{name: "server-side", manager: "argocd-controller", apply: func(t *testing.T, ns string, obj *unstructured.Unstructured) {
		env.Apply(t, "argocd-controller", ns, obj)
	}},
	{name: "client-side", manager: "kubectl-client-side-apply", apply: func(t *testing.T, ns string, obj *unstructured.Unstructured) {
		// What `kubectl apply` sends when it creates an object: the
		// manifest with itself recorded in the last-applied annotation.
		obj = obj.DeepCopy()
		if ns != "" && obj.GetNamespace() == "" && namespaced(t, obj) {
			obj.SetNamespace(ns)
		}
		data, err := json.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[lastApplied] = string(data) + "\n"
		obj.SetAnnotations(ann)
		env.Create(t, "kubectl-client-side-apply", "", obj)
	}},
}

func namespaced(t *testing.T, obj *unstructured.Unstructured) bool {
	t.Helper()
	env.Need(t)
	gvk := obj.GroupVersionKind()
	m, err := env.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("map %s: %v", gvk, err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}

// fixture is the absolute path of a fixtures/cleansync folder.
func fixture(name string) string {
	abs, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "cleansync", name))
	if err != nil {
		panic(err)
	}
	return abs
}

// app is one fixture made ready for one test: its source folder, and the
// objects as Git declares them.
type app struct {
	dir     string
	objects []*unstructured.Unstructured
}

// prepare renders a fixture folder. Plain YAML is copied into a folder of
// the test's own with cluster-scoped objects renamed after the namespace,
// so tests never share one; a chart is used in place.
func prepare(t *testing.T, name, ns string) app {
	t.Helper()
	dir := fixture(name)
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: dir, Namespace: ns})
	if err != nil {
		t.Fatalf("render %s: %v", name, err)
	}
	a := app{dir: dir}
	chart := exists(filepath.Join(dir, "Chart.yaml"))
	if !chart {
		a.dir = t.TempDir()
	}
	for i, mf := range manifests {
		obj := mf.Object
		if !namespaced(t, obj) {
			if chart {
				t.Fatalf("chart %s declares cluster-scoped %s: tests would share it", name, obj.GetName())
			}
			obj.SetName(obj.GetName() + "-" + ns)
			deleteAtEnd(t, obj)
		}
		a.objects = append(a.objects, obj)
		if !chart {
			data, err := json.MarshalIndent(obj.Object, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(a.dir, fmt.Sprintf("%02d.json", i)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return a
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// deleteAtEnd deletes a cluster-scoped object when the test ends.
func deleteAtEnd(t *testing.T, obj *unstructured.Unstructured) {
	env.Need(t)
	gvk, name := obj.GroupVersionKind(), obj.GetName()
	t.Cleanup(func() {
		m, err := env.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("map %s: %v", gvk, err)
			return
		}
		err = env.Dynamic.Resource(m.Resource).Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s %s: %v", gvk.Kind, name, err)
		}
	})
}

// sync writes every object of a as mode does, into ns.
func (a app) sync(t *testing.T, m mode, ns string) {
	t.Helper()
	for _, obj := range a.objects {
		m.apply(t, ns, obj)
	}
}

// scan scans a as app name, with m's manager as the applier.
func (a app) scan(t *testing.T, m mode, ns string, edit ...func(*config.App)) *report.Report {
	t.Helper()
	ca := config.App{Name: "shop", Owner: "team-shop", Namespace: ns, Source: config.Source{Path: a.dir}}
	for _, e := range edit {
		e(&ca)
	}
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Appliers: []string{m.manager}, Dir: ".", Apps: []config.App{ca}}
	opts := scanner.DefaultOptions()
	opts.RESTConfig = env.Config
	opts.Cluster = "envtest"
	opts.GitCacheDir = t.TempDir()
	opts.ExplainDismissed = true
	opts.Now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	r, err := scanner.Scan(t.Context(), cfg, opts)
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
}

func rows(r *report.Report) []row {
	var out []row
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, f := range o.Findings {
				out = append(out, row{Object: o.Kind + "/" + o.Name, Path: f.Path, Type: f.Type, Class: f.Class, Manager: f.Manager})
			}
		}
	}
	return out
}

// clean fails the test unless r has no finding and every object is in sync.
func clean(t *testing.T, r *report.Report) {
	t.Helper()
	for _, a := range r.Apps {
		if a.Error != "" {
			t.Errorf("app %s: %s", a.Name, a.Error)
		}
		for _, o := range a.Objects {
			if o.Status != report.StatusInSync {
				t.Errorf("%s is %s %s", o.Ref(), o.Status, o.Error)
			}
			for _, f := range o.Findings {
				t.Errorf("false finding on a clean sync: %s %s %s (%s, %s) git=%q live=%q hint=%q", o.Ref(), f.Path, f.Type, f.Class, f.Manager, f.Git, f.Live, f.Hint)
			}
		}
	}
}

// dismissedBy lists the dismissals of r as "Kind/name path: reason".
func dismissedBy(r *report.Report) []string {
	var out []string
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, d := range o.Dismissed {
				out = append(out, fmt.Sprintf("%s/%s %s: %s", o.Kind, o.Name, d.Path, d.Reason))
			}
		}
	}
	sort.Strings(out)
	return out
}

// wantDismissed fails unless each of want ("Kind/name path: reason") is
// among r's dismissals: the mechanism the test is about did the work.
func wantDismissed(t *testing.T, r *report.Report, want ...string) {
	t.Helper()
	got := dismissedBy(r)
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.HasSuffix(g, w) || g == w {
				found = true
			}
		}
		if !found {
			t.Errorf("not dismissed as expected: %s\ndismissed:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
	if r.Stats == nil || r.Stats.Dismissed.Total() != len(got) {
		t.Errorf("stats count %v dismissals, the objects list %d", r.Stats, len(got))
	}
}
