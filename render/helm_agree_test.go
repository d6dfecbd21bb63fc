package render

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/google/go-cmp/cmp"
	sigsyaml "sigs.k8s.io/yaml"
)

// agreeChart is a chart with what real charts do beyond one template:
// subcharts switched by conditions and tags, an alias, values imported from
// a subchart, globals, CRDs in a subchart, hooks and tests, NOTES.txt at
// both levels, several documents and empty ones in a file, kinds that the
// install order moves, lookup (empty without a cluster) and the release's
// and chart's built-in objects.
var agreeChart = map[string]string{
	"Chart.yaml": `apiVersion: v2
name: shop
version: 1.4.0
appVersion: "2.1"
kubeVersion: ">=1.30.0-0"
dependencies:
  - name: cache
    version: 0.1.0
    condition: cache.enabled
  - name: cache
    alias: sessions
    version: 0.1.0
    condition: sessions.enabled
  - name: metrics
    version: 0.2.0
    tags: [observability]
    import-values:
      - child: exported
        parent: fromMetrics
`,
	"values.yaml": `replicas: 2
global:
  team: payments
cache:
  enabled: true
sessions:
  enabled: false
tags:
  observability: true
fromMetrics:
  port: 1
`,
	"templates/_helpers.tpl": `{{- define "shop.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}
`,
	"templates/all.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {{- include "shop.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {{- include "shop.labels" . | nindent 6 }}
  template:
    metadata:
      labels: {{- include "shop.labels" . | nindent 8 }}
    spec:
      serviceAccountName: {{ .Release.Name }}
      containers:
        - name: app
          image: "shop:{{ .Chart.AppVersion }}"
          ports:
            - containerPort: {{ .Values.fromMetrics.port }}
---
# a document of comments only
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}
---
{{- if .Values.never }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: never
{{- end }}
`,
	"templates/ns.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: {{ .Release.Namespace }}-jobs
`,
	"templates/info.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-info
  annotations:
    team: {{ .Values.global.team }}
data:
  install: {{ .Release.IsInstall | quote }}
  upgrade: {{ .Release.IsUpgrade | quote }}
  revision: {{ .Release.Revision | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}
  existing: {{ lookup "v1" "Secret" .Release.Namespace "db" | len | quote }}
  files: {{ .Files.Get "files/motd.txt" | trim | quote }}
`,
	"templates/NOTES.txt":           "Thanks for installing {{ .Release.Name }}.\n",
	"templates/hooks/migrate.yaml":  "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: shop-migrate}]\n",
	"templates/tests/ping.yaml":     "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ping\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: p, image: busybox}]\n",
	"templates/empty.yaml":          "{{/* nothing here */}}\n",
	"files/motd.txt":                "hello from files\n",
	"charts/cache/Chart.yaml":       "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
	"charts/cache/values.yaml":      "size: 1Gi\n",
	"charts/cache/crds/caches.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: caches.example.com\nspec:\n  group: example.com\n  names: {kind: Cache, plural: caches}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema: {type: object}\n",
	"charts/cache/templates/sts.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  labels:
    team: {{ .Values.global.team }}
spec:
  serviceName: {{ .Release.Name }}-{{ .Chart.Name }}
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers: [{name: c, image: redis}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: {{ .Values.size }}}}
`,
	"charts/cache/templates/NOTES.txt": "the subchart's notes\n",
	"charts/metrics/Chart.yaml":        "apiVersion: v2\nname: metrics\nversion: 0.2.0\n",
	"charts/metrics/values.yaml":       "exported:\n  port: 9090\n",
	"charts/metrics/templates/svc.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-metrics
spec:
  ports: [{port: {{ .Values.exported.port }}}]
`,
}

// TestHelmRenderAgreesWithHelmTemplate renders charts in process and with
// the real helm binary (`helm template --include-crds --no-hooks`: the
// render leaves hooks out, as a sync does not apply them; built by `make
// testbin`), and compares every object, its file and its order; a chart
// that helm refuses is refused here too.
func TestHelmRenderAgreesWithHelmTemplate(t *testing.T) {
	assets, err := reconcilers.Assets("helm")
	if err != nil {
		t.Fatalf("the real helm binary: %v", err)
	}
	helm := filepath.Join(assets, "helm")
	with := func(files, changes map[string]string) map[string]string {
		out := maps.Clone(files)
		maps.Copy(out, changes)
		return out
	}
	tests := []struct {
		name  string
		chart map[string]string // nil: fixtures/render/helm/web
		opts  Options
		args  []string
		// fails: helm refuses the chart, and so must the render.
		fails bool
	}{{
		name: "values files, set values, a kube version and API versions",
		opts: Options{
			Namespace:   "shop",
			Helm:        &config.HelmSource{ValuesFiles: []string{"values-prod.yaml"}, Set: map[string]string{"image.tag": "1.26.1", "env": "dev,eu"}},
			KubeVersion: "v1.37.2",
			APIVersions: []string{"example.com/v1"},
		},
		args: []string{"web", "-n", "shop", "-f", "values-prod.yaml", "--set", "env=dev\\,eu", "--set", "image.tag=1.26.1", "--kube-version", "v1.37.2", "--api-versions", "example.com/v1"},
	}, {
		// Argo CD's helm.values and valuesObject, and a Flux HelmRelease's
		// values, reach Helm as a values file: inline values must render
		// as `-f` of the same document does (lists, strings that --set
		// would retype, big numbers, nulls).
		name: "inline values as a values file",
		chart: with(agreeChart, map[string]string{
			"inline.yaml":         inlineDoc,
			"templates/more.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inline\ndata:\n  hosts: {{ .Values.hosts | toJson | quote }}\n  flag: {{ .Values.flag | quote }}\n  pattern: {{ .Values.pattern | quote }}\n  big: {{ .Values.big | quote }}\n  gone: {{ .Values.replicas | quote }}\n  tolerations: {{ .Values.tolerations | toJson | quote }}\n",
		}),
		opts: Options{Namespace: "pay", KubeVersion: "v1.36.0", Helm: &config.HelmSource{ReleaseName: "checkout", Values: inlineValuesOf(inlineDoc), Set: map[string]string{"flag": "on"}}},
		args: []string{"checkout", "-n", "pay", "--kube-version", "v1.36.0", "-f", "inline.yaml", "--set", "flag=on"},
	}, {
		// Argo CD's helm.skipCrds, helm.namespace, helm.kubeVersion and
		// helm.apiVersions: the source's capabilities replace the
		// cluster's.
		name:  "a source's own release namespace, capabilities and skipped CRDs",
		chart: agreeChart,
		opts: Options{Namespace: "pay", KubeVersion: "v1.36.0", APIVersions: []string{"other.example.com/v1"},
			Helm: &config.HelmSource{ReleaseName: "checkout", SkipCRDs: true, Namespace: "payments", KubeVersion: "v1.35.1", APIVersions: []string{"example.com/v1"}}},
		args: []string{"checkout", "-n", "payments", "--kube-version", "v1.35.1", "--api-versions", "example.com/v1", "--skip-crds"},
	}, {
		// Argo CD's helm.fileParameters: --set-file, after --set.
		name: "a value set from a file",
		chart: with(agreeChart, map[string]string{
			"files/dash.json":        "{\"title\": \"shop, \\\"prod\\\"\"}\n",
			"templates/setfile.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dash\ndata:\n  dash.json: {{ .Values.dashboard | quote }}\n",
		}),
		opts: Options{Namespace: "pay", KubeVersion: "v1.36.0", Helm: &config.HelmSource{ReleaseName: "checkout", Set: map[string]string{"dashboard": "overwritten"}, SetFiles: map[string]string{"dashboard": "files/dash.json"}}},
		args: []string{"checkout", "-n", "pay", "--kube-version", "v1.36.0", "--set", "dashboard=overwritten", "--set-file", "dashboard=files/dash.json"},
	}, {
		name:  "subcharts, conditions, tags, aliases, imported values, hooks and notes",
		chart: agreeChart,
		opts:  Options{Namespace: "pay", Helm: &config.HelmSource{ReleaseName: "checkout"}, KubeVersion: "v1.36.0", APIVersions: []string{"example.com/v1"}},
		args:  []string{"checkout", "-n", "pay", "--kube-version", "v1.36.0", "--api-versions", "example.com/v1"},
	}, {
		name:  "a subchart switched on and another off by values",
		chart: agreeChart,
		opts:  Options{Namespace: "pay", Helm: &config.HelmSource{ReleaseName: "checkout", Set: map[string]string{"cache.enabled": "false", "sessions.enabled": "true", "tags.observability": "false"}}, KubeVersion: "v1.36.0"},
		args:  []string{"checkout", "-n", "pay", "--kube-version", "v1.36.0", "--set", "cache.enabled=false", "--set", "sessions.enabled=true", "--set", "tags.observability=false"},
	}, {
		name:  "values that break the chart's schema",
		chart: with(agreeChart, map[string]string{"values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer", "maximum": 5}}}`}),
		opts:  Options{Namespace: "pay", Helm: &config.HelmSource{ReleaseName: "checkout", Set: map[string]string{"replicas": "9"}}, KubeVersion: "v1.36.0"},
		args:  []string{"checkout", "-n", "pay", "--kube-version", "v1.36.0", "--set", "replicas=9"},
		fails: true,
	}, {
		name:  "a Kubernetes version outside the chart's kubeVersion",
		chart: agreeChart,
		opts:  Options{Namespace: "pay", Helm: &config.HelmSource{ReleaseName: "checkout"}, KubeVersion: "v1.29.4"},
		args:  []string{"checkout", "-n", "pay", "--kube-version", "v1.29.4"},
		fails: true,
	}, {
		name:  "a release name Kubernetes cannot hold",
		chart: agreeChart,
		opts:  Options{Namespace: "pay", Helm: &config.HelmSource{ReleaseName: "Checkout_2"}, KubeVersion: "v1.36.0"},
		args:  []string{"Checkout_2", "-n", "pay", "--kube-version", "v1.36.0"},
		fails: true,
	}, {
		name:  "a library chart",
		chart: with(agreeChart, map[string]string{"Chart.yaml": "apiVersion: v2\nname: shop\nversion: 1.0.0\ntype: library\n"}),
		opts:  Options{Namespace: "pay", KubeVersion: "v1.36.0"},
		args:  []string{"shop", "-n", "pay", "--kube-version", "v1.36.0"},
		fails: true,
	}, {
		name:  "a template that fails",
		chart: with(agreeChart, map[string]string{"templates/fail.yaml": `{{ required "image.repository is required" .Values.image }}`}),
		opts:  Options{Namespace: "pay", KubeVersion: "v1.36.0"},
		args:  []string{"shop", "-n", "pay", "--kube-version", "v1.36.0"},
		fails: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := renderFixture(t, "helm/web")
			if tt.chart != nil {
				dir = filepath.Join(t.TempDir(), "shop")
				writeTree(t, dir, tt.chart)
			}
			opts := tt.opts
			opts.Dir = dir
			got, renderErr := Manifests(context.Background(), opts)

			args := append([]string{"template", "--include-crds", "--no-hooks", tt.args[0], "."}, tt.args[1:]...)
			if slices.Contains(args, "--skip-crds") {
				// As Argo CD runs helm for skipCrds: --include-crds
				// would print them all the same.
				args = slices.DeleteFunc(args, func(a string) bool { return a == "--include-crds" })
			}
			out, stderr, helmErr := runHelm(t, helm, dir, args...)
			if tt.fails {
				if helmErr == nil {
					t.Fatalf("helm template rendered a chart this case expects it to refuse:\n%s", out)
				}
				if renderErr == nil {
					t.Fatalf("the render took a chart helm refuses (%s): %v", strings.TrimSpace(stderr), renderSummary(got))
				}
				return
			}
			if helmErr != nil {
				t.Fatalf("helm template: %v\n%s", helmErr, stderr)
			}
			if renderErr != nil {
				t.Fatalf("render: %v", renderErr)
			}
			sameAsHelm(t, out, got, 3, nil)
		})
	}
}

// runHelm runs the real helm in dir with args, bounded as every child of
// the tests is (a chart that sent it into a loop would not hold the
// machine), with no repositories, registries or user folders of its own.
func runHelm(t *testing.T, helm, dir string, args ...string) (out []byte, stderr string, err error) {
	t.Helper()
	args = append(args, "--repository-config", "/dev/null", "--registry-config", "/dev/null")
	cmd := bounded.Command(bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}, helm, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err = cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code == 124 || code == 137 {
		t.Fatalf("helm %s did not finish within its bound (exit %d): %s", args[0], code, errb.String())
	}
	return out, errb.String(), err
}

// sameAsHelm checks the render got is helm template's output: every
// object, its file (helm's files moved as relocate moves them) and its
// order, and at least min objects.
func sameAsHelm(t *testing.T, helmOut []byte, got []Manifest, min int, moved map[string]string) {
	t.Helper()
	want, _, err := helmManifests(nil, string(helmOut))
	if err != nil {
		t.Fatalf("reading helm's output: %v", err)
	}
	relocate(want, moved)
	if diff := cmp.Diff(renderSummary(want), renderSummary(got)); diff != "" {
		t.Errorf("objects and their order (-helm template +render):\n%s", diff)
	}
	if len(want) == len(got) {
		for i := range want {
			if diff := cmp.Diff(want[i].Object.Object, got[i].Object.Object); diff != "" {
				t.Errorf("%s (-helm template +render):\n%s", renderSummary(want[i : i+1])[0].ID, diff)
			}
		}
	}
	if len(got) < min {
		t.Errorf("only %d objects rendered: the case proves little", len(got))
	}
}

// inlineDoc is a values document with what --set cannot carry.
const inlineDoc = `hosts: [a.example.com, b.example.com]
flag: "False"
pattern: '^\d+$'
big: 12345678901
replicas: null
tolerations:
- {key: dedicated, operator: Equal, value: shop, effect: NoSchedule}
`

// inlineValuesOf reads a values document as discovery reads an
// Application's valuesObject or a HelmRelease's values: JSON numbers kept
// as their text.
func inlineValuesOf(doc string) map[string]any {
	js, err := sigsyaml.YAMLToJSON([]byte(doc))
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		panic(err)
	}
	return m
}
