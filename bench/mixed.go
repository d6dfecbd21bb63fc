package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/render"
)

// mixedApp writes app's n objects into appDir as a Helm chart (chart) or
// a kustomization, the way real repositories hold them, and returns what
// they render to in namespace ns: the objects the estate applies.
//
// The chart is one template per kind, each ranging over a count from the
// values and naming its objects through helpers, as charts do; its objects
// are those a plain app of the same name declares (manifest). The
// kustomization lists a base folder of plain files and adds a label and an
// annotation to every object.
func mixedApp(appDir, app, ns string, n int, chart bool) ([]*unstructured.Unstructured, error) {
	if chart {
		if err := writeChart(appDir, app, n); err != nil {
			return nil, err
		}
	} else if err := writeKustomization(appDir, app, ns, n); err != nil {
		return nil, err
	}
	ms, err := render.Manifests(context.Background(), render.Options{Dir: appDir, Namespace: ns})
	if err != nil {
		return nil, err
	}
	if len(ms) != n {
		return nil, fmt.Errorf("rendered %d objects, want %d", len(ms), n)
	}
	objs := make([]*unstructured.Unstructured, len(ms))
	for i, m := range ms {
		objs[i] = m.Object
	}
	return objs, nil
}

// counts are how many objects of each of kinds an app of n objects has.
func counts(n int) []int {
	c := make([]int, len(kinds))
	for j := 0; j < n; j++ {
		c[j%len(kinds)]++
	}
	return c
}

// chartTemplates are the chart's templates: manifest's objects, with the
// names, labels and values a plain app's files hold.
var chartTemplates = map[string]string{
	"templates/_helpers.tpl": `{{- define "bench.name" -}}
{{ .root.Values.app }}-{{ .short }}-{{ .i }}
{{- end }}
{{- define "bench.labels" -}}
app: {{ include "bench.name" . }}
app.kubernetes.io/instance: {{ .root.Values.app }}
{{- end }}
{{- define "bench.meta" -}}
name: {{ include "bench.name" . }}
namespace: {{ .root.Release.Namespace }}
labels:
  {{- include "bench.labels" . | nindent 2 }}
{{- end }}
`,
	"templates/deployment.yaml": `{{- range $i := until (int .Values.counts.deployment) }}
{{- $c := dict "root" $ "short" "web" "i" $i }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  {{- include "bench.meta" $c | nindent 2 }}
spec:
  replicas: {{ $.Values.replicas }}
  selector:
    matchLabels:
      app: {{ include "bench.name" $c }}
  template:
    metadata:
      labels:
        app: {{ include "bench.name" $c }}
    spec:
      containers:
        - name: app
          image: {{ printf "%s/%s:%s" $.Values.image.registry $.Values.app $.Values.image.tag | quote }}
          ports:
            - containerPort: {{ $.Values.port }}
          env:
            {{- range $k, $v := $.Values.env }}
            - name: {{ $k }}
              value: {{ $v | quote }}
            {{- end }}
          resources:
            {{- toYaml $.Values.resources | nindent 12 }}
{{- end }}
`,
	"templates/configmap.yaml": `{{- range $i := until (int .Values.counts.configmap) }}
{{- $c := dict "root" $ "short" "config" "i" $i }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  {{- include "bench.meta" $c | nindent 2 }}
data:
  FEATURES: {{ join "," $.Values.features | quote }}
  INDEX: {{ $i | quote }}
  LOG_LEVEL: {{ $.Values.env.LOG_LEVEL | quote }}
{{- end }}
`,
	"templates/service.yaml": `{{- range $i := until (int .Values.counts.service) }}
{{- $c := dict "root" $ "short" "svc" "i" $i }}
---
apiVersion: v1
kind: Service
metadata:
  {{- include "bench.meta" $c | nindent 2 }}
spec:
  clusterIP: None
  selector:
    app: {{ include "bench.name" (dict "root" $ "short" "svc" "i" $i) }}
  ports:
    - name: http
      port: 80
      targetPort: {{ $.Values.port }}
{{- end }}
`,
	"templates/route.yaml": `{{- range $i := until (int .Values.counts.route) }}
{{- $c := dict "root" $ "short" "route" "i" $i }}
---
apiVersion: example.com/v1
kind: Route
metadata:
  {{- include "bench.meta" $c | nindent 2 }}
spec:
  host: {{ include "bench.name" $c }}.example.com
  timeout: 30s
  backends:
    {{- range $b := $.Values.backends }}
    - name: {{ include "bench.name" $c }}-{{ $b.suffix }}
      port: {{ $.Values.port }}
      weight: {{ $b.weight }}
    {{- end }}
{{- end }}
`,
}

// writeChart writes app's chart of n objects into dir.
func writeChart(dir, app string, n int) error {
	c := counts(n)
	values := fmt.Sprintf(`app: %s
replicas: 2
port: 8080
image: {registry: registry.example.com, tag: 1.25.0}
env: {LOG_LEVEL: info}
resources: {requests: {cpu: "0.1", memory: 64Mi}}
features: [search, checkout]
backends: [{suffix: v1, weight: 90}, {suffix: v2, weight: 10}]
counts: {deployment: %d, configmap: %d, service: %d, route: %d}
`, app, c[0], c[1], c[2], c[3])
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: " + app + "\nversion: 0.1.0\n",
		"values.yaml": values,
	}
	for name, text := range chartTemplates {
		files[name] = text
	}
	return writeFiles(dir, files)
}

// writeKustomization writes app's kustomization of n objects into dir:
// the plain files under base/, and a kustomization.yaml naming them.
func writeKustomization(dir, app, ns string, n int) error {
	files := map[string]string{}
	var resources []string
	for j := 0; j < n; j++ {
		kind := kinds[j%len(kinds)]
		obj := manifest(kind, app, ns, j/len(kinds))
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		name := "base/" + strings.ToLower(kind) + "-" + obj["metadata"].(map[string]any)["name"].(string) + ".yaml"
		files[name] = string(data)
		resources = append(resources, name)
	}
	files["kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"labels:\n  - pairs: {app.kubernetes.io/part-of: " + app + "}\n" +
		"commonAnnotations: {bench.driftscan.dev/source: kustomize}\n" +
		"resources:\n  - " + strings.Join(resources, "\n  - ") + "\n"
	return writeFiles(dir, files)
}

// writeFiles writes files (by slash path) under dir.
func writeFiles(dir string, files map[string]string) error {
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
