package scanner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// lockedBuffer is a log sink the scan's goroutines may write at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// listsLogged counts the GETs of each path the debug log names.
func listsLogged(t *testing.T, log string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var e struct{ Msg, Method, Path string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if e.Msg == "api request" && e.Method == "GET" {
			out[e.Path]++
		}
	}
	return out
}

// scannedWebCopy applies a copy of the web app (webCopy) and scans it
// once with the cache folder dir, which then holds its list plan.
func scannedWebCopy(t *testing.T) (ns, src string, cfg *config.Config, dir string) {
	t.Helper()
	ns, src = webCopy(t)
	applyDir(t, src, ns)
	cfg, dir = webConfig(ns, src), t.TempDir()
	cachedScan(t, cfg, dir)
	return ns, src, cfg, dir
}

// readPlan reads the list plan a scan kept in the cache dir.
func readPlan(t *testing.T, dir string) []plannedList {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, listPlanFile))
	if err != nil {
		t.Fatalf("no list plan kept: %v", err)
	}
	var p listPlan
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p.Lists
}

// TestAWarmScanListsWhileItRenders: a scan keeps the LISTs it made in the
// cache (lists.json); the next scan sends them before it has rendered Git
// (it is held in its render until the API server has answered the
// ConfigMaps' LIST), uses what they read rather than listing again, and
// reports what a scan without the cache reports.
func TestAWarmScanListsWhileItRenders(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	cfg := scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: fixture("apps", "web")}})
	dir := t.TempDir()

	cachedScan(t, cfg, dir)
	var kinds []string
	for _, p := range readPlan(t, dir) {
		kinds = append(kinds, p.Kind+" in "+p.Namespace)
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap in " + ns, "Deployment in " + ns, "Secret in " + ns, "Service in " + ns}; !slices.Equal(kinds, want) {
		t.Fatalf("list plan %q, want %q", kinds, want)
	}

	var log lockedBuffer
	configMaps := "/api/v1/namespaces/" + ns + "/configmaps"
	listedFirst := false
	warm := cachedScan(t, cfg, dir, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.Progress = func(p Progress) {
			if p.Stage != "render" || listedFirst {
				return
			}
			// The one app has rendered but the render has not ended:
			// the planned LIST is answered meanwhile, or never.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if listsLogged(t, log.String())[configMaps] > 0 {
					listedFirst = true
					return
				}
			}
		}
	})
	if !listedFirst {
		t.Errorf("the ConfigMaps' LIST was not sent while Git was rendered:\n%s", log.String())
	}
	logged := listsLogged(t, log.String())
	for _, resource := range []string{"/api/v1/namespaces/%s/configmaps", "/apis/apps/v1/namespaces/%s/deployments", "/api/v1/namespaces/%s/secrets", "/api/v1/namespaces/%s/services"} {
		if path := fmt.Sprintf(resource, ns); logged[path] != 1 {
			t.Errorf("GET %s sent %d times, want once", path, logged[path])
		}
	}
	sameAsUncached(t, cfg, warm)
}

// TestAPlannedListGitNoLongerNeedsIsLetGo: when Git stops declaring a
// kind, the LIST the plan names for it is cancelled and reported nowhere,
// the rest are used, and the plan kept is the new one.
func TestAPlannedListGitNoLongerNeedsIsLetGo(t *testing.T) {
	_, src, cfg, dir := scannedWebCopy(t)

	if err := os.Remove(filepath.Join(src, "deployment.yaml")); err != nil {
		t.Fatal(err)
	}
	warm := cachedScan(t, cfg, dir)
	for _, o := range warm.Apps[0].Objects {
		if o.Kind == "Deployment" || o.Status != report.StatusInSync {
			t.Errorf("%s/%s: %s %q; want the three objects Git still declares, in sync", o.Kind, o.Name, o.Status, o.Error)
		}
	}
	if len(warm.Apps[0].Objects) != 3 || len(warm.Errors) != 0 {
		t.Errorf("%d objects, errors %q", len(warm.Apps[0].Objects), warm.Errors)
	}
	for _, p := range readPlan(t, dir) {
		if p.Kind == "Deployment" {
			t.Errorf("the plan still names the Deployments' LIST: %+v", p)
		}
	}
	sameAsUncached(t, cfg, warm)
}

// TestAPlannedListReadsAheadWithinItsBudget: a planned LIST keeps what it
// reads before the scan takes it only up to prefetchBudget bytes, then
// waits; with none, some or all of the items kept, the scan reports what
// a scan without the cache reports.
func TestAPlannedListReadsAheadWithinItsBudget(t *testing.T) {
	ns, src := webCopy(t)
	var more strings.Builder
	for i := range 6 {
		fmt.Fprintf(&more, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra-%d}\ndata: {n: \"%d\"}\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(src, "more.yaml"), []byte(more.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	applyDir(t, src, ns)
	cfg := webConfig(ns, src)
	before := prefetchBudget
	t.Cleanup(func() { prefetchBudget = before })
	for _, budget := range []int64{0, 1500, 1 << 20} {
		t.Run(fmt.Sprintf("budget %d", budget), func(t *testing.T) {
			prefetchBudget = budget
			dir := t.TempDir()
			cachedScan(t, cfg, dir)
			warm := cachedScan(t, cfg, dir)
			if got := len(warm.Apps[0].Objects); got != 10 {
				t.Errorf("%d objects, want 10", got)
			}
			if st := statuses(warm); st["ConfigMap/extra-5"] != report.StatusInSync || st["Deployment/web"] != report.StatusInSync {
				t.Errorf("statuses %v", st)
			}
			sameAsUncached(t, cfg, warm)
		})
	}
}

// TestAKindGitAddsIsTypedBesideThePlannedOnes: a warm scan loads the
// schemas of the kinds its list plan names while the apps render; a kind
// Git has added since (here a CronJob, of a group/version the plan does
// not name) is still typed with its own schema once rendered, so the
// dozen fields the API server fills in are dismissed as its defaults, a
// human's edit is found, and the report is the one a scan without the
// cache makes.
func TestAKindGitAddsIsTypedBesideThePlannedOnes(t *testing.T) {
	ns, src, cfg, dir := scannedWebCopy(t)
	for _, p := range readPlan(t, dir) {
		if p.Group == "batch" {
			t.Fatalf("the first plan names %+v already", p)
		}
	}

	cronJob := `apiVersion: batch/v1
kind: CronJob
metadata:
  name: web-report
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: report
              image: busybox:1.36
              args: ["echo", "report"]
`
	if err := os.WriteFile(filepath.Join(src, "cronjob.yaml"), []byte(cronJob), 0o644); err != nil {
		t.Fatal(err)
	}
	applyDir(t, src, ns)
	cronJobs := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}
	env.Patch(t, "kubectl-edit", cronJobs, ns, "web-report", types.MergePatchType, `{"spec":{"schedule":"0 4 * * *"}}`)

	warm := cachedScan(t, cfg, dir, func(o *Options) { o.ExplainDismissed = true })
	var found []string
	for _, o := range warm.Apps[0].Objects {
		if o.Kind != "CronJob" {
			continue
		}
		if o.Status != report.StatusDrifted || o.Error != "" {
			t.Errorf("CronJob: %s %q, want Drifted", o.Status, o.Error)
		}
		for _, f := range o.Findings {
			found = append(found, f.Path+" by "+f.Manager)
		}
		defaults := 0
		for _, d := range o.Dismissed {
			if d.Reason == report.Defaulted {
				defaults++
			}
		}
		if defaults < 5 {
			t.Errorf("CronJob: %d differences dismissed as the API server's defaults, want its schema's (concurrencyPolicy, the history limits, the pod template's): %+v", defaults, o.Dismissed)
		}
	}
	if want := []string{".spec.schedule by kubectl-edit"}; !slices.Equal(found, want) {
		t.Errorf("CronJob findings %q, want %q", found, want)
	}
	if warm.Stats.Cache == nil || warm.Stats.Cache.Manifests != 3 {
		t.Errorf("the warm scan took %+v from the cache, want the 3 manifests of the first scan that are no Secret", warm.Stats.Cache)
	}
	sameAsUncached(t, cfg, cachedScan(t, cfg, dir))
}
