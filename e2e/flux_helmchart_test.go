package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// A HelmRelease whose chartRef names a HelmChart (a chart shared by several
// releases, built once by source-controller from a GitRepository with the
// HelmChart's valuesFiles): the real helm-controller installs that chart,
// and driftscan renders the same one, with the same values, and scans
// clean. It was skipped before.
func TestFluxHelmChartRefScansClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	files := map[string]string{"envs/prod.yaml": "logLevel: warn\n", "envs/only.yaml": "logLevel: warn\nimage: nginx:1.27\n"}
	for k, v := range helmApp {
		files[k] = v
	}
	// The chart label as `helm create` writes it: the version's build
	// metadata (which source-controller sets) with "_" for "+".
	files["chart/templates/config.yaml"] = strings.Replace(files["chart/templates/config.yaml"],
		"{{ .Chart.Name }}-{{ .Chart.Version }}", `{{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}`, 1)
	repo := gitServer.NewRepo(t, files)
	const name = "by-helmchart"
	createFluxSource(t, ns, name, repo)
	createFluxObject(t, reconcilers.HelmChart, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  chart: ./chart
  reconcileStrategy: ChartVersion
  sourceRef: {kind: GitRepository, name: %s}
  valuesFiles: [chart/values.yaml, envs/prod.yaml]
`, name, ns, fluxInterval, name))
	createFluxObject(t, reconcilers.HelmRelease, fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  chartRef: {kind: HelmChart, name: %s}
  install: {disableWait: true}
  upgrade: {disableWait: true}
`, name, ns, fluxInterval, name))
	// The same chart by spec.chart, its version marked with the commit.
	const byRevision = "by-revision"
	createGitHelmRelease(t, ns, byRevision, name, "chart", "reconcileStrategy: Revision", "valuesFiles: [chart/values.yaml, envs/prod.yaml]")
	// valuesFiles without the chart's values.yaml: source-controller
	// packages their merge as the chart's values.yaml, so the chart's own
	// defaults (replicas: 2) are gone: the template renders `replicas:
	// null`, helm-controller applies the null server-side and owns the
	// default 1 the API server fills in, which is no drift.
	const onlyFiles = "only-files"
	createGitHelmRelease(t, ns, onlyFiles, name, "chart", "valuesFiles: [envs/only.yaml]")
	waitFluxReady(t, reconcilers.HelmRelease, ns, onlyFiles, "0.1.0+1")
	if d, err := env.Client.AppsV1().Deployments(ns).Get(t.Context(), onlyFiles, metav1.GetOptions{}); err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Fatalf("Deployment %s: %v: the test expects the chart's default replicas: 2 dropped (the API server's 1)", onlyFiles, err)
	}
	checkClean(t, scan(t, "--from", "flux", "--app", onlyFiles), 3)

	// source-controller builds the chart with valuesFiles as 0.1.0+<its
	// HelmChart's generation>, and with reconcileStrategy Revision as
	// 0.1.0+<commit[:12]>.<generation>; helm-controller renders it so.
	for app, version := range map[string]string{name: "0.1.0+1", byRevision: "0.1.0+" + repo.Head()[:12] + ".1"} {
		waitFluxReady(t, reconcilers.HelmRelease, ns, app, version)
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), app+"-config", metav1.GetOptions{})
		if err != nil || cm.Data["LOG_LEVEL"] != "warn" || cm.Labels["helm.sh/chart"] != "web-"+strings.ReplaceAll(version, "+", "_") {
			t.Fatalf("ConfigMap %s-config %v %v, %v: the test expects the values files applied and the chart's version %s", app, cm.Data, cm.Labels, err, version)
		}
		checkClean(t, scan(t, "--from", "flux", "--app", app), 3)
	}
}
