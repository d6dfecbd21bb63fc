package render

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
)

// fluxRepo is a repository laid out as Flux fleets are: a folder of plain
// manifests (Flux generates its kustomization), one with a kustomization
// of its own that names an image, and a component elsewhere.
var fluxRepo = map[string]string{
	"apps/web/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: elsewhere
spec:
  replicas: ${replicas:=1}
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.25
        env:
        - {name: PORT, value: "${port}"}
        - name: HOST
          value: "${port}"
`,
	"apps/web/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  region: ${region}
  literal: $${not_a_var}
  zone: ${zone:=a}
  password: ${db_password}
`,
	"apps/web/raw.yaml":                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\n  labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata: {text: \"${region}\"}\n",
	"apps/web/.gitlab-ci.yml":             "stages: [deploy]\n",
	"apps/web/more/kustomization.yaml":    "resources: [cm.yaml]\n",
	"apps/web/more/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: more}\n",
	"apps/web/more/unlisted.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unlisted}\n",
	"apps/pinned/kustomization.yaml":      "resources: [deploy.yaml]\nimages:\n- {name: nginx, newTag: \"1.26\"}\n",
	"apps/pinned/deploy.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: pinned}\nspec:\n  template:\n    spec:\n      containers: [{name: web, image: nginx}]\n",
	"apps/broken/notes.yaml":              "just: notes\n",
	"components/audit/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {audit: \"on\"}\n",
}

// TestAFluxKustomizationBuildsAsKustomizeController pins what
// kustomize-controller does to a build (checked against the real one by
// e2e TestFluxKustomizationPostBuildAndOverridesScanClean).
func TestAFluxKustomizationBuildsAsKustomizeController(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, fluxRepo)
	fleet := &config.FluxBuild{
		TargetNamespace: "shop", NamePrefix: "fx-",
		Images:     []config.FluxImage{{Name: "nginx", NewTag: "1.27"}},
		Patches:    []config.FluxPatch{{Patch: "- op: add\n  path: /metadata/annotations\n  value: {patched: \"yes\"}\n", Target: map[string]any{"kind": "Deployment"}}},
		Components: []string{"../../components/audit", "../../components/missing"}, IgnoreMissingComponents: true,
		Labels:    map[string]string{"owner": "platform"},
		PostBuild: true,
		Vars:      map[string]string{"region": "eu", "port": "8080", "replicas": "2", "db_password": "s3cr3t-pw"},
		Secret:    []string{"s3cr3t-pw"},
	}
	ms, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "apps/web"), Root: root, Kustomize: &config.KustomizeSource{Flux: fleet}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, m := range ms {
		got[m.Object.GetNamespace()+"/"+m.Object.GetName()] = m.Object.Object
	}
	if len(got) != 4 {
		t.Fatalf("objects %v: want the three files, the subfolder's one listed object, no CI file", keysOf(got))
	}
	settings := got["shop/fx-settings"]
	if d := cmp.Diff(map[string]any{"region": "eu", "literal": "${not_a_var}", "zone": "a", "password": "s3cr3t-pw"}, settings["data"]); d != "" {
		t.Errorf("substituted data (-want +got):\n%s", d)
	}
	deploy := got["shop/fx-web"]
	spec := deploy["spec"].(map[string]any)
	if spec["replicas"] != int64(2) {
		t.Errorf("replicas %#v: want the number 2", spec["replicas"])
	}
	c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	// kustomize-controller writes the object from its JSON before it
	// substitutes: the quotes Git put around "${port}" are gone, and 8080
	// is a number (which the API server then refuses for an env value).
	if c["image"] != "nginx:1.27" || c["env"].([]any)[0].(map[string]any)["value"] != int64(8080) {
		t.Errorf("container %#v: want the image override and the port a number", c)
	}
	meta := deploy["metadata"].(map[string]any)
	if d := cmp.Diff(map[string]any{"owner": "platform", "audit": "on"}, meta["labels"]); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"patched": "yes"}, meta["annotations"]); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	if raw := got["shop/fx-raw"]["data"].(map[string]any)["text"]; raw != "${region}" {
		t.Errorf("an object that opts out was substituted: %v", raw)
	}

	t.Run("an image override with a digest replaces the kustomization's tag", func(t *testing.T) {
		ms, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "apps/pinned"), Root: root,
			Kustomize: &config.KustomizeSource{Flux: &config.FluxBuild{Images: []config.FluxImage{{Name: "nginx", Digest: "sha256:" + strings.Repeat("a", 64)}}}}})
		if err != nil || len(ms) != 1 {
			t.Fatalf("%d objects, %v", len(ms), err)
		}
		c := ms[0].Object.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		if c["image"] != "nginx@sha256:"+strings.Repeat("a", 64) {
			t.Errorf("image %v", c["image"])
		}
	})
	t.Run("a file that is not Kubernetes YAML fails the build, as in Flux", func(t *testing.T) {
		_, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "apps/broken"), Root: root, Kustomize: &config.KustomizeSource{Flux: &config.FluxBuild{TargetNamespace: "x"}}})
		if err == nil || !strings.Contains(err.Error(), "failed to decode Kubernetes YAML from notes.yaml") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("a variable that is not set fails the build, as in Flux", func(t *testing.T) {
		unset := *fleet
		unset.Vars = map[string]string{"region": "eu"}
		_, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "apps/web"), Root: root, Kustomize: &config.KustomizeSource{Flux: &unset}})
		if err == nil || !strings.Contains(err.Error(), `variable not set (strict mode): "port"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("an error never shows a value from a Secret", func(t *testing.T) {
		bad := *fleet
		bad.Vars = map[string]string{"region": "s3cr3t-pw: [", "db_password": "x"}
		_, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "apps/web"), Root: root, Kustomize: &config.KustomizeSource{Flux: &bad}})
		if err == nil {
			t.Fatal("a substitution that breaks the YAML built")
		}
		if strings.Contains(err.Error(), "s3cr3t-pw") {
			t.Errorf("the error shows the Secret's value: %v", err)
		}
	})
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
