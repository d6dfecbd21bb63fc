package e2e

// The apps the tests deploy, one per kind of source, as files of a Git
// repository: a plain folder, a Kustomize overlay over a base, a Helm chart.
// Each holds a ConfigMap with LOG_LEVEL: info (what the 3 AM drill edits), a
// Deployment and a Service, written the way people write them.

import "maps"

const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  LOG_LEVEL: info
  GREETING: hello
`

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
        resources:
          requests: {cpu: 100m, memory: 64Mi}
`

const service = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 80
`

// plainApp is a plain folder of manifests at web/.
var plainApp = map[string]string{
	"web/config.yaml":  configMap,
	"web/deploy.yaml":  deployment,
	"web/service.yaml": service,
}

// plainAppWith is plainApp with more files (or other contents).
func plainAppWith(files map[string]string) map[string]string {
	out := maps.Clone(plainApp)
	maps.Copy(out, files)
	return out
}

// kustomizeApp is an overlay at overlays/prod/ over base/.
var kustomizeApp = map[string]string{
	"base/config.yaml":  configMap,
	"base/deploy.yaml":  deployment,
	"base/service.yaml": service,
	"base/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [config.yaml, deploy.yaml, service.yaml]
`,
	"overlays/prod/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../base]
labels:
- pairs: {tier: frontend}
patches:
- target: {kind: Deployment, name: web}
  patch: |
    - op: replace
      path: /spec/replicas
      value: 3
`,
}

// helmApp is a chart at chart/ whose object names come from the release.
var helmApp = map[string]string{
	"chart/Chart.yaml": `apiVersion: v2
name: web
version: 0.1.0
`,
	"chart/values.yaml": `logLevel: info
replicas: 2
image: nginx:1.27
`,
	"chart/templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    app.kubernetes.io/name: web
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
data:
  LOG_LEVEL: {{ .Values.logLevel }}
  GREETING: hello
`,
	"chart/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    app.kubernetes.io/name: web
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app.kubernetes.io/name: web}
  template:
    metadata:
      labels: {app.kubernetes.io/name: web}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
        ports:
        - containerPort: 80
`,
	"chart/templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app.kubernetes.io/name: web}
  ports:
  - port: 80
    targetPort: 80
`,
}

// source is one of the apps above: its files and the folder to deploy.
type source struct {
	Name  string
	Files map[string]string
	Path  string
}

var sources = []source{
	{"plain", plainApp, "web"},
	{"kustomize", kustomizeApp, "overlays/prod"},
	{"helm", helmApp, "chart"},
}
