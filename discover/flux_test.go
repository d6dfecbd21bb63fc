package discover

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/source"
)

// secretValues are the values of the Secrets the HelmRelease reads: none
// may appear in an error or a skip reason.
var secretValues = []string{"s3cr3t-token-do-not-leak", "s3cr3t-broken-do-not-leak", "s3cr3t-list-do-not-leak"}

// fluxObjects are Flux objects in namespace NS, with REPO their Git URL.
var fluxObjects = []string{`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: deploy}
spec: {interval: 1m, url: REPO, ref: {branch: main}}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: pinned}
spec: {interval: 1m, url: REPO, ref: {tag: v1.0.0}, ignore: "/docs/\n*.md\n"}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: ranged}
spec: {interval: 1m, url: REPO, ref: {semver: ">=1.0.0"}}
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: shop
  labels: {team: team-shop}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: deploy}
  path: ./apps/web-kustomize
  targetNamespace: shop
  prune: true
  decryption:
    provider: sops
    secretRef: {name: sops-age}
  postBuild:
    substitute: {region: eu, cluster: prod}
    substituteFrom:
    - {kind: ConfigMap, name: cluster-vars}
    - {kind: Secret, name: cluster-secrets}
    - {kind: ConfigMap, name: absent, optional: true}
    - {kind: ConfigMap, name: needed}
  ignore:
  - paths: [/spec/replicas, /spec/template/spec/containers/0/resources]
    target: {group: apps, version: v1, kind: Deployment, name: web}
  - paths: [/data]
    target: {kind: ConfigMap|Secret}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-vars}
data: {cluster: dev, zone: "b\nc"}
`, `
apiVersion: v1
kind: Secret
metadata: {name: cluster-secrets}
stringData: {dbpass: s3cr3t-subst-do-not-leak}
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: web}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: pinned}
  path: apps/web
  prune: false
  suspend: true
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: oci}
spec:
  interval: 5m
  sourceRef: {kind: OCIRepository, name: manifests}
  prune: true
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: lost}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: gone}
  prune: true
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: ranged}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: ranged}
  prune: true
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: remote}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: deploy}
  prune: true
  kubeConfig: {secretRef: {name: prod-kubeconfig}}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-values}
data:
  values.yaml: |
    replicas: 3
    db: {host: overridden, port: 6543}
`, `
apiVersion: v1
kind: Secret
metadata: {name: web-token}
stringData: {token: s3cr3t-token-do-not-leak}
`, `
apiVersion: v1
kind: Secret
metadata: {name: web-broken}
stringData:
  values.yaml: "s3cr3t-broken-do-not-leak: ["
`, `
apiVersion: v1
kind: Secret
metadata: {name: web-lists}
stringData:
  values.yaml: "hosts: [s3cr3t-list-do-not-leak]"
`, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  labels: {team: team-web}
spec:
  interval: 5m
  targetNamespace: shop
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: deploy}
      valuesFiles: [envs/prod/values.yaml]
      reconcileStrategy: Revision
  valuesFrom:
  - {kind: ConfigMap, name: web-values}
  - {kind: Secret, name: web-token, valuesKey: token, targetPath: token}
  - {kind: Secret, name: web-broken}
  - {kind: Secret, name: web-lists}
  - {kind: ConfigMap, name: absent, optional: true}
  - {kind: ConfigMap, name: missing}
  values:
    greeting: hi
    db: {host: db.prod}
  commonMetadata: {labels: {team: web}, annotations: {owner: sre}}
  postRenderers:
  - kustomize:
      patches:
      - target: {kind: Deployment, name: web}
        patch: '[{"op": "add", "path": "/metadata/annotations/x", "value": "y"}]'
      images: [{name: nginx, newTag: "1.27"}]
  driftDetection:
    mode: enabled
    ignore:
    - paths: [/spec/replicas]
      target: {kind: Deployment}
    - paths: [/data]
      target: {kind: ConfigMap, labelSelector: app=web}
    - paths: [/metadata/annotations]
    - paths: [/spec/replicas]
      target: {kind: Deployment, name: web-.*}
  upgrade: {crds: CreateReplace}
`, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ingress}
spec:
  interval: 5m
  chart:
    spec:
      chart: ingress-nginx
      version: 4.x
      valuesFiles: [values-production.yaml]
      sourceRef: {kind: HelmRepository, name: ingress-nginx}
  values:
    controller: {replicaCount: 2}
  install: {crds: Skip}
  upgrade: {crds: Skip}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: ingress-nginx}
spec:
  interval: 1h
  url: https://kubernetes.github.io/ingress-nginx
`, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo}
spec:
  interval: 5m
  chart:
    spec:
      chart: podinfo
      sourceRef: {kind: HelmRepository, name: podinfo-oci}
  install: {crds: create}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo-oci}
spec:
  type: oci
  insecure: true
  interval: 1h
  url: oci://registry.internal:5000/charts
`, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: oci-chart}
spec:
  interval: 5m
  chartRef: {kind: OCIRepository, name: podinfo}
  install: {serverSideApply: false}
  upgrade: {disableSchemaValidation: true}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: podinfo}
spec:
  interval: 1h
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  ref: {semver: ">=6.0.0"}
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: manifests}
spec:
  interval: 1m
  url: oci://registry.internal:5000/deploy/manifests
  insecure: true
  ref: {semver: ">=1.0.0", semverFilter: ".*-rc"}
  layerSelector: {mediaType: application/vnd.cncf.flux.content.v1.tar+gzip, operation: copy}
  ignore: "docs/\n"
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: unpulled}
spec:
  interval: 1m
  url: oci://registry.internal:5000/deploy/manifests
  ref: {semver: ">=1.0.0", semverFilter: ".*-rc"}
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: oci-unpulled}
spec:
  interval: 5m
  sourceRef: {kind: OCIRepository, name: unpulled}
  path: ./deploy
  prune: true
`, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: by-chart}
spec:
  interval: 5m
  chartRef: {kind: HelmChart, name: podinfo}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: podinfo}
spec:
  interval: 5m
  chart: podinfo
  version: 6.x
  sourceRef: {kind: HelmRepository, name: podinfo-oci}
  valuesFiles: [values-prod.yaml]
`, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: by-lost-chart}
spec:
  interval: 5m
  chartRef: {kind: HelmChart, name: gone}
`, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: by-bucket-chart}
spec:
  interval: 5m
  chartRef: {kind: HelmChart, name: in-bucket}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: in-bucket}
spec:
  interval: 5m
  chart: ./charts/web
  sourceRef: {kind: Bucket, name: artifacts}
`}

func TestFluxObjects(t *testing.T) {
	installCRDs(t)
	ns := env.Namespace(t, nil)
	repo, commit := gitRepo(t)
	for _, m := range fluxObjects {
		applyAll(t, "flux", ns, strings.ReplaceAll(m, "REPO", repo))
	}
	env.Patch(t, "source-controller", gitRepositoryGVK, ns, "deploy", types.MergePatchType,
		`{"status":{"artifact":{"revision":"main@sha1:`+commit+`","path":"gitrepository/deploy.tar.gz"}}}`, "status")
	// source-controller pulled v1.2.0 of the manifests; kustomize-controller
	// last applied v1.1.0.
	env.Patch(t, "source-controller", ociRepositoryGVK, ns, "manifests", types.MergePatchType,
		`{"status":{"artifact":{"revision":"v1.2.0@sha256:`+strings.Repeat("b", 64)+`","path":"ocirepository/manifests.tar.gz"}}}`, "status")
	env.Patch(t, "kustomize-controller", kustomizationGVK, ns, "oci", types.MergePatchType,
		`{"status":{"lastAppliedRevision":"v1.1.0@sha256:`+strings.Repeat("a", 64)+`"}}`, "status")
	// helm-controller released 1.2.0 of the OCIRepository's chart, its
	// version carrying the artifact's digest.
	env.Patch(t, "helm-controller", helmReleaseGVK, ns, "oci-chart", types.MergePatchType,
		`{"status":{"history":[{"chartName":"podinfo","chartVersion":"6.5.4+cdd538a0167e","name":"oci-chart","namespace":"NS","version":1,"status":"deployed"}]}}`, "status")
	// helm-controller released 4.11.3; the spec allows any 4.x. The chart
	// has valuesFiles: source-controller marked the version it built with
	// its HelmChart's generation.
	env.Patch(t, "helm-controller", helmReleaseGVK, ns, "ingress", types.MergePatchType,
		`{"status":{"history":[{"chartName":"ingress-nginx","chartVersion":"4.11.3+2","name":"ingress","namespace":"NS","version":2,"status":"deployed"}]}}`, "status")
	// The chart in Git, built with reconcileStrategy Revision and valuesFiles.
	env.Patch(t, "helm-controller", helmReleaseGVK, ns, "web", types.MergePatchType,
		`{"status":{"history":[{"chartName":"web","chartVersion":"0.1.0+62225de9b23f.4","name":"shop-web","namespace":"shop","version":1,"status":"deployed"}]}}`, "status")

	res := discover(t, options(FromFlux, ns))
	normalize(res.Apps, res.Ignore, ns)

	wantApps := []config.App{
		{
			// An OCI artifact (gitless GitOps): the artifact applied, the
			// one source-controller pulled since pending; read as
			// source-controller reads it: the layerSelector's layer, kept
			// as it is (copy: no ignore rule applies).
			Name: "oci", Owner: "NS",
			Source: config.Source{Repo: "oci://registry.internal:5000/deploy/manifests", Revision: "v1.1.0@sha256:" + strings.Repeat("a", 64),
				PlainHTTP: true, FluxArtifact: true, Layer: "application/vnd.cncf.flux.content.v1.tar+gzip",
				Kustomize: &config.KustomizeSource{Flux: &config.FluxBuild{SourceIgnore: new("docs/\n"), Unfiltered: true}}},
			TargetRevision: "v1.2.0@sha256:" + strings.Repeat("b", 64),
			Appliers:       []string{"kustomize-controller"}, AppliedAs: config.AppliedAsFlux,
			GitOps: &report.GitOps{Tool: "flux", Object: "Kustomization/NS/oci", SelfHeal: true, Prune: true},
		},
		{
			// Not pulled yet: the range of its spec.ref.
			Name: "oci-unpulled", Owner: "NS",
			Source: config.Source{Repo: "oci://registry.internal:5000/deploy/manifests", Revision: ">=1.0.0", Path: "deploy", FluxArtifact: true,
				Kustomize: &config.KustomizeSource{Flux: &config.FluxBuild{}}},
			Appliers: []string{"kustomize-controller"}, AppliedAs: config.AppliedAsFlux,
			GitOps: &report.GitOps{Tool: "flux", Object: "Kustomization/NS/oci-unpulled", SelfHeal: true, Prune: true},
		},
		{
			Name: "shop", Owner: "team-shop", Namespace: "shop",
			Source: config.Source{Repo: "REPO", Revision: commit, Path: "apps/web-kustomize", Kustomize: &config.KustomizeSource{Flux: &config.FluxBuild{
				TargetNamespace: "shop", PostBuild: true,
				// substituteFrom in order, newlines dropped, then substitute over them.
				Vars:   map[string]string{"cluster": "prod", "region": "eu", "zone": "bc", "dbpass": "s3cr3t-subst-do-not-leak"},
				Secret: []string{"s3cr3t-subst-do-not-leak"},
			}}},
			Appliers: []string{"kustomize-controller"}, AppliedAs: config.AppliedAsFlux,
			// SOPS: compared by who wrote the encrypted values (no key read).
			Decryption: config.DecryptionSOPS,
			GitOps:     &report.GitOps{Tool: "flux", Object: "Kustomization/NS/shop", SelfHeal: true, Prune: true},
		},
		{
			Name: "Kustomization/NS/web", Owner: "NS",
			// Built as kustomize-controller builds it, from the files the
			// artifact keeps (spec.ignore).
			Source: config.Source{Repo: "REPO", Revision: "v1.0.0", Path: "apps/web",
				Kustomize: &config.KustomizeSource{Flux: &config.FluxBuild{SourceIgnore: new("/docs/\n*.md\n")}}},
			Appliers: []string{"kustomize-controller"}, AppliedAs: config.AppliedAsFlux,
			GitOps: &report.GitOps{Tool: "flux", Object: "Kustomization/NS/web", Suspended: true},
		},
		{
			// A chartRef to a HelmChart: the chart, version range, source
			// and values files of the HelmChart, as helm-controller
			// installs the chart source-controller built from it.
			Name: "by-chart", Owner: "NS", Namespace: ns,
			Source: config.Source{Repo: "oci://registry.internal:5000/charts", Chart: "podinfo", Revision: "6.x", PlainHTTP: true,
				Helm: &config.HelmSource{Lookup: true, ReleaseName: "by-chart", ChartValues: []config.ValuesFile{{Path: "values-prod.yaml"}}, ValuesFilesReplaceDefaults: true,
					UpgradeCRDs: "Create"}}, // helm-controller's default
			Appliers: []string{"helm-controller"},
			GitOps:   &report.GitOps{Tool: "flux", Object: "HelmRelease/NS/by-chart", Prune: true},
		},
		{
			// A chart from a HelmRepository, at the version released; the
			// newest 4.x is pending. Its values files are the chart's.
			Name: "ingress", Owner: "NS", Namespace: ns,
			Source: config.Source{Repo: "https://kubernetes.github.io/ingress-nginx", Chart: "ingress-nginx", Revision: "4.11.3", Helm: &config.HelmSource{Lookup: true,
				ReleaseName: "ingress", ChartVersion: "4.11.3+2", ValuesFilesReplaceDefaults: true,
				ChartValues: []config.ValuesFile{{Path: "values-production.yaml"}},
				Values:      map[string]any{"controller": map[string]any{"replicaCount": json.Number("2")}},
				// install.crds and upgrade.crds Skip: helm-controller never applies crds/.
				SkipCRDs: true, UpgradeCRDs: "Skip", CRDsKept: true,
			}},
			TargetRevision: "4.x",
			Appliers:       []string{"helm-controller"},
			GitOps:         &report.GitOps{Tool: "flux", Object: "HelmRelease/NS/ingress", Prune: true},
		},
		{
			// A chartRef to an OCIRepository: its URL is the chart's
			// repository in the registry, its ref the target; the version
			// released renders with the artifact's digest.
			Name: "oci-chart", Owner: "NS", Namespace: ns,
			Source: config.Source{Repo: "oci://ghcr.io/stefanprodan/charts", Chart: "podinfo", Revision: "6.5.4",
				Helm: &config.HelmSource{Lookup: true, ReleaseName: "oci-chart", ChartVersion: "6.5.4+cdd538a0167e", UpgradeCRDs: "Create",
					CRDsKept: true, SkipSchemaValidation: true}}, // Create with client-side apply skips a CRD that exists
			TargetRevision: ">=6.0.0",
			Appliers:       []string{"helm-controller"},
			GitOps:         &report.GitOps{Tool: "flux", Object: "HelmRelease/NS/oci-chart", Prune: true},
		},
		{
			// From an OCI HelmRepository; insecure is plain HTTP.
			Name: "podinfo", Owner: "NS", Namespace: ns,
			Source: config.Source{Repo: "oci://registry.internal:5000/charts", Chart: "podinfo", PlainHTTP: true,
				Helm: &config.HelmSource{Lookup: true, ReleaseName: "podinfo", UpgradeCRDs: "Create"}},
			Appliers: []string{"helm-controller"},
			GitOps:   &report.GitOps{Tool: "flux", Object: "HelmRelease/NS/podinfo", Prune: true},
		},
		{
			Name: "HelmRelease/NS/web", Owner: "team-web", Namespace: "shop",
			Source: config.Source{Repo: "REPO", Revision: commit, Path: "charts/web", Helm: &config.HelmSource{Lookup: true,
				// Built by source-controller from the artifact.
				ReleaseName: "shop-web", FluxArtifact: true, VersionMetadata: "62225de9b23f.4",
				// source-controller's values.yaml is the valuesFiles merged.
				ValuesFilesReplaceDefaults: true,
				ValuesFiles:                []string{"../../envs/prod/values.yaml"},
				Values: map[string]any{"replicas": json.Number("3"), "db": map[string]any{"host": "db.prod", "port": json.Number("6543")}, "greeting": "hi",
					"token": "s3cr3t-token-do-not-leak", "hosts": []any{"s3cr3t-list-do-not-leak"}},
				// What came from Secrets, whole documents and their values:
				// render errors mask them.
				Secret: []string{"s3cr3t-token-do-not-leak", "s3cr3t-broken-do-not-leak: [", "hosts: [s3cr3t-list-do-not-leak]", "s3cr3t-list-do-not-leak"},
				PostRenderers: []config.PostRenderer{{
					Patches: []config.FluxPatch{{Patch: `[{"op": "add", "path": "/metadata/annotations/x", "value": "y"}]`, Target: map[string]any{"kind": "Deployment", "name": "web"}}},
					Images:  []config.FluxImage{{Name: "nginx", NewTag: "1.27"}},
				}},
				CommonLabels: map[string]string{"team": "web"}, CommonAnnotations: map[string]string{"owner": "sre"},
				UpgradeCRDs: "CreateReplace",
			}},
			Appliers: []string{"helm-controller"},
			GitOps:   &report.GitOps{Tool: "flux", Object: "HelmRelease/NS/web", SelfHeal: true, Prune: true},
		},
	}
	for i := range res.Apps {
		res.Apps[i].Source.Repo = strings.ReplaceAll(res.Apps[i].Source.Repo, repo, "REPO")
	}
	if d := diff(wantApps, res.Apps); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
	wantRules := []classify.IgnoreRule{
		// A Kustomization's ignore (kustomize-controller v1.9).
		{Group: "apps", Kind: "Deployment", Name: "web", JSONPointers: []string{"/spec/replicas", "/spec/template/spec/containers/0/resources"},
			Owner: "team-shop", Reason: "imported from Flux", Expires: "2027-03-01", App: "shop", Reconciler: "flux"},
		{Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}, Owner: "team-web", Reason: "imported from Flux", Expires: "2027-03-01", App: "HelmRelease/NS/web", Reconciler: "flux"},
		{JSONPointers: []string{"/metadata/annotations"}, Owner: "team-web", Reason: "imported from Flux", Expires: "2027-03-01", App: "HelmRelease/NS/web", Reconciler: "flux"},
	}
	if d := diff(wantRules, res.Ignore); d != "" {
		t.Errorf("ignore rules (-want +got):\n%s", d)
	}
	checkRules(t, res.Ignore)
	wantSkipped := []string{
		"Kustomization/NS/remote: spec.kubeConfig applies it to another cluster",
		"HelmRelease/NS/by-bucket-chart: chartRef HelmChart/NS/in-bucket: its chart comes from Bucket/NS/artifacts: driftscan renders charts from GitRepositories and HelmRepositories only",
	}
	if d := diff(wantSkipped, skippedTexts(res.Skipped, ns)); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	// The chart from a Bucket is applied by helm-controller and compared by
	// nobody: the report says so; another cluster's Kustomization is not
	// this scan's.
	wantWarnings := []string{
		"NotScanned HelmRelease/NS/by-bucket-chart: not scanned: chartRef HelmChart/NS/in-bucket: its chart comes from Bucket/NS/artifacts: driftscan renders charts from GitRepositories and HelmRepositories only",
	}
	if d := diff(wantWarnings, warningTexts(res.Warnings, ns)); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	wantErrors := []string{
		"HelmRelease/NS/by-lost-chart: chartRef HelmChart/NS/gone not found",
		"Kustomization/NS/lost: source GitRepository/NS/gone not found",
		"Kustomization/NS/oci-unpulled: OCIRepository ref.semverFilter is not applied by driftscan: source-controller has pulled no artifact yet, and the newest tag of the range is read",
		"Kustomization/NS/ranged: source GitRepository/NS/ranged: ref.semver >=1.0.0 is resolved by source-controller, and its status has no artifact revision yet",
		"Kustomization/NS/shop: substituteFrom ConfigMap NS/needed: configmaps \"needed\" not found: Flux cannot build the Kustomization either",
		`Kustomization/NS/shop: ignore[1] not imported: target kind "ConfigMap|Secret" is a regular expression, which a driftscan ignore rule cannot express`,
		`HelmRelease/NS/podinfo: spec.install.crds "create" is not Skip, Create or CreateReplace: helm-controller fails the release`,
		"HelmRelease/NS/web: valuesFrom Secret NS/web-broken key values.yaml is not a YAML map of values",
		"HelmRelease/NS/web: valuesFrom ConfigMap NS/missing not found",
		"HelmRelease/NS/web: driftDetection.ignore[1] not imported: target label and annotation selectors cannot be expressed as a driftscan ignore rule",
		`HelmRelease/NS/web: driftDetection.ignore[3] not imported: target name "web-.*" is a regular expression, which a driftscan ignore rule cannot express`,
	}
	if d := diff(wantErrors, errorTexts(res.Errors, ns)); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
	for _, text := range append(errorTexts(res.Errors, ns), skippedTexts(res.Skipped, "")...) {
		for _, secret := range secretValues {
			if strings.Contains(text, secret) {
				t.Errorf("a Secret value is printed: %s", text)
			}
		}
	}

	// The HelmRelease whose chart is in Git.
	var web config.App
	for _, a := range res.Apps {
		if a.Name == "HelmRelease/NS/web" {
			web = a
		}
	}
	t.Run("the chart renders with the HelmRelease's values", func(t *testing.T) {
		app := web
		app.Source.Repo = repo
		co, err := source.FetchGit(t.Context(), source.GitOptions{Repo: app.Source.Repo, Revision: app.Source.Revision, Cache: source.NewCache(t.TempDir())})
		if err != nil {
			t.Fatal(err)
		}
		manifests, err := render.Manifests(t.Context(), render.Options{Dir: filepath.Join(co.Dir, app.Source.Path), Root: co.Dir, Namespace: app.Namespace, Helm: app.Source.Helm})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]any{}
		for _, m := range manifests {
			got[m.Object.GetKind()+"/"+m.Object.GetName()] = m.Object.Object["data"]
			if sd, ok := m.Object.Object["stringData"]; ok {
				got[m.Object.GetKind()+"/"+m.Object.GetName()] = sd
			}
		}
		want := map[string]any{
			// greeting and db.host from spec.values, replicas and db.port
			// from the ConfigMap, env from the chart's values file in Git.
			"ConfigMap/shop-web-values": map[string]any{"greeting": "hi", "replicas": "3", "env": "prod", "dbHost": "db.prod", "dbPort": "6543"},
			"Secret/shop-web-token":     map[string]any{"token": "s3cr3t-token-do-not-leak"},
		}
		if d := diff(want, got); d != "" {
			t.Errorf("rendered data (-want +got):\n%s", d)
		}
	})

	// Issue 17: a template that fails printing a value (fail, required, a
	// type error) showed the Secret's token in the report and the log.
	t.Run("a render error never quotes a value from a Secret", func(t *testing.T) {
		chart := t.TempDir()
		for name, text := range map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: web\nversion: 0.1.0\n",
			"templates/fail.yaml": "{{ fail (printf \"token %s is not a URL\" .Values.token) }}\n",
		} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(chart, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(chart, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		hs := *web.Source.Helm
		hs.ValuesFiles = nil
		_, err := render.Manifests(t.Context(), render.Options{Dir: chart, Helm: &hs})
		if err == nil || !strings.Contains(err.Error(), "token *** is not a URL") {
			t.Fatalf("err = %v, want the template's error with the token masked", err)
		}
		for _, secret := range secretValues {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the render error quotes a Secret's value: %v", err)
			}
		}
	})
}

// normalize writes the test's namespace NS in app names, owners, GitOps
// objects and rules' apps.
func normalize(apps []config.App, rules []classify.IgnoreRule, ns string) {
	for i := range apps {
		apps[i].Name = strings.ReplaceAll(apps[i].Name, ns, "NS")
		apps[i].Owner = strings.ReplaceAll(apps[i].Owner, ns, "NS")
		if g := apps[i].GitOps; g != nil {
			g.Object = strings.ReplaceAll(g.Object, ns, "NS")
		}
	}
	for i := range rules {
		rules[i].App = strings.ReplaceAll(rules[i].App, ns, "NS")
	}
}

func TestArtifactRevisionIsTheCommit(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	tests := []struct{ revision, want string }{
		{"main@sha1:" + sha, sha},
		{"refs/tags/v1.0.0@sha1:" + sha, sha},
		{"sha1:" + sha, sha},
		{"main/" + sha, sha},
		{"main@sha1:not-a-sha", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := artifactCommit(tt.revision); got != tt.want {
			t.Errorf("artifactCommit(%q) = %q, want %q", tt.revision, got, tt.want)
		}
	}
}

func TestRelativePaths(t *testing.T) {
	tests := []struct{ from, to, want string }{
		{"charts/web", "envs/prod/values.yaml", "../../envs/prod/values.yaml"},
		{"charts/web", "charts/web/values-prod.yaml", "values-prod.yaml"},
		{"charts/web", "charts/common/values.yaml", "../common/values.yaml"},
		{"charts/web", "charts/webx/values.yaml", "../webx/values.yaml"},
		{"", "envs/values.yaml", "envs/values.yaml"},
	}
	for _, tt := range tests {
		if got := relPath(tt.from, tt.to); got != tt.want {
			t.Errorf("relPath(%q, %q) = %q, want %q", tt.from, tt.to, got, tt.want)
		}
	}
}

// TestFluxGitRepositoryIncludes: a GitRepository's spec.include is read
// into the source: each included repository at the commit the including
// artifact holds (status.includedArtifacts, in spec order), else at its own
// artifact's; toPath defaults to the included GitRepository's name; its own
// includes, spec.ignore and recurseSubmodules come along. A missing or cyclic include is an
// error on the app, not a build without the files.
func TestFluxGitRepositoryIncludes(t *testing.T) {
	installCRDs(t)
	ns := env.Namespace(t, nil)
	const older, newer, policy = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"
	const platformCommit = "4444444444444444444444444444444444444444"
	applyAll(t, "flux", ns, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: platform}
spec:
  interval: 1m
  url: https://git.example/platform
  include:
  - repository: {name: shared}
    fromPath: deploy
    toPath: base/shared
  - repository: {name: policies}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: shared}
spec: {interval: 1m, url: https://git.example/shared, ignore: "*.md\n", include: [{repository: {name: policies}, toPath: deploy/policies}]}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: policies}
spec: {interval: 1m, url: https://git.example/policies, ref: {tag: v2}, recurseSubmodules: true}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: loop-a}
spec: {interval: 1m, url: https://git.example/a, include: [{repository: {name: loop-b}}]}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: loop-b}
spec: {interval: 1m, url: https://git.example/b, include: [{repository: {name: loop-a}}]}
`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: lonely}
spec: {interval: 1m, url: https://git.example/lonely, include: [{repository: {name: nowhere}}]}
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: platform}
spec: {interval: 5m, sourceRef: {kind: GitRepository, name: platform}, path: ./clusters/prod, prune: true}
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: loop}
spec: {interval: 5m, sourceRef: {kind: GitRepository, name: loop-a}, path: ./, prune: true}
`, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: lonely}
spec: {interval: 5m, sourceRef: {kind: GitRepository, name: lonely}, path: ./, prune: true}
`)
	// platform's artifact was made with shared at the older commit; shared
	// has pulled a newer one since.
	env.Patch(t, "source-controller", gitRepositoryGVK, ns, "platform", types.MergePatchType,
		`{"status":{"artifact":{"revision":"main@sha1:`+platformCommit+`","path":"p.tar.gz"},"includedArtifacts":[{"revision":"main@sha1:`+older+`","path":"s.tar.gz"}]}}`, "status")
	env.Patch(t, "source-controller", gitRepositoryGVK, ns, "shared", types.MergePatchType,
		`{"status":{"artifact":{"revision":"main@sha1:`+newer+`","path":"s.tar.gz"}}}`, "status")
	env.Patch(t, "source-controller", gitRepositoryGVK, ns, "policies", types.MergePatchType,
		`{"status":{"artifact":{"revision":"v2@sha1:`+policy+`","path":"p.tar.gz"}}}`, "status")

	res := discover(t, options(FromFlux, ns))
	normalize(res.Apps, res.Ignore, ns)
	var got []config.Include
	for _, a := range res.Apps {
		if a.Name == "platform" {
			if a.Source.Revision != platformCommit {
				t.Errorf("platform at %s, want its artifact's commit", a.Source.Revision)
			}
			got = a.Source.Includes
		}
	}
	policies := config.Source{Repo: "https://git.example/policies", Revision: policy, RecurseSubmodules: true}
	want := []config.Include{
		{Source: config.Source{Repo: "https://git.example/shared", Revision: older,
			Includes: []config.Include{{Source: policies, ToPath: "deploy/policies"}}},
			Ignore: new("*.md\n"), FromPath: "deploy", ToPath: "base/shared"},
		{Source: policies, ToPath: "policies"},
	}
	if d := diff(want, got); d != "" {
		t.Errorf("platform's includes (-want +got):\n%s", d)
	}
	wantErrors := []string{
		"Kustomization/NS/lonely: source GitRepository/NS/lonely: spec.include: GitRepository NS/nowhere not found",
		"Kustomization/NS/loop: source GitRepository/NS/loop-a: spec.include: the includes go round: loop-a -> loop-b -> loop-a",
	}
	if d := diff(wantErrors, errorTexts(res.Errors, ns)); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
}
