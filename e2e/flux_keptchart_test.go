package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// A chart in Git built with reconcileStrategy ChartVersion (Flux's
// default), changed without a version bump: the real source-controller
// sees the new commit and keeps the chart it built for 0.1.0, so the real
// helm-controller never applies the change. driftscan renders the commit,
// so the change is a difference the applier owns; its hint must say why it
// will not be applied and what to do, not that it waits for a sync.
func TestFluxChartChangedWithoutAVersionBump(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, helmApp)
	const name = "kept"
	createHelmRelease(t, ns, name, repo, "chart")
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	checkClean(t, scan(t, "--from", "flux", "--app", name), 3)

	changed := repo.Commit(t, "greet differently, same version", map[string]string{
		"chart/templates/config.yaml": strings.Replace(helmApp["chart/templates/config.yaml"], "GREETING: hello", "GREETING: bonjour", 1),
	})
	waitFluxArtifact(t, ns, name, changed)
	// The HelmChart helm-controller made saw the commit and kept its chart.
	waitRevisionField(t, reconcilers.HelmChart, ns, ns+"-"+name, changed, "status", "observedSourceArtifactRevision")
	time.Sleep(3 * time.Second) // a helm-controller interval
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), name+"-config", metav1.GetOptions{})
	if err != nil || cm.Data["GREETING"] != "hello" {
		t.Fatalf("ConfigMap %s-config %v, %v: the test expects helm-controller not to apply a chart change at the same version", name, cm.Data, err)
	}

	got := activeFindings(scan(t, "--from", "flux", "--app", name))
	if len(got) != 1 || got[0].Path != ".data.GREETING" || got[0].Git != "bonjour" || got[0].Live != "hello" ||
		got[0].Manager != "helm-controller" || got[0].Class != report.ClassUnknown ||
		!strings.Contains(got[0].Hint, "still 0.1.0") || !strings.Contains(got[0].Hint, "bump the version in Chart.yaml") {
		t.Errorf("want GREETING hello -> bonjour owned by helm-controller, with the hint that a chart changed at its version is never released, got:\n%s", describe(got))
	}
}
