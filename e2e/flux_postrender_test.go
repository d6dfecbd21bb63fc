package e2e

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// A HelmRelease that patches its chart's output with kustomize
// post-renderers, the way third-party charts get what their values do not
// offer: an annotation by a JSON patch, a container by a strategic merge
// patch, an image override, a second post-renderer after the first, and
// commonMetadata's labels and annotations on every object.
// The real helm-controller releases it; driftscan post-renders the same
// way and must see the release clean.
func TestFluxHelmReleasePostRenderersScanClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		"charts/web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml": "replicas: 1\n",
		"charts/web/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.25}]
`,
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-settings}\ndata: {mode: chart}\n",
	})
	const name = "postrender"
	createFluxSource(t, ns, name, repo)
	createHelmReleaseOf(t, helmRelease{Namespace: ns, Name: name,
		Chart: []string{"chart: ./charts/web", "reconcileStrategy: ChartVersion", "sourceRef: {kind: GitRepository, name: " + name + "}"},
		Spec: []string{fmt.Sprintf(`postRenderers:
- kustomize:
    images: [{name: nginx, newTag: "1.27"}]
    patches:
    - target: {kind: ConfigMap}
      patch: '[{"op": "replace", "path": "/data/mode", "value": "patched"}]'
    - patch: |
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: %s}
        spec:
          template:
            spec:
              containers:
              - name: sidecar
                image: busybox:1.36
- kustomize:
    patches:
    - target: {kind: Deployment}
      patch: '[{"op": "add", "path": "/metadata/annotations", "value": {"second": "renderer"}}]'
commonMetadata:
  labels: {team: platform, helm.toolkit.fluxcd.io/name: not-this}
  annotations: {owner: sre}
`, name)}})
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	cm := env.Get(t, cluster.ConfigMap, ns, name+"-settings")
	if m, _, _ := unstructured.NestedString(cm.Object, "data", "mode"); m != "patched" {
		t.Fatalf("helm-controller released mode %q, want the post-renderer's", m)
	}
	if l, a := cm.GetLabels(), cm.GetAnnotations(); l["team"] != "platform" || l["helm.toolkit.fluxcd.io/name"] != name || a["owner"] != "sre" {
		t.Fatalf("helm-controller released labels %v annotations %v: the test expects commonMetadata's, the origin label its own", l, a)
	}
	checkClean(t, scan(t, "--from", "flux", "--app", name), 2)
}
