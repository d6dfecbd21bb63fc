package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/chartrepo"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// repoChart is the chart the tests publish, at version.
func repoChart(version string) chartrepo.Chart {
	return chartrepo.Shop(version, "replicas: 1\ngreeting: hello\nimage: nginx:1.27\n")
}

// createArgoManifest creates an Application from its manifest, as a person
// does with kubectl, and deletes it when the test ends.
func createArgoManifest(t *testing.T, manifest string) {
	t.Helper()
	obj := cluster.Object(t, manifest)
	if _, err := env.Dynamic.Resource(reconcilers.Application).Namespace(argo.Namespace).Create(t.Context(), obj, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatalf("create Application %s: %v", obj.GetName(), err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(reconcilers.Application).Namespace(argo.Namespace).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
	})
}

// createGitApp creates an Application named name that syncs path of the
// Git repository repoURL at main into ns, automatically and with pruning;
// source is more of spec.source (YAML, indented as at its top).
func createGitApp(t *testing.T, name, ns, repoURL, path, source string) {
	t.Helper()
	if source != "" {
		source = "    " + strings.ReplaceAll(strings.TrimRight(source, "\n"), "\n", "\n    ") + "\n"
	}
	createArgoManifest(t, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  source:
    repoURL: %s
    targetRevision: main
    path: %s
%s  syncPolicy:
    automated: {prune: true}
`, name, argo.Namespace, ns, repoURL, path, source))
}

// createChartRelease creates a HelmRelease named name in ns that installs
// chart from the source sourceKind/name at version, with values (YAML flow).
func createChartRelease(t *testing.T, ns, name, sourceKind, chart, version, values string) {
	t.Helper()
	createHelmReleaseOf(t, helmRelease{Namespace: ns, Name: name,
		Chart: []string{"chart: " + chart, fmt.Sprintf("version: %q", version), "sourceRef: {kind: " + sourceKind + ", name: " + name + "}"},
		Spec:  []string{"values: " + values}})
}

// The pattern most third-party components are installed with: the real
// Argo CD syncs a public chart from a Helm repository (served on loopback,
// packaged and indexed by the real helm) with its values kept in Git (a
// multi-source Application and a `$values` ref). driftscan fetches the same
// chart and values, and the sync scans clean; a person's hotfix is drift,
// named as theirs.
func TestArgoCDChartFromAHelmRepositoryScansClean(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	charts := chartrepo.Serve(t, chartrepo.Options{}, repoChart("1.0.0"), repoChart("1.1.0"))
	values := gitServer.NewRepo(t, map[string]string{"envs/prod/shop.yaml": "greeting: prod\nreplicas: 2\n"})
	const name = "chart-from-repo"
	createArgoManifest(t, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  sources:
  - repoURL: %s
    chart: shop
    targetRevision: 1.0.0
    helm:
      valueFiles: [$values/envs/prod/shop.yaml]
      parameters: [{name: image, value: "nginx:1.27.1"}]
  - {repoURL: %s, targetRevision: main, ref: values}
  syncPolicy:
    automated: {prune: true}
`, name, argo.Namespace, ns, charts.URL, values.URL))
	waitArgoSynced(t, name, "")
	cm := env.Get(t, cluster.ConfigMap, ns, name+"-config")
	if g, _, _ := unstructured.NestedString(cm.Object, "data", "greeting"); g != "prod" {
		t.Fatalf("Argo CD synced greeting %q, want prod from the values in Git", g)
	}

	r := scan(t, "--from", "argocd", "--app", name)
	checkClean(t, r, 2)
	if len(r.Apps) == 1 {
		if s := r.Apps[0].Source; s.Chart != "shop" || s.Version != "1.0.0" {
			t.Errorf("the report's source %+v, want chart shop at 1.0.0", s)
		}
	}

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, name+"-config", types.MergePatchType, `{"data":{"greeting":"hotfix"}}`)
	r = scan(t, "--from", "argocd", "--app", name)
	got := activeFindings(r)
	if len(got) != 1 || got[0].Object != "ConfigMap/"+name+"-config" || got[0].Path != ".data.greeting" || got[0].Type != report.TypeChanged ||
		got[0].Class != report.ClassHuman || got[0].Manager != "kubectl-edit" || got[0].Git != "prod" || got[0].Live != "hotfix" {
		t.Errorf("after a person's edit, want exactly greeting prod -> hotfix by kubectl-edit, a person; got:\n%s", describe(got))
	}
}

// The same for Flux: helm-controller installs a chart that
// source-controller fetched from a HelmRepository, and it scans clean.
func TestFluxHelmRepositoryChartScansClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	charts := chartrepo.Serve(t, chartrepo.Options{}, repoChart("1.0.0"), repoChart("1.1.0"))
	const name = "chart-from-helmrepo"
	createFluxObject(t, reconcilers.HelmRepository, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: %s, namespace: %s}
spec:
  interval: 1m
  url: %s
`, name, ns, charts.URL))
	createChartRelease(t, ns, name, "HelmRepository", "shop", "~1.0.0", "{greeting: flux, replicas: 2}")
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "1.0.0")
	r := scan(t, "--from", "flux", "--app", name)
	checkClean(t, r, 2)
	if len(r.Apps) == 1 {
		if s := r.Apps[0].Source; s.Chart != "shop" || s.Version != "1.0.0" {
			t.Errorf("the report's source %+v, want chart shop at 1.0.0", s)
		}
	}
}

// A single-source chart with a constraint: Argo CD resolves it to the
// newest version it allows and records that version in status.history;
// driftscan scans that version, and clean.
func TestArgoCDChartConstraintScansTheVersionArgoCDSynced(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	charts := chartrepo.Serve(t, chartrepo.Options{}, repoChart("1.0.0"), repoChart("1.1.0"), repoChart("2.0.0"))
	const name = "chart-constraint"
	createArgoManifest(t, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  source:
    repoURL: %s
    chart: shop
    targetRevision: 1.*
    helm:
      valuesObject: {greeting: inline}
  syncPolicy:
    automated: {prune: true}
`, name, argo.Namespace, ns, charts.URL))
	waitArgoSynced(t, name, "")
	app := getArgoApp(t, name)
	history, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
	if rev, _, _ := unstructured.NestedString(history[len(history)-1].(map[string]any), "revision"); rev != "1.1.0" {
		t.Fatalf("Argo CD recorded revision %q in status.history, want the chart version 1.1.0", rev)
	}
	r := scan(t, "--from", "argocd", "--app", name)
	checkClean(t, r, 2)
	if len(r.Apps) == 1 {
		if s := r.Apps[0].Source; s.Chart != "shop" || s.Version != "1.1.0" || r.Apps[0].Pending != nil {
			t.Errorf("the report's source %+v, pending %+v: want chart shop at 1.1.0, nothing pending", s, r.Apps[0].Pending)
		}
	}
}

// A chart `helm push`ed to a real OCI registry (distribution), installed
// by helm-controller from an OCI HelmRepository (plain HTTP: insecure), scans
// clean, at the version helm-controller released.
func TestFluxOCIHelmRepositoryChartScansClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	reg := reconcilers.StartRegistry(t, reconcilers.RegistryOptions{})
	dir := t.TempDir()
	for _, v := range []string{"1.0.0", "1.1.0"} {
		chartrepo.RunHelm(t, dir, "push", chartrepo.Package(t, dir, repoChart(v)), "oci://"+reg.Host+"/charts", "--plain-http")
	}
	// The older way, an OCI HelmRepository, and the way Flux now
	// recommends, a chartRef to an OCIRepository naming the chart.
	const name, ref = "chart-from-oci", "chart-from-ociref"
	createFluxObject(t, reconcilers.HelmRepository, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: %s, namespace: %s}
spec:
  type: oci
  insecure: true
  interval: 1m
  url: oci://%s/charts
`, name, ns, reg.Host))
	createChartRelease(t, ns, name, "HelmRepository", "shop", "1.x", "{greeting: oci}")
	createFluxObject(t, reconcilers.OCIRepository, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: %s, namespace: %s}
spec:
  interval: 1m
  insecure: true
  url: oci://%s/charts/shop
  ref: {semver: "1.x"}
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
`, ref, ns, reg.Host))
	createFluxObject(t, reconcilers.HelmRelease, fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  chartRef: {kind: OCIRepository, name: %s}
  values: {greeting: ociref, image: "nginx:1.27.2"}
  install: {disableWait: true}
  upgrade: {disableWait: true}
`, ref, ns, fluxInterval, ref))
	for _, app := range []string{name, ref} {
		waitFluxReady(t, reconcilers.HelmRelease, ns, app, "1.1.0")
		r := scan(t, "--from", "flux", "--app", app)
		checkClean(t, r, 2)
		if len(r.Apps) == 1 {
			if s := r.Apps[0].Source; s.Chart != "shop" || s.Version != "1.1.0" || r.Apps[0].Pending != nil {
				t.Errorf("%s: the report's source %+v, pending %+v: want chart shop at 1.1.0, nothing pending", app, s, r.Apps[0].Pending)
			}
		}
	}
}

// argocd-repo-server v3.5 expands a glob in an Application's valueFiles
// (`**` for any depth) to the files it matches, in order, but for a file
// the list also names outright, which keeps its place, and reads each file
// once, at its first place. The chart syncs with the values so merged, and
// the scan, resolving them the same way, finds it clean: read as names, the
// glob was a missing file and the app could not be scanned.
func TestArgoCDGlobValueFilesScanClean(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	files := maps.Clone(helmApp)
	files["chart/envs/a.yaml"] = "logLevel: warn\n"
	files["chart/envs/b.yaml"] = "logLevel: error\n"
	files["chart/envs/deep/c.yaml"] = "replicas: 4\n"
	repo := gitServer.NewRepo(t, files)
	const name = "glob-values"
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "chart", Automated: "{prune: true}",
		Source: "    helm:\n      valueFiles: [envs/b.yaml, \"envs/**/*.yaml\", envs/b.yaml]\n"})
	waitArgoSynced(t, name, "")
	// b named first keeps its place, before the glob's a and deep/c; its
	// repeat counts no more.
	cm := env.Get(t, cluster.ConfigMap, ns, name+"-config")
	if l, _, _ := unstructured.NestedString(cm.Object, "data", "LOG_LEVEL"); l != "warn" {
		t.Fatalf("Argo CD synced LOG_LEVEL %q, want warn (envs/a.yaml merged after the envs/b.yaml named first)", l)
	}
	deploy := env.Get(t, cluster.Deployment, ns, name)
	if n, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); n != 4 {
		t.Fatalf("Argo CD synced %d replicas, want 4 from envs/deep/c.yaml", n)
	}

	r := scan(t, "--from", "argocd", "--app", name)
	checkClean(t, r, 3)
}

// argocd-repo-server takes a valueFiles URL only of a scheme argocd-cm's
// helm.valuesFileSchemes allows (https and http by default): a helm-secrets
// secrets:// file, with no such setting, is refused and nothing is synced.
// The scan says Argo CD refuses it too, where it said only that driftscan
// fetches no values file from a URL.
func TestArgoCDRefusesAValuesFileOfASchemeNotAllowed(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, helmApp)
	const name = "secrets-scheme"
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "chart", Automated: "{prune: true}",
		Source: "    helm:\n      valueFiles: [values.yaml, \"secrets://secrets.yaml\"]\n"})
	refused := waitArgoCondition(t, argo.Namespace, name, "the URL scheme 'secrets' is not allowed")
	if refused == "" {
		t.Fatalf("Argo CD did not refuse %s, whose values file is a secrets:// URL", name)
	}
	r := scanExiting(t, 2, "--from", "argocd", "--app", name)
	if errs := appErrors(r); len(errs) != 1 || !strings.Contains(errs[0], `valueFiles secrets://secrets.yaml: Argo CD refuses it too, the URL scheme "secrets" is not in argocd-cm's helm.valuesFileSchemes (https, http)`) {
		t.Errorf("scan of %s: app errors %q, want one: Argo CD refuses the scheme too (Argo CD: %s)", name, errs, refused)
	}
}

// Argo CD passes a Helm parameter with forceString as --set-string: "true"
// and "8080" stay text, where --set types them. The scan renders them the
// same and finds the app clean; it left such a parameter out, with an
// error, and reported what the chart then rendered as drift.
func TestArgoCDForceStringParametersScanClean(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		"chart/Chart.yaml":  "apiVersion: v2\nname: typed\nversion: 0.1.0\n",
		"chart/values.yaml": "flag: false\nport: 80\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: typed}\n" +
			"data: {flag: {{ .Values.flag | toJson | quote }}, port: {{ .Values.port | toJson | quote }}, typed: {{ .Values.typed | toJson | quote }}}\n",
	})
	const name = "force-string"
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "chart", Automated: "{prune: true}",
		Source: "    helm:\n      parameters:\n      - {name: flag, value: \"true\", forceString: true}\n" +
			"      - {name: port, value: \"8080\", forceString: true}\n      - {name: typed, value: \"true\"}\n"})
	waitArgoSynced(t, name, "")
	cm := env.Get(t, cluster.ConfigMap, ns, "typed")
	if d, _, _ := unstructured.NestedStringMap(cm.Object, "data"); d["flag"] != `"true"` || d["port"] != `"8080"` || d["typed"] != "true" {
		t.Fatalf("Argo CD synced %v, want flag and port as strings and typed as a bool", d)
	}
	r := scan(t, "--from", "argocd", "--app", name)
	checkClean(t, r, 1)
}
