package scanner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// These tests check that a finding carries what the scan knew, beyond its
// display text: the JSON pointer, the path's elements, the typed values and
// whether they were masked.

// fidelityApp is Git's side of the fidelity tests: a Deployment whose one
// container has two env vars, a ConfigMap, a Secret, a Service whose
// targetPort is a number, and a Widget (a CRD that keeps unknown fields)
// whose map key holds '/' and '~', which no annotation key may.
const fidelityApp = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    example.com/owner: "x"
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        env:
        - {name: A, value: "1"}
        - {name: B, value: "2"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  LIMIT: "5"
  FEATURE: "on"
---
apiVersion: v1
kind: Secret
metadata:
  name: web-db
stringData:
  password: git-password-do-not-leak
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: web
spec:
  config:
    a.b/c~d: "x"
`

// fidelity is a finding reduced to what it knows beyond its text.
type fidelity struct {
	Object, Path, Pointer string
	Elements              []string
	Type                  report.Type
	GitValue, LiveValue   any
	Masked                bool
}

func fidelities(r *report.Report) []fidelity {
	var out []fidelity
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, f := range o.Findings {
				out = append(out, fidelity{Object: o.Kind + "/" + o.Name, Path: f.Path, Pointer: f.Pointer, Elements: f.PathElements, Type: f.Type, GitValue: f.GitValue, LiveValue: f.LiveValue, Masked: f.Masked})
			}
		}
	}
	return out
}

func TestAFindingKeepsItsPointerTypedValuesAndMasking(t *testing.T) {
	env.InstallCRDs(t, "argocd-controller", fixture("render", "helm", "web", "crds"))
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(fidelityApp), 0o644); err != nil {
		t.Fatal(err)
	}
	applyDir(t, dir, ns)
	// A human puts a debug container in front of the app's, drops env A,
	// edits the annotation, the ConfigMap, the Secret and the Service, and
	// scales; a pipeline sets the image; kubectl patch adds env DEBUG.
	env.Update(t, "kubectl-edit", cluster.Deployment, ns, "web", func(u *unstructured.Unstructured) {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		app := containers[0].(map[string]any)
		app["env"] = []any{map[string]any{"name": "B", "value": "2"}}
		debug := map[string]any{"name": "debug", "image": "busybox:1.37", "args": []any{"sleep", "3600"}}
		_ = unstructured.SetNestedSlice(u.Object, []any{debug, app}, "spec", "template", "spec", "containers")
		_ = unstructured.SetNestedField(u.Object, "y", "metadata", "annotations", "example.com/owner")
	})
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	env.Patch(t, "kubectl-edit", widget, ns, "web", types.MergePatchType, `{"spec":{"config":{"a.b/c~d":"y"}}}`)
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Patch(t, "kubectl-patch", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
	env.Scale(t, "kubectl", cluster.Deployment, ns, "web", 5)
	env.Update(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "data", "FEATURE")
		_ = unstructured.SetNestedField(u.Object, "6", "data", "LIMIT")
	})
	env.Patch(t, "kubectl-edit", cluster.Secret, ns, "web-db", types.MergePatchType, `{"stringData":{"password":"live-password-do-not-leak"}}`)
	env.Patch(t, "kubectl-edit", cluster.Service, ns, "web", types.JSONPatchType, `[{"op":"replace","path":"/spec/ports/0/targetPort","value":"http"}]`)

	cfg := scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: dir}})
	r := runScan(t, cfg)
	container := func(name string, rest ...string) []string {
		return append([]string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"` + name + `"}`}, rest...)
	}
	live := env.Get(t, cluster.Deployment, ns, "web")
	debug, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	want := []fidelity{
		// A removed map key: the pointer is into Git, the value Git's string.
		{Object: "ConfigMap/web-config", Path: ".data.FEATURE", Pointer: "/data/FEATURE", Elements: []string{"f:data", "f:FEATURE"}, Type: report.TypeRemoved, GitValue: "on"},
		// ConfigMap data are strings, whatever they look like.
		{Object: "ConfigMap/web-config", Path: ".data.LIMIT", Pointer: "/data/LIMIT", Elements: []string{"f:data", "f:LIMIT"}, Type: report.TypeChanged, GitValue: "5", LiveValue: "6"},
		// A map key with '/' is one element, escaped in the pointer.
		{Object: "Deployment/web", Path: ".metadata.annotations.example.com/owner", Pointer: "/metadata/annotations/example.com~1owner", Elements: []string{"f:metadata", "f:annotations", "f:example.com/owner"}, Type: report.TypeChanged, GitValue: "x", LiveValue: "y"},
		// A scalar: numbers stay numbers.
		{Object: "Deployment/web", Path: ".spec.replicas", Pointer: "/spec/replicas", Elements: []string{"f:spec", "f:replicas"}, Type: report.TypeChanged, GitValue: int64(3), LiveValue: int64(5)},
		// A removed env var: the pointer has its index in Git, which live lacks.
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].env[name="A"]`, Pointer: "/spec/template/spec/containers/0/env/0", Elements: container("app", "f:env", `k:{"name":"A"}`), Type: report.TypeRemoved, GitValue: map[string]any{"name": "A", "value": "1"}},
		// An env var added by name, in the app container that is second
		// live, where the strategic merge put it: before B.
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].env[name="DEBUG"]`, Pointer: "/spec/template/spec/containers/1/env/0", Elements: container("app", "f:env", `k:{"name":"DEBUG"}`), Type: report.TypeAdded, LiveValue: map[string]any{"name": "DEBUG", "value": "1"}},
		// The image of the container that is first in Git and second live:
		// the pointer has the live index, the elements the key.
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].image`, Pointer: "/spec/template/spec/containers/1/image", Elements: container("app", "f:image"), Type: report.TypeChanged, GitValue: "nginx:1.25", LiveValue: "nginx:1.26"},
		// A new container: the whole subtree as live has it (as compared:
		// without empty maps), at its live index.
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="debug"]`, Pointer: "/spec/template/spec/containers/0", Elements: container("debug"), Type: report.TypeAdded, LiveValue: PruneEmpty(debug[0])},
		// Secret data: masked, no values at all.
		{Object: "Secret/web-db", Path: ".data.password", Pointer: "/data/password", Elements: []string{"f:data", "f:password"}, Type: report.TypeChanged, Masked: true},
		// A number in Git, a string live (an int-or-string).
		{Object: "Service/web", Path: `.spec.ports[port=80,protocol="TCP"].targetPort`, Pointer: "/spec/ports/0/targetPort", Elements: []string{"f:spec", "f:ports", `k:{"port":80,"protocol":"TCP"}`, "f:targetPort"}, Type: report.TypeChanged, GitValue: int64(8080), LiveValue: "http"},
		// A map key with '/' and '~': "~1" and "~0" in the pointer.
		{Object: "Widget/web", Path: ".spec.config.a.b/c~d", Pointer: "/spec/config/a.b~1c~0d", Elements: []string{"f:spec", "f:config", "f:a.b/c~d"}, Type: report.TypeChanged, GitValue: "x", LiveValue: "y"},
	}
	if diff := cmp.Diff(want, fidelities(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if m, _ := debug[0].(map[string]any); m["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("the added container as live has it should carry its server defaults: %v", debug[0])
	}

	// The JSON report keeps the types apart, and no Secret value leaves.
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`"gitValue":8080,"liveValue":"http"`, `"gitValue":3,"liveValue":5`, `"gitValue":"5","liveValue":"6"`, `"git":"***","live":"*** (differs)","masked":true,"ignored"`} {
		if !strings.Contains(string(data), part) {
			t.Errorf("the JSON report does not hold %s", part)
		}
	}
	for _, secret := range []string{"git-password-do-not-leak", "live-password-do-not-leak", "Z2l0LXBhc3N3b3Jk", "bGl2ZS1wYXNzd29yZC"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("report contains Secret value %q", secret)
		}
	}

	// The pointer is the one an ignore rule takes.
	cfg.Ignore = []classify.IgnoreRule{{JSONPointers: []string{"/spec/config/a.b~1c~0d", "/spec/template/spec/containers/1/image"}, Owner: "team-web", Reason: "copied from the report", Expires: "2027-01-01"}}
	var ignored []string
	for _, row := range rows(runScan(t, cfg)) {
		if row.Ignored {
			ignored = append(ignored, row.Path)
		}
	}
	if diff := cmp.Diff([]string{`.spec.template.spec.containers[name="app"].image`, ".spec.config.a.b/c~d"}, ignored); diff != "" {
		t.Errorf("ignored by the reported pointers (-want +got):\n%s", diff)
	}
}
