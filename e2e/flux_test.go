package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// fluxInterval is how often the tests' Flux objects reconcile: short, so a
// revert by drift correction is measured in seconds.
const fluxInterval = "3s"

// createFluxSource creates a GitRepository named name in ns for repo,
// polled every fluxInterval, with the YAML lines of spec added to its spec.
func createFluxSource(t *testing.T, ns, name string, repo *reconcilers.Repo, spec ...string) {
	t.Helper()
	createFluxObject(t, reconcilers.GitRepository, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  url: %s
  ref: {branch: main}
%s`, name, ns, fluxInterval, repo.URL, specLines(spec)))
}

// createKustomization creates a GitRepository and a Kustomization named name
// in ns that deploys path of repo into ns, with pruning.
func createKustomization(t *testing.T, ns, name string, repo *reconcilers.Repo, path string) {
	t.Helper()
	createFluxSource(t, ns, name, repo)
	createKustomizationOf(t, ns, name, path, fluxInterval)
}

// createKustomizationOf creates a Kustomization named name in ns that
// deploys path of the GitRepository name into ns, with pruning, every
// interval, with the YAML lines of spec added to its spec.
func createKustomizationOf(t *testing.T, ns, name, path, interval string, spec ...string) {
	t.Helper()
	createFluxObject(t, reconcilers.Kustomization, fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  path: ./%s
  prune: true
  targetNamespace: %s
  sourceRef: {kind: GitRepository, name: %s}
%s`, name, ns, interval, path, ns, name, specLines(spec)))
}

// specLines indents YAML written at the top level into a spec.
func specLines(spec []string) string {
	return indent(spec, "  ")
}

// createHelmRelease creates a GitRepository and a HelmRelease named name in
// ns that installs the chart at path of repo. Nothing becomes ready without
// nodes, so Helm is told not to wait.
func createHelmRelease(t *testing.T, ns, name string, repo *reconcilers.Repo, path string, sourceSpec ...string) {
	t.Helper()
	createFluxSource(t, ns, name, repo, sourceSpec...)
	createGitHelmRelease(t, ns, name, name, path, "reconcileStrategy: ChartVersion")
}

// createGitHelmRelease creates a HelmRelease named name in ns that installs
// the chart at path of the GitRepository source; chartSpec is more of its
// chart.spec, one field a line.
func createGitHelmRelease(t *testing.T, ns, name, source, path string, chartSpec ...string) {
	t.Helper()
	createHelmReleaseOf(t, helmRelease{Namespace: ns, Name: name,
		Chart: append([]string{"chart: ./" + path, "sourceRef: {kind: GitRepository, name: " + source + "}"}, chartSpec...)})
}

// helmRelease is a HelmRelease the tests create.
type helmRelease struct {
	Namespace, Name string
	// Chart are the fields of its chart.spec, one a line.
	Chart []string
	// Install and Upgrade are more fields of spec.install and
	// spec.upgrade ("crds: Skip"), after disableWait: nothing becomes
	// ready without nodes, so Helm is told not to wait.
	Install, Upgrade string
	// Spec is more of its spec, YAML at the top level (specLines).
	Spec []string
}

func createHelmReleaseOf(t *testing.T, hr helmRelease) {
	t.Helper()
	more := func(fields string) string {
		if fields == "" {
			return ""
		}
		return ", " + fields
	}
	createFluxObject(t, reconcilers.HelmRelease, fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  chart:
    spec:
%s  install: {disableWait: true%s}
  upgrade: {disableWait: true%s}
%s`, hr.Name, hr.Namespace, fluxInterval, indent(hr.Chart, "      "), more(hr.Install), more(hr.Upgrade), specLines(hr.Spec)))
}

// indent is lines, each a line of YAML text indented by prefix.
func indent(lines []string, prefix string) string {
	var b strings.Builder
	for _, s := range lines {
		for line := range strings.Lines(strings.TrimRight(s, "\n") + "\n") {
			b.WriteString(prefix + line)
		}
	}
	return b.String()
}

func createFluxObject(t *testing.T, gvr schema.GroupVersionResource, manifest string) {
	t.Helper()
	env.Need(t)
	obj := cluster.Object(t, manifest)
	if _, err := env.Dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Create(t.Context(), obj, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// waitFluxReady waits until the Flux object is Ready with what it applied at
// revision (a Kustomization's status.lastAppliedRevision ends in the commit;
// a HelmRelease has no lastAppliedRevision in v2, its status.history[0]
// names the chart version), and returns how long it took.
func waitFluxReady(t *testing.T, gvr schema.GroupVersionResource, ns, name, revision string) time.Duration {
	t.Helper()
	env.Need(t)
	start := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		if gvr == reconcilers.HelmRelease {
			history, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
			if len(history) > 0 {
				rev, _, _ = unstructured.NestedString(history[0].(map[string]any), "chartVersion")
			}
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		last = fmt.Sprintf("lastAppliedRevision %q, conditions %v", rev, conds)
		// helm-controller releases a chart from an OCIRepository with the
		// artifact's digest as build metadata: 1.1.0+f57c38d97ca9.
		if rev == "" || !strings.HasSuffix(rev, revision) && !strings.HasPrefix(rev, revision+"+") {
			return false, nil
		}
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s never became Ready at %s: %s\n%s", gvr.Resource, ns, name, revision, last, flux.Logs(3000))
	}
	return time.Since(start)
}

// checkClean checks a scan of a clean sync: no errors, no findings, every
// one of n objects in sync.
func checkClean(t *testing.T, r *report.Report, n int) {
	t.Helper()
	if errs := appErrors(r); len(errs) > 0 {
		t.Errorf("scan errors: %v", errs)
	}
	if got := activeFindings(r); len(got) > 0 {
		t.Errorf("a clean sync has %d findings, want none:\n%s", len(got), describe(got))
	}
	checkInSync(t, r, n)
}
