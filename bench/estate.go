package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// estateSpec sizes a generated GitOps repository.
type estateSpec struct {
	Objects, Apps, Namespaces int
	// WebhookNamespaces are the first namespaces, labelled for the webhook.
	WebhookNamespaces int
	// Prefix starts every namespace name.
	Prefix string
	// Mix makes app i a Helm chart when i mod 3 is 1 and a kustomization
	// when it is 2 (mixedApp), with the same objects a plain app has.
	Mix bool
}

// estate is a generated repository on disk: Config (scan.yaml) next to
// Repo, which holds one folder per app and one file per object. Every object
// names its namespace, so `kubectl diff -R -f Repo` needs no -n, and
// scan.yaml lies outside Repo, so kubectl never reads it.
type estate struct {
	Dir, Repo, Config string
	Namespaces        []string
	// Labelled are the namespaces the webhook mutates.
	Labelled map[string]bool
	// Objects are the objects as parsed back from their files, in apply order.
	Objects []*unstructured.Unstructured
}

// webhookLabel selects the namespaces cluster.DefaultWebhook mutates.
var webhookLabel = map[string]string{"istio-injection": "enabled"}

// kinds is the mix of each app's objects, in turn.
var kinds = []string{"Deployment", "ConfigMap", "Service", "Route"}

// writeEstate writes a repository of spec.Objects objects over spec.Apps
// apps: app i lives in namespace i mod spec.Namespaces, and its objects are
// Deployments, ConfigMaps, headless Services (envtest's service range has
// only 254 cluster IPs) and Routes of the example.com CRD, in turn.
func writeEstate(dir string, spec estateSpec) (*estate, error) {
	e := &estate{Dir: dir, Repo: filepath.Join(dir, "repo"), Config: filepath.Join(dir, "scan.yaml"), Labelled: map[string]bool{}}
	for i := 0; i < spec.Namespaces; i++ {
		ns := fmt.Sprintf("%sns-%02d", spec.Prefix, i)
		e.Namespaces = append(e.Namespaces, ns)
		if i < spec.WebhookNamespaces {
			e.Labelled[ns] = true
		}
	}
	var cfg strings.Builder
	cfg.WriteString("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\nappliers: [argocd-controller]\napps:\n")
	for a := 0; a < spec.Apps; a++ {
		app := fmt.Sprintf("app-%03d", a)
		ns := e.Namespaces[a%spec.Namespaces]
		fmt.Fprintf(&cfg, "- name: %s\n  owner: team-%s\n  namespace: %s\n  source: {path: repo/%s}\n", app, app, ns, app)
		appDir := filepath.Join(e.Repo, app)
		if err := os.MkdirAll(appDir, 0o755); err != nil {
			return nil, err
		}
		n := spec.Objects / spec.Apps
		if a < spec.Objects%spec.Apps {
			n++
		}
		if spec.Mix && a%3 != 0 {
			objs, err := mixedApp(appDir, app, ns, n, a%3 == 1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", app, err)
			}
			e.Objects = append(e.Objects, objs...)
			continue
		}
		for j := 0; j < n; j++ {
			kind := kinds[j%len(kinds)]
			obj := manifest(kind, app, ns, j/len(kinds))
			data, err := yaml.Marshal(obj)
			if err != nil {
				return nil, err
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(data, &u.Object); err != nil {
				return nil, fmt.Errorf("parse generated %s %s: %w", kind, app, err)
			}
			file := filepath.Join(appDir, strings.ToLower(kind)+"-"+u.GetName()+".yaml")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				return nil, err
			}
			e.Objects = append(e.Objects, u)
		}
	}
	if err := os.WriteFile(e.Config, []byte(cfg.String()), 0o644); err != nil {
		return nil, err
	}
	return e, nil
}

// manifest returns the i-th object of a kind in an app.
func manifest(kind, app, ns string, i int) map[string]any {
	short := map[string]string{"Deployment": "web", "ConfigMap": "config", "Service": "svc", "Route": "route"}[kind]
	name := fmt.Sprintf("%s-%s-%d", app, short, i)
	meta := map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app.kubernetes.io/instance": app, "app": name}}
	switch kind {
	case "Deployment":
		return map[string]any{"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": map[string]any{
			"replicas": 2,
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name":      "app",
					"image":     "registry.example.com/" + app + ":1.25.0",
					"ports":     []any{map[string]any{"containerPort": 8080}},
					"env":       []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}},
					"resources": map[string]any{"requests": map[string]any{"cpu": "0.1", "memory": "64Mi"}},
				}}},
			},
		}}
	case "ConfigMap":
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta, "data": map[string]any{
			"LOG_LEVEL": "info", "INDEX": fmt.Sprint(i), "FEATURES": "search,checkout",
		}}
	case "Service":
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": map[string]any{
			"clusterIP": "None",
			"selector":  map[string]any{"app": name},
			"ports":     []any{map[string]any{"name": "http", "port": 80, "targetPort": 8080}},
		}}
	default:
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Route", "metadata": meta, "spec": map[string]any{
			"host":    name + ".example.com",
			"timeout": "30s",
			"backends": []any{
				map[string]any{"name": name + "-v1", "port": 8080, "weight": 90},
				map[string]any{"name": name + "-v2", "port": 8080, "weight": 10},
			},
		}}
	}
}

// ref names an object the way report.Object.Ref does: Kind/namespace/name.
func ref(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}
