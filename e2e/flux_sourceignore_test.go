package e2e

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// A GitRepository whose artifact leaves files out, by a .sourceignore in
// the repository and by spec.ignore, as monorepos keep drafts, docs and
// local overrides next to what Flux deploys. The real source-controller
// and kustomize-controller apply what the artifact keeps; driftscan must
// compare exactly that, and not call the rest Missing.
func TestFluxSourceIgnoreScansClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {a: b}\n"
	}
	repo := gitServer.NewRepo(t, map[string]string{
		".sourceignore":                      "*.md\n/apps/web/drafts/\n",
		"apps/web/cm.yaml":                   cm("web"),
		"apps/web/README.md":                 "# not deployed\n",
		"apps/web/drafts/cm.yaml":            cm("draft"),
		"apps/web/local.yaml":                cm("local"),
		"apps/web/extra.json":                `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}}`,
		"apps/web/nested/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/web/nested/cm.yaml":            cm("nested"),
	})
	const name = "ignoring"
	createFluxSource(t, ns, name, repo, "ignore: |\n  /apps/web/local.yaml\n")
	createKustomizationOf(t, ns, name, "apps/web", fluxInterval)
	waitFluxReady(t, reconcilers.Kustomization, ns, name, repo.Head())
	for _, n := range []string{"draft", "local", "json"} {
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("ConfigMap %s: %v: the test expects Flux to leave it out", n, err)
		}
	}

	r := scan(t, "--from", "flux", "--app", name)
	checkClean(t, r, 2)
}

// The same rules hold for a HelmRelease's chart in a GitRepository:
// source-controller builds the chart from the artifact, so a template or a
// file .Files reads that .sourceignore or spec.ignore leaves out is not
// in the release helm-controller installs.
func TestFluxSourceIgnoreAppliesToAChart(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		".sourceignore":                   "/charts/web/files/dev-*\n",
		"charts/web/Chart.yaml":           "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/templates/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-files}\ndata:\n  files: {{ len (.Files.Glob \"files/*\") | quote }}\n",
		"charts/web/templates/draft.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-draft}\ndata: {a: b}\n",
		"charts/web/files/prod-a.conf":    "a\n",
		"charts/web/files/dev-b.conf":     "b\n",
	})
	const name = "ignoring-chart"
	createHelmRelease(t, ns, name, repo, "charts/web", "ignore: |\n  /charts/web/templates/draft.yaml\n")
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "web-draft", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap web-draft: %v: the test expects Flux to leave the ignored template out", err)
	}
	if cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "web-files", metav1.GetOptions{}); err != nil || cm.Data["files"] != "1" {
		t.Fatalf("ConfigMap web-files %v, %v: the test expects the chart to hold one file of files/", cm.Data, err)
	}
	r := scan(t, "--from", "flux", "--app", name)
	checkClean(t, r, 1)
}
