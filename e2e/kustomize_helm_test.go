package e2e

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/chartrepo"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// A kustomization that inflates charts, as repositories do with Argo CD's
// `kustomize.buildOptions: --enable-helm`: one chart from a chart
// repository at a version, one vendored under charts/, both with
// valuesInline, and a name prefix and labels over their output. The real
// Argo CD runs the real kustomize, which runs the real helm (and reads a
// file outside the kustomization's folder, as argocd-cm's
// --load-restrictor LoadRestrictionsNone lets it); driftscan runs
// kustomize's own generator with its in-process Helm, fetches the chart
// itself, and must see the sync clean. A person's edit of an object a chart
// made is theirs.
func TestArgoCDKustomizeHelmChartsScanClean(t *testing.T) {
	needArgo(t)
	// As many installs have it: charts, and files outside a
	// kustomization's folder. driftscan reads argocd-cm for both.
	if err := argo.Set(t.Context(), "kustomize.buildOptions", "--enable-helm --load-restrictor LoadRestrictionsNone"); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, nil)
	charts := chartrepo.Serve(t, chartrepo.Options{}, repoChart("1.0.0"), repoChart("1.1.0"))
	repo := gitServer.NewRepo(t, map[string]string{
		"shared/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {from: outside}\n",
		"app/kustomization.yaml": fmt.Sprintf(`namePrefix: k-
resources: [../shared/extra.yaml]
labels:
  - pairs: {team: payments}
helmCharts:
  - name: shop
    repo: %s
    version: 1.1.0
    releaseName: web
    valuesInline:
      greeting: from-kustomize
      replicas: 2
  - name: local
    releaseName: loc
    valuesInline: {size: large}
`, charts.URL),
		"app/charts/local/Chart.yaml":  "apiVersion: v2\nname: local\nversion: 0.3.0\n",
		"app/charts/local/values.yaml": "size: small\n",
		"app/charts/local/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-size
  labels:
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
data:
  size: {{ .Values.size | quote }}
  kube: {{ .Capabilities.KubeVersion.Minor | quote }}
`,
	})
	const name = "kustomize-helm"
	createGitApp(t, name, ns, repo.URL, "app", "")
	waitArgoSynced(t, name, "")
	cm := env.Get(t, cluster.ConfigMap, ns, "k-web-config")
	if g, _, _ := unstructured.NestedString(cm.Object, "data", "greeting"); g != "from-kustomize" {
		t.Fatalf("Argo CD synced greeting %q, want the kustomization's valuesInline", g)
	}

	r := scan(t, "--from", "argocd", "--app", name)
	checkClean(t, r, 4)

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "k-loc-size", types.MergePatchType, `{"data":{"size":"huge"}}`)
	r = scan(t, "--from", "argocd", "--app", name)
	got := activeFindings(r)
	if len(got) != 1 || got[0].Object != "ConfigMap/k-loc-size" || got[0].Path != ".data.size" || got[0].Type != report.TypeChanged ||
		got[0].Class != report.ClassHuman || got[0].Manager != "kubectl-edit" || got[0].Git != "large" || got[0].Live != "huge" {
		t.Errorf("after a person's edit, want exactly size large -> huge by kubectl-edit, a person; got:\n%s", describe(got))
	}
}

// An Application's kustomize.kubeVersion and apiVersions are what Argo CD
// gives the kustomization's charts as .Capabilities, in place of the
// cluster's (as --helm-kube-version and --helm-api-versions, the version's
// build metadata dropped): a chart that picks its output by them is
// synced that way, and a scan that rendered with the cluster's would show
// drift Argo CD never makes.
func TestArgoCDKustomizeCapabilitiesAreTheApplications(t *testing.T) {
	needArgo(t)
	if err := argo.Set(t.Context(), "kustomize.buildOptions", "--enable-helm --load-restrictor LoadRestrictionsNone"); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		"app/kustomization.yaml":     "helmCharts:\n  - name: caps\n    releaseName: caps\n",
		"app/charts/caps/Chart.yaml": "apiVersion: v2\nname: caps\nversion: 0.1.0\n",
		// kustomize reads a chart's values.yaml whatever the entry says:
		// without one its build fails (seen with Argo CD's).
		"app/charts/caps/values.yaml": "{}\n",
		"app/charts/caps/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-caps
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  monitors: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" | quote }}
  {{- if semverCompare "<1.31-0" .Capabilities.KubeVersion.Version }}
  legacy: "true"
  {{- end }}
`,
	})
	const name = "kustomize-caps"
	createGitApp(t, name, ns, repo.URL, "app",
		"kustomize:\n  kubeVersion: v1.30.2+k3s1\n  apiVersions: [monitoring.coreos.com/v1/ServiceMonitor]")
	waitArgoSynced(t, name, "")
	cm := env.Get(t, cluster.ConfigMap, ns, "caps-caps")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if want := map[string]string{"kube": "v1.30.2", "monitors": "true", "legacy": "true"}; fmt.Sprint(data) != fmt.Sprint(want) {
		t.Fatalf("Argo CD synced %v, want the Application's capabilities %v", data, want)
	}
	checkClean(t, scan(t, "--from", "argocd", "--app", name), 1)
}
