package scanner

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// listRecorder records the scan's LISTs of the web app's four kinds as
// they reach the proxy.
type listRecorder struct {
	mu    sync.Mutex
	paths []string
	// failNext, when set, answers the next LIST whose path ends so with a
	// Forbidden, as an API server whose RBAC changed would.
	failNext string
}

func recordAllLists(t *testing.T) (*faultProxy, *listRecorder) {
	p := newFaultProxy(t)
	rec := &listRecorder{}
	p.fault = func(_ int64, r *http.Request, w http.ResponseWriter) bool {
		if !isList(r) {
			return false
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.paths = append(rec.paths, r.URL.Path)
		if rec.failNext != "" && strings.HasSuffix(r.URL.Path, rec.failNext) {
			rec.failNext = ""
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"configmaps is forbidden"}`)
			return true
		}
		return false
	}
	return p, rec
}

// take returns the LISTs recorded since the last take.
func (r *listRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Sorted(slices.Values(r.paths))
	r.paths = nil
	return out
}

func (r *listRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.paths)
}

func early(r *report.Report) [3]int {
	if r.Stats == nil || r.Stats.Cache == nil {
		return [3]int{-1, -1, -1}
	}
	c := r.Stats.Cache
	return [3]int{c.ListsEarly, c.ListsAgain, c.ListsUnused}
}

// TestTheLastScansListsAreReadWhileTheAppsRender: with a cache, a scan
// sends the LISTs the last scan made while its apps render (the render
// waits here until the API server has all four), lists nothing twice, and
// reports what a scan without the cache reports. Whatever the render then
// says differs from the last plan is listed as before: an object Git now
// declares that the early LIST read and let go, a LIST that failed, a kind
// Git no longer declares there.
func TestTheLastScansListsAreReadWhileTheAppsRender(t *testing.T) {
	ns := env.Namespace(t, nil)
	src := filepath.Join(t.TempDir(), "web")
	copyDir(t, fixture("apps", "web"), src)
	applyDir(t, src, ns)
	// Live, not in Git yet: one left behind with the app's label, and one
	// Git adopts below.
	env.Create(t, "kubectl-create", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"left-behind","labels":{"app.kubernetes.io/instance":"web"}},"data":{"k":"v"}}`))
	env.Create(t, "kubectl-create", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"adopted"},"data":{"mode":"live"}}`))
	cfg := scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: src}})
	p, lists := recordAllLists(t)
	dir := t.TempDir()
	scan := func(name string, mutate ...func(*Options)) *report.Report {
		t.Helper()
		r := cachedScan(t, cfg, dir, append([]func(*Options){func(o *Options) { o.RESTConfig = p.config(); o.Extra = true }}, mutate...)...)
		if r.HasErrors() {
			t.Fatalf("%s: the scan has errors: %s", name, dump(r))
		}
		want := runScan(t, cfg, func(o *Options) { o.Extra = true })
		if diff := cmp.Diff(statuses(want), statuses(r)); diff != "" {
			t.Errorf("%s: statuses other than a scan without the cache (-without +with):\n%s", name, diff)
		}
		if diff := cmp.Diff(rows(want), rows(r)); diff != "" {
			t.Errorf("%s: findings other than a scan without the cache (-without +with):\n%s", name, diff)
		}
		return r
	}
	kinds := func(ls []string) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l[strings.LastIndex(l, "/")+1:])
		}
		slices.Sort(out)
		return out
	}
	all := []string{"configmaps", "deployments", "secrets", "services"}

	if r := scan("first"); early(r) != [3]int{0, 0, 0} {
		t.Errorf("first scan, with no plan yet: early, again, unused = %v, want none", early(r))
	}
	if got := kinds(lists.take()); !slices.Equal(got, all) {
		t.Errorf("first scan listed %v, want each of %v once", got, all)
	}

	// The render of the one app waits until the API server has had the
	// four LISTs: they were sent while the apps rendered.
	waited := false
	r := scan("second", func(o *Options) {
		o.Progress = func(pr Progress) {
			if pr.Stage != "render" || waited {
				return
			}
			waited = true
			deadline := time.Now().Add(30 * time.Second)
			for lists.count() < len(all) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := lists.count(); n < len(all) {
				t.Errorf("the render ended with %d of the last scan's %d LISTs sent", n, len(all))
			}
		}
	})
	if early(r) != [3]int{4, 0, 0} {
		t.Errorf("second scan: early, again, unused = %v, want the 4 lists early", early(r))
	}
	if got := kinds(lists.take()); !slices.Equal(got, all) {
		t.Errorf("second scan listed %v, want each of %v once", got, all)
	}
	if got := statuses(r)["ConfigMap/left-behind"]; got != report.StatusExtra {
		t.Errorf("the undeclared ConfigMap with the app's label: %q, want Extra", got)
	}

	// Git adopts a ConfigMap that is live already: the early LIST let its
	// bytes go (the last scan did not declare it), so the ConfigMaps are
	// listed again, and it is found and compared, not Missing.
	if err := os.WriteFile(filepath.Join(src, "adopted.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: adopted}\ndata: {mode: git}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = scan("adopted")
	if early(r) != [3]int{3, 1, 0} {
		t.Errorf("after Git adopted a live ConfigMap: early, again, unused = %v, want 3, 1, 0", early(r))
	}
	if got := kinds(lists.take()); !slices.Equal(got, []string{"configmaps", "configmaps", "deployments", "secrets", "services"}) {
		t.Errorf("after Git adopted a live ConfigMap, listed %v, want the ConfigMaps twice", got)
	}
	if got := statuses(r)["ConfigMap/adopted"]; got != report.StatusDrifted {
		t.Errorf("the adopted ConfigMap: %q, want Drifted (Git says git, live says live)", got)
	}

	// An early LIST fails: it is listed again after the render.
	lists.mu.Lock()
	lists.failNext = "/services"
	lists.mu.Unlock()
	if r := scan("forbidden"); early(r) != [3]int{3, 1, 0} {
		t.Errorf("after an early LIST failed: early, again, unused = %v, want 3, 1, 0", early(r))
	}
	if got := kinds(lists.take()); !slices.Equal(got, []string{"configmaps", "deployments", "secrets", "services", "services"}) {
		t.Errorf("after an early LIST failed, listed %v, want the Services twice", got)
	}

	// Git no longer declares a Service: the early LIST of Services is
	// not used (nothing is compared from it), and the next plan drops it.
	if err := os.Remove(filepath.Join(src, "service.yaml")); err != nil {
		t.Fatal(err)
	}
	if r := scan("no service"); early(r) != [3]int{3, 0, 1} {
		t.Errorf("after Git dropped the Service: early, again, unused = %v, want 3, 0, 1", early(r))
	}
	lists.take()
	if r := scan("no service again"); early(r) != [3]int{3, 0, 0} {
		t.Errorf("the scan after: early, again, unused = %v, want 3, 0, 0", early(r))
	}
	if got := kinds(lists.take()); !slices.Equal(got, []string{"configmaps", "deployments", "secrets"}) {
		t.Errorf("the scan after Git dropped the Service listed %v", got)
	}

	// The plan names lists and objects, no value of any object.
	data, err := os.ReadFile(filepath.Join(dir, listPlanFileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"git-password-do-not-leak", "Z2l0LXBhc3N3b3Jk", "nginx", "live"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the list plan holds the value %q:\n%s", secret, data)
		}
	}
}

// TestABrokenListPlanIsSaidAndTheScanGoesOn: a plan file that is no plan
// is named in the log, the LISTs wait for the render as without a cache,
// and the scan writes a good plan in its place.
func TestABrokenListPlanIsSaidAndTheScanGoesOn(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	cfg := scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}})
	dir := t.TempDir()
	cachedScan(t, cfg, dir)
	path := filepath.Join(dir, listPlanFileName)
	if err := os.WriteFile(path, []byte(`{"format":1,"lists":[{"g":`), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	r := cachedScan(t, cfg, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	if early(r) != [3]int{0, 0, 0} || r.HasErrors() || reused(r) != 4 {
		t.Errorf("with a broken plan: early, again, unused = %v, errors %v, verdicts reused %d", early(r), r.HasErrors(), reused(r))
	}
	if !strings.Contains(log.String(), path) {
		t.Errorf("the log does not name %s:\n%s", path, log.String())
	}
	if r := cachedScan(t, cfg, dir); early(r) != [3]int{4, 0, 0} {
		t.Errorf("the scan after: early, again, unused = %v, want 4 early: the broken plan was not replaced", early(r))
	}
}
