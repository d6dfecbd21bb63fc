package render

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
)

// TestPostRenderersRunOverTheChartInOrder: a HelmRelease's kustomize
// post-renderers patch the chart's output, each over the one before
// (checked against the real helm-controller by e2e
// TestFluxHelmReleasePostRenderersScanClean).
func TestPostRenderersRunOverTheChartInOrder(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {mode: chart}\n",
		"templates/dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: {{ .Release.Name }}}\nspec:\n  template:\n    spec:\n      containers: [{name: web, image: nginx:1.25}]\n",
	})
	hs := &config.HelmSource{ReleaseName: "web", PostRenderers: []config.PostRenderer{
		{Images: []config.FluxImage{{Name: "nginx", NewTag: "1.27"}},
			Patches: []config.FluxPatch{{Patch: `[{"op": "replace", "path": "/data/mode", "value": "first"}]`, Target: map[string]any{"kind": "ConfigMap"}}}},
		{Patches: []config.FluxPatch{{Patch: `[{"op": "replace", "path": "/data/mode", "value": "second"}]`, Target: map[string]any{"kind": "ConfigMap"}}}},
	}}
	ms, err := Manifests(context.Background(), Options{Dir: dir, Helm: hs})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Manifest{}
	for i := range ms {
		got[ms[i].Object.GetKind()] = &ms[i]
	}
	if len(ms) != 2 || got["ConfigMap"] == nil || got["Deployment"] == nil {
		t.Fatalf("objects %v", renderSummary(ms))
	}
	if m := got["ConfigMap"].Object.Object["data"].(map[string]any)["mode"]; m != "second" {
		t.Errorf("mode %v: want the second post-renderer's", m)
	}
	c := got["Deployment"].Object.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if c["image"] != "nginx:1.27" {
		t.Errorf("image %v: want the first post-renderer's", c["image"])
	}

	t.Run("a patch that names nothing fails as in helm-controller", func(t *testing.T) {
		bad := &config.HelmSource{ReleaseName: "web", PostRenderers: []config.PostRenderer{{Patches: []config.FluxPatch{{Patch: "apiVersion: v1\nkind: Secret\nmetadata: {name: nope}\ndata: {a: Yg==}\n"}}}}}
		if _, err := Manifests(context.Background(), Options{Dir: dir, Helm: bad}); err == nil {
			t.Error("a patch of an object the chart does not make rendered")
		}
	})
}

// A HelmRelease's commonMetadata is set on each object's metadata after
// the post-renderers, over the chart's, never on selectors or templates;
// helm-controller's origin labels win over a common label of their key
// (checked against the real helm-controller by e2e
// TestFluxHelmReleasePostRenderersScanClean).
func TestCommonMetadataIsSetOnEveryObjectsMetadata(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, labels: {team: chart}, annotations: {note: chart}}\ndata: {mode: chart}\n",
		"templates/dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.25}]\n",
	})
	hs := &config.HelmSource{ReleaseName: "web",
		PostRenderers:     []config.PostRenderer{{Patches: []config.FluxPatch{{Patch: `[{"op": "add", "path": "/metadata/labels", "value": {"team": "patched"}}]`, Target: map[string]any{"kind": "Deployment"}}}}},
		CommonLabels:      map[string]string{"team": "platform", "helm.toolkit.fluxcd.io/name": "other"},
		CommonAnnotations: map[string]string{"note": "common"},
	}
	ms, err := Manifests(context.Background(), Options{Dir: dir, Helm: hs})
	if err != nil || len(ms) != 2 {
		t.Fatalf("%d objects, %v", len(ms), err)
	}
	for _, m := range ms {
		o := m.Object
		if d := cmp.Diff(map[string]string{"team": "platform"}, o.GetLabels()); d != "" {
			t.Errorf("%s labels (-want +got):\n%s", o.GetKind(), d)
		}
		if d := cmp.Diff(map[string]string{"note": "common"}, o.GetAnnotations()); d != "" {
			t.Errorf("%s annotations (-want +got):\n%s", o.GetKind(), d)
		}
		if o.GetKind() == "Deployment" {
			sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
			tpl, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			if len(sel) != 1 || len(tpl) != 1 {
				t.Errorf("selector %v, template labels %v: common labels go on metadata only", sel, tpl)
			}
		}
	}
}
