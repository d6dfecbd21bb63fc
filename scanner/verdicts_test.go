package scanner

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// cachedScan scans cfg with the verdict cache in dir.
func cachedScan(t *testing.T, cfg *config.Config, dir string, mutate ...func(*Options)) *report.Report {
	t.Helper()
	return runScan(t, cfg, append([]func(*Options){func(o *Options) { o.CacheDir = dir }}, mutate...)...)
}

func reused(r *report.Report) int {
	if r.Stats == nil || r.Stats.Cache == nil {
		return -1
	}
	return r.Stats.Cache.InSync
}

// sameAsUncached fails unless r says what a scan without the cache says.
func sameAsUncached(t *testing.T, cfg *config.Config, r *report.Report) {
	t.Helper()
	want := runScan(t, cfg)
	// What is dismissed is counted alike; what the scan cost is not.
	if diff := cmp.Diff(want, r, cmpopts.IgnoreFields(report.Stats{}, "APIRequests", "Throttled", "DurationSeconds", "Cache")); diff != "" {
		t.Errorf("the scan with the cache says other than one without (-without +with):\n%s", diff)
	}
}

// TestAnUnchangedObjectIsNotComparedAgain: the second scan of objects
// nobody touched marks them in sync from the cache, and says so; every
// change after that, live or in Git, is seen as by a scan without it.
func TestAnUnchangedObjectIsNotComparedAgain(t *testing.T) {
	ns, src := webCopy(t)
	applyDir(t, src, ns)
	cfg := webConfig(ns, src)
	dir := t.TempDir()

	first := cachedScan(t, cfg, dir)
	if got := reused(first); got != 0 {
		t.Fatalf("first scan took %d verdicts from an empty cache", got)
	}
	inSync := 0
	for _, o := range first.Apps[0].Objects {
		if o.Status == report.StatusInSync && len(o.Findings) == 0 && len(o.Dismissed) == 0 {
			inSync++
		}
	}
	second := cachedScan(t, cfg, dir)
	if got := reused(second); got != 4 || inSync != 4 {
		t.Errorf("second scan took %d verdicts from the cache, want the 4 objects the first found in sync (%d)", got, inSync)
	}
	// The Secret's file is parsed every time: the parse cache keeps none.
	if got := second.Stats.Cache.Manifests; got != 3 {
		t.Errorf("second scan read %d manifests from the cache, want the 3 that are no Secret", got)
	}
	sameAsUncached(t, cfg, second)

	// What the cache keeps names objects; it holds none of their values.
	data, err := os.ReadFile(filepath.Join(dir, verdictFileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"git-password-do-not-leak", "Z2l0LXBhc3N3b3Jk", "nginx:1.25", "info"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the cache file holds the value %q", secret)
		}
	}

	// An autoscaler comes to target the Deployment: nothing of the
	// Deployment changed, but how its differences are classified may have,
	// so it is compared again.
	applyWebHPA(t, ns)
	withScaler := cachedScan(t, cfg, dir)
	if got := reused(withScaler); got != 3 {
		t.Errorf("after an HPA came, %d verdicts reused, want 3 (all but the Deployment)", got)
	}
	sameAsUncached(t, cfg, withScaler)

	// A human edits the ConfigMap: it has a new resourceVersion, so it is
	// compared, and the edit is found; the other three are still reused.
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	third := cachedScan(t, cfg, dir)
	if got := reused(third); got != 3 {
		t.Errorf("after a live edit, %d verdicts reused, want 3", got)
	}
	if got := rows(third); len(got) != 1 || got[0].Path != ".data.LOG_LEVEL" || got[0].Manager != "kubectl-edit" {
		t.Errorf("after a live edit, findings:\n%s", dump(got))
	}
	sameAsUncached(t, cfg, third)

	// Git moves on and the cluster does not: the Deployment's Git side has
	// a new hash, so it is compared, and found behind.
	deployment := filepath.Join(src, "deployment.yaml")
	manifest, err := os.ReadFile(deployment)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(manifest, []byte("nginx:1.25")) {
		t.Fatalf("%s declares no nginx:1.25", deployment)
	}
	if err := os.WriteFile(deployment, bytes.Replace(manifest, []byte("nginx:1.25"), []byte("nginx:1.27"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	fourth := cachedScan(t, cfg, dir)
	if got := reused(fourth); got != 2 {
		t.Errorf("after a Git change, %d verdicts reused, want 2 (Service, Secret)", got)
	}
	var images []row
	for _, r := range rows(fourth) {
		if strings.HasSuffix(r.Path, ".image") {
			images = append(images, r)
		}
	}
	if len(images) != 1 || images[0].Git != "nginx:1.27" || images[0].Live != "nginx:1.25" {
		t.Errorf("after a Git change, image findings:\n%s", dump(images))
	}
	sameAsUncached(t, cfg, fourth)

	// A day later every object is compared afresh.
	later := cachedScan(t, cfg, dir, func(o *Options) {
		o.Now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 1, 0, time.UTC) }
	})
	if got := reused(later); got != 0 {
		t.Errorf("a day after, %d verdicts reused, want none", got)
	}
}

// TestWhatTheCacheGivesUndecodedIsDecodedWhenItMatters: a warm scan
// reads unchanged manifests from the parse cache undecoded, named from
// their bytes (render.Options.Lazy). Git's objects are decoded when they are
// compared and when they are autoscalers: an HPA that only Git declares
// (not applied yet) still explains the Deployment's replicas, and the
// Deployment's finding still says what Git says, as without the cache.
func TestWhatTheCacheGivesUndecodedIsDecodedWhenItMatters(t *testing.T) {
	ns, src := webCopy(t)
	applyDir(t, src, ns)
	hpa := "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web-hpa}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  minReplicas: 3\n  maxReplicas: 60\n"
	if err := os.WriteFile(filepath.Join(src, "hpa.yaml"), []byte(hpa), 0o644); err != nil {
		t.Fatal(err)
	}
	env.Scale(t, "kube-controller-manager", cluster.Deployment, ns, "web", 45)
	cfg := webConfig(ns, src)
	dir := t.TempDir()

	cachedScan(t, cfg, dir)
	warm := cachedScan(t, cfg, dir)
	if got := warm.Stats.Cache.Manifests; got != 4 {
		t.Fatalf("the warm scan read %d manifests from the cache, want the 4 that are no Secret", got)
	}
	want := []row{{Object: "Deployment/web", Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassOperator, Manager: "kube-controller-manager", Git: "3", Live: "45"}}
	if diff := cmp.Diff(want, rows(warm)); diff != "" {
		t.Fatalf("warm scan findings (-want +got):\n%s", diff)
	}
	var hint string
	for _, o := range warm.Apps[0].Objects {
		if o.Kind == "Deployment" && len(o.Findings) == 1 {
			hint = o.Findings[0].Hint
		}
	}
	if !strings.Contains(hint, "HorizontalPodAutoscaler web-hpa owns spec.replicas") {
		t.Errorf("warm scan: the replicas' hint %q does not name the HPA Git declares", hint)
	}
	sameAsUncached(t, cfg, warm)
}

// TestABrokenCacheIsRebuiltAndTheScanGoesOn: a cache file that is no cache
// (cut off, overwritten) is said in the log, by its path, and everything is
// compared; the scan writes a good one in its place.
func TestABrokenCacheIsRebuiltAndTheScanGoesOn(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	cfg := scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}})
	dir := t.TempDir()
	path := filepath.Join(dir, verdictFileName)
	for name, content := range map[string]string{
		"cut off":      `{"format":1,"build":"x","verdicts":[{"k":"ConfigMap"`,
		"not JSON":     "\x00\x01 not a cache",
		"wrong shapes": `{"format":"one","verdicts":{"k":1}}`,
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		r := cachedScan(t, cfg, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
		if got := reused(r); got != 0 || r.HasErrors() {
			t.Errorf("%s: %d verdicts reused, errors %v", name, got, r.HasErrors())
		}
		if !strings.Contains(log.String(), path) {
			t.Errorf("%s: the log does not name %s:\n%s", name, path, log.String())
		}
		if again := cachedScan(t, cfg, dir); reused(again) != 4 {
			t.Errorf("%s: the scan after reused %d verdicts, want 4: the broken file was not replaced", name, reused(again))
		}
	}
}

// webCopy gives a test a namespace of its own and a copy of the web
// fixture it may change: what the cache's tests scan again and again.
func webCopy(t *testing.T) (ns, src string) {
	t.Helper()
	ns = env.Namespace(t, nil)
	src = filepath.Join(t.TempDir(), "web")
	copyDir(t, fixture("apps", "web"), src)
	return ns, src
}

// webConfig scans the web app of the folder src in ns.
func webConfig(ns, src string) *config.Config {
	return scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: src}})
}

// copyDir copies the files of folder src into a new folder dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestACRDWhoseSchemaChangesIsComparedAgain: the verdict on a custom
// resource names the server's schema of its group/version by the address
// of its OpenAPI v3 document, whose hash changes with the CRD's schema; so
// after the CRD changes, its objects are compared again.
func TestACRDWhoseSchemaChangesIsComparedAgain(t *testing.T) {
	crd := func(fields string) {
		t.Helper()
		installCRD(t, "verdicts.example.com", "Gauge", "gauges", fields)
	}
	crd("              level: {type: integer}\n")
	env.RefreshMapper()
	before := schemaURL(t, "apis/verdicts.example.com/v1")

	ns := env.Namespace(t, nil)
	src := appliedApp(t, ns, "gauge", "apiVersion: verdicts.example.com/v1\nkind: Gauge\nmetadata: {name: g}\nspec: {level: 3}\n")
	cfg := scanConfig(ns, config.App{Name: "gauge", Source: config.Source{Path: src}})
	cache := t.TempDir()
	cachedScan(t, cfg, cache)
	if got := reused(cachedScan(t, cfg, cache)); got != 1 {
		t.Fatalf("the Gauge was reused %d times before its CRD changed, want 1", got)
	}

	crd("              level: {type: integer}\n              unit: {type: string}\n")
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return schemaURL(t, "apis/verdicts.example.com/v1") != before, nil
	})
	if err != nil {
		t.Fatalf("the API server never published the Gauge's new schema (still %s)", before)
	}
	after := cachedScan(t, cfg, cache)
	if got := reused(after); got != 0 {
		t.Errorf("the Gauge was reused %d times after its CRD's schema changed, want 0", got)
	}
	sameAsUncached(t, cfg, after)
}
