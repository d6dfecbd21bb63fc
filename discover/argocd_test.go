package discover

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

const deployRepo = "https://git.example.com/shop/deploy.git"

var argoAppliers = []string{"argocd-controller"}

// argoCase is one set of Applications in a namespace of their own and what
// discovery must make of them. NS in the wanted texts and GitOps objects is
// the test's namespace; SERVER_URL in the manifests is the test cluster's.
type argoCase struct {
	name         string
	projects     []string // AppProjects; nil means default, shop and infra allowing every repository
	argocdCM     string   // argocd-cm's data, as YAML; "" creates none
	applications []string
	apps         []config.App
	rules        []classify.IgnoreRule
	skipped      []string
	errors       []string
	warnings     []string // code object: message
}

func TestApplications(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	for _, tt := range argoCases {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, nil)
			if tt.projects == nil {
				allowProjects(t, ns, "default", "shop", "infra")
			}
			for _, m := range tt.projects {
				applyAll(t, "argocd-server", ns, m)
			}
			if tt.argocdCM != "" {
				applyAll(t, "argocd-server", ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\ndata:\n"+tt.argocdCM)
			}
			for _, m := range tt.applications {
				applyAll(t, "argocd-server", ns, strings.ReplaceAll(m, "SERVER_URL", env.Config.Host))
			}
			res := discover(t, options(FromArgoCD, ns))
			for i := range tt.apps {
				if src := &tt.apps[i].Source; tt.apps[i].Error == "" && src.Directory == nil && src.Helm == nil && src.Kustomize == nil && src.Chart == "" {
					// A folder of plain manifests (a source discovery took): Argo CD's default
					// directory source.
					src.Directory = &config.DirectorySource{}
				}
				if src := &tt.apps[i].Source; tt.apps[i].Error == "" && src.Chart == "" && !src.OCIArtifact() {
					// argocd-repo-server's default: a Git source's
					// submodules are checked out.
					src.RecurseSubmodules = true
				}
				if tt.apps[i].ArgoInstance == "" && tt.apps[i].GitOps != nil {
					// The Application's name: it is in Argo CD's namespace.
					tt.apps[i].ArgoInstance = tt.apps[i].GitOps.Object[strings.LastIndex(tt.apps[i].GitOps.Object, "/")+1:]
				}
				if tt.apps[i].ArgoInstallationID == nil {
					// argocd-cm read or absent: no installationID.
					tt.apps[i].ArgoInstallationID = new(string)
				}
				if tt.apps[i].KustomizeBuild == nil && tt.argocdCM == "" {
					// Without argocd-cm, Argo CD's defaults: no --enable-helm,
					// no --load-restrictor.
					tt.apps[i].KustomizeBuild = &config.KustomizeBuild{}
				}
			}
			for i := range res.Apps {
				if res.Apps[i].ExcludedKinds.Excludes("coordination.k8s.io", "Lease") == "" {
					t.Errorf("app %s: Argo CD always excludes Leases, its filter does not", res.Apps[i].Name)
				}
				res.Apps[i].ExcludedKinds = nil // TestArgoResourceFilter
				if p := res.Apps[i].ArgoProject; p == nil && res.Apps[i].Error == "" || p != nil && !strings.HasPrefix(p.Project, ns+"/") {
					t.Errorf("app %s: project resources %+v, want its AppProject's in %s", res.Apps[i].Name, p, ns)
				}
				res.Apps[i].ArgoProject = nil // TestAppProjectResources
				res.Apps[i].Error = strings.ReplaceAll(res.Apps[i].Error, ns, "NS")
				res.Apps[i].ArgoSource = nil // TestArgoSourceFiles
				if g := res.Apps[i].GitOps; g != nil {
					g.Object = strings.ReplaceAll(g.Object, ns, "NS")
				}
				if m := res.Apps[i].ArgoManagedNamespace; m != nil {
					m.Where = strings.ReplaceAll(m.Where, ns, "NS")
				}
			}
			if d := diff(tt.apps, res.Apps); d != "" {
				t.Errorf("apps (-want +got):\n%s", d)
			}
			if d := diff(tt.rules, res.Ignore); d != "" {
				t.Errorf("ignore rules (-want +got):\n%s", d)
			}
			checkRules(t, res.Ignore)
			for i := range tt.skipped {
				tt.skipped[i] = strings.ReplaceAll(tt.skipped[i], "SERVER_URL", strings.TrimRight(env.Config.Host, "/"))
			}
			if d := diff(tt.skipped, skippedTexts(res.Skipped, ns)); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
			if d := diff(tt.errors, errorTexts(res.Errors, ns)); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
			if d := diff(tt.warnings, warningTexts(res.Warnings, ns)); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}

var argoCases = []argoCase{
	{
		name:     "argocd-cm's kustomize.buildOptions say how Argo CD builds every kustomization, and resourceTrackingMethod, instanceLabelKey and installationID how it tracks what it applies",
		argocdCM: "  kustomize.buildOptions: --enable-helm --load-restrictor LoadRestrictionsNone\n  application.resourceTrackingMethod: label\n  application.instanceLabelKey: argocd.argoproj.io/instance\n  installationID: east\n",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: built}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web-kustomize}
`},
		apps: []config.App{{
			Name: "built", Owner: "shop", Namespace: "shop",
			Source:             config.Source{ReleaseName: "built", Repo: deployRepo, Path: "apps/web-kustomize"},
			Appliers:           argoAppliers,
			GitOps:             &report.GitOps{Tool: "argocd", Object: "Application/NS/built", Suspended: true},
			KustomizeBuild:     &config.KustomizeBuild{EnableHelm: true, LoadRestrictionsNone: true},
			ArgoLabelTracking:  true,
			ArgoInstanceLabel:  "argocd.argoproj.io/instance",
			ArgoInstallationID: ptr.To("east"),
		}},
	},
	{
		name: "argocd-cm's system-level ignoreDifferences and ignoreAggregatedRoles are every Argo CD app's debts; a split key replaces the combined one for its kind",
		argocdCM: `  resource.customizations: |
    apps/Deployment:
      ignoreDifferences: |
        jsonPointers: [/spec/template/metadata/annotations]
    admissionregistration.k8s.io/MutatingWebhookConfiguration:
      ignoreDifferences: |
        jqPathExpressions: ['.webhooks[]?.clientConfig.caBundle']
    "*.crossplane.io/*":
      ignoreDifferences: |
        jsonPointers: [/spec/forProvider]
  resource.customizations.ignoreDifferences.apps_Deployment: |
    jsonPointers: [/spec/replicas]
    managedFieldsManagers: [kube-controller-manager]
  resource.customizations.ignoreDifferences.Service: |
    jsonPointers: [/spec/clusterIP]
  resource.customizations.ignoreDifferences.all: |
    managedFieldsManagers: [vpa-recommender]
  resource.customizations.health.apps_Deployment: "hs = {}"
  resource.compareoptions: |
    ignoreAggregatedRoles: true
  resource.inclusions: |
    apiGroups: [apps]
`,
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: built}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`},
		apps: []config.App{{
			Name: "built", Owner: "shop", Namespace: "shop",
			Source:         config.Source{ReleaseName: "built", Repo: deployRepo, Path: "apps/web"},
			Appliers:       argoAppliers,
			GitOps:         &report.GitOps{Tool: "argocd", Object: "Application/NS/built", Suspended: true},
			KustomizeBuild: &config.KustomizeBuild{},
		}},
		rules: []classify.IgnoreRule{
			{JSONPointers: nil, ManagedFieldsManagers: []string{"vpa-recommender"}, Owner: "argocd", Reason: "imported from Argo CD's argocd-cm (resource.customizations.ignoreDifferences.all)", Expires: "2027-03-01", Tool: "argocd", Reconciler: "argocd"},
			{Kind: "Service", JSONPointers: []string{"/spec/clusterIP"}, Owner: "argocd", Reason: "imported from Argo CD's argocd-cm (resource.customizations.ignoreDifferences.Service)", Expires: "2027-03-01", Tool: "argocd", Reconciler: "argocd"},
			{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration", JQPathExpressions: []string{".webhooks[]?.clientConfig.caBundle"}, Owner: "argocd", Reason: "imported from Argo CD's argocd-cm (resource.customizations admissionregistration.k8s.io/MutatingWebhookConfiguration)", Expires: "2027-03-01", Tool: "argocd", Reconciler: "argocd"},
			{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}, ManagedFieldsManagers: []string{"kube-controller-manager"}, Owner: "argocd", Reason: "imported from Argo CD's argocd-cm (resource.customizations.ignoreDifferences.apps_Deployment)", Expires: "2027-03-01", Tool: "argocd", Reconciler: "argocd"},
			{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", JQPathExpressions: []string{`select(.aggregationRule | type == "object") | .rules`}, Owner: "argocd", Reason: "imported from Argo CD's argocd-cm (resource.compareoptions ignoreAggregatedRoles)", Expires: "2027-03-01", Tool: "argocd", Reconciler: "argocd", DiffOnly: true},
		},
		errors: []string{
			`ConfigMap/NS/argocd-cm: resource.customizations *.crossplane.io/* not imported: group "*.crossplane.io" is a pattern, which a driftscan ignore rule cannot express`,
			`ConfigMap/NS/argocd-cm: resource.inclusions: not a list of {apiGroups, kinds, clusters} (Argo CD compares no app until it is mended; the scan reads it as absent)`,
		},
	},
	{
		name: "a Helm source keeps its release name, values files, parameters, inline values and whether it skips the chart's schema",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  labels: {team: team-web}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/shop/deploy.git
    targetRevision: v1.2.0
    path: ./charts/web
    helm:
      releaseName: web-prod
      valueFiles: [values-prod.yaml]
      ignoreMissingValueFiles: true
      skipSchemaValidation: true
      parameters:
      - {name: image.tag, value: "1.25"}
      - {name: greeting, value: "hi, there"}
      valuesObject:
        db: {host: db.prod, port: 5432}
        podAnnotations: {prometheus.io/scrape: "yes"}
  syncPolicy:
    automated: {selfHeal: true, prune: true}
`},
		apps: []config.App{{
			Name: "web", Owner: "team-web", Namespace: "shop",
			Source: config.Source{ReleaseName: "web", Repo: deployRepo, Revision: "v1.2.0", Path: "charts/web", Helm: &config.HelmSource{ArgoValueFiles: true,
				ReleaseName: "web-prod", ValuesFiles: []string{"values-prod.yaml"}, IgnoreMissingValuesFiles: true, SkipSchemaValidation: true,
				Set: map[string]string{"image.tag": "1.25", "greeting": "hi, there"},
				// Inline values as Argo CD writes them to a values file:
				// JSON numbers keep their text.
				Values: map[string]any{"db": map[string]any{"host": "db.prod", "port": json.Number("5432")}, "podAnnotations": map[string]any{"prometheus.io/scrape": "yes"}},
			}},
			Appliers: argoAppliers,
			GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/web", SelfHeal: true, Prune: true},
		}},
	},
	{
		name: "a source hydrator's app is what Argo CD syncs: the hydrated manifests in its sync branch and path, of the dry source's repository unless it names another",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: hydrated}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  sourceHydrator:
    drySource: {repoURL: https://git.example.com/shop/deploy.git, targetRevision: main, path: apps/web-kustomize}
    syncSource: {targetBranch: env/prod, path: ./prod/web}
  syncPolicy:
    automated: {selfHeal: true}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: elsewhere}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  sourceHydrator:
    drySource: {repoURL: https://git.example.com/shop/deploy.git, targetRevision: main, path: apps/web}
    syncSource: {repoURL: https://git.example.com/shop/deploy.git, targetBranch: env/staging, path: staging/web}
    hydrateTo: {targetBranch: env/staging-next}
`},
		apps: []config.App{{
			Name: "elsewhere", Owner: "shop", Namespace: "shop",
			Source:   config.Source{ReleaseName: "elsewhere", Repo: deployRepo, Revision: "env/staging", Path: "staging/web"},
			Appliers: argoAppliers,
			GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/elsewhere", Suspended: true},
		}, {
			Name: "hydrated", Owner: "shop", Namespace: "shop",
			Source:   config.Source{ReleaseName: "hydrated", Repo: deployRepo, Revision: "env/prod", Path: "prod/web"},
			Appliers: argoAppliers,
			GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/hydrated", SelfHeal: true},
		}},
	},
	{
		name: "multiple sources: a ref source's values file in the same repository, other sources named by ref or index",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  annotations: {team: team-shop}
spec:
  project: shop
  destination: {name: in-cluster, namespace: shop}
  sources:
  - repoURL: https://git.example.com/shop/deploy.git
    targetRevision: main
    ref: values
  - repoURL: https://git.example.com/shop/deploy.git
    targetRevision: main
    path: charts/web
    helm:
      valueFiles: [$values/envs/prod/values.yaml, values.yaml]
  - repoURL: https://git.example.com/shop/deploy.git
    targetRevision: HEAD
    path: apps/web
  - repoURL: https://git.example.com/shop/config.git
    path: apps/config
    ref: config
`},
		apps: []config.App{
			{
				Name: "shop", Owner: "team-shop", Namespace: "shop",
				Source: config.Source{ReleaseName: "shop", Repo: deployRepo, Revision: "main", Path: "charts/web", Helm: &config.HelmSource{ArgoValueFiles: true,
					ReleaseName: "shop", ValuesFiles: []string{"../../envs/prod/values.yaml", "values.yaml"},
				}},
				Appliers: argoAppliers,
				GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/shop", Suspended: true},
			},
			{
				Name: "shop-2", Owner: "team-shop", Namespace: "shop",
				Source:   config.Source{ReleaseName: "shop", Repo: deployRepo, Path: "apps/web"},
				Appliers: argoAppliers,
				GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/shop", Suspended: true},
			},
			{
				Name: "shop-config", Owner: "team-shop", Namespace: "shop",
				Source:   config.Source{ReleaseName: "shop", Repo: "https://git.example.com/shop/config.git", Path: "apps/config"},
				Appliers: argoAppliers,
				GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/shop", Suspended: true},
			},
		},
	},
	{
		name: "a values file from another repository or revision, or an unknown ref, is an error and left out",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  sources:
  - {repoURL: https://git.example.com/shop/values.git, targetRevision: main, ref: values}
  - {repoURL: https://git.example.com/shop/deploy.git, targetRevision: v0.9.0, ref: old}
  - repoURL: https://git.example.com/shop/deploy.git
    targetRevision: main
    path: charts/web
    helm:
      valueFiles: [$values/envs/prod/values.yaml, $old/envs/prod/values.yaml, $missing/values.yaml, values.yaml]
`},
		apps: []config.App{{
			Name: "web", Owner: "shop", Namespace: "shop",
			Source:   config.Source{ReleaseName: "web", Repo: deployRepo, Revision: "main", Path: "charts/web", Helm: &config.HelmSource{ArgoValueFiles: true, ReleaseName: "web", ValuesFiles: []string{"values.yaml"}}},
			Appliers: argoAppliers,
			GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/web", Suspended: true},
		}},
		errors: []string{
			"Application/NS/web: valueFiles $values/envs/prod/values.yaml: the source with ref values is the repository https://git.example.com/shop/values.git, not the chart's https://git.example.com/shop/deploy.git; driftscan reads values files from the chart's own checkout only",
			`Application/NS/web: valueFiles $old/envs/prod/values.yaml: the source with ref old is at revision "v0.9.0", the chart at "main"; driftscan reads values files from the chart's own checkout only`,
			"Application/NS/web: valueFiles $missing/values.yaml: no source has ref missing",
		},
	},
	{
		name: "Kustomize overrides are applied, the capabilities of its charts as Argo CD hands them on; Helm settings driftscan does not apply are errors; the app is still scanned",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web-kustomize}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/shop/deploy.git
    path: apps/web-kustomize
    kustomize:
      version: v5.4.0
      namePrefix: prod-
      images: [nginx:1.26, "web=registry/web:${ARGOCD_APP_REVISION}"]
      commonLabels: {env: prod}
      replicas: [{name: web, count: "3"}, {name: worker, count: 2}]
      patches: [{target: {kind: Deployment}, patch: "- op: remove\n  path: /spec/replicas"}]
      components: [../components/audit]
      ignoreMissingComponents: true
      kubeVersion: v1.30.2+k3s1
      apiVersions: [monitoring.coreos.com/v1/ServiceMonitor]
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web-helm}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/shop/deploy.git
    path: charts/web
    helm:
      skipCrds: true
      namespace: other
      kubeVersion: latest
      fileParameters:
      - {name: dashboards.shop, path: files/shop.json}
      - {name: secret, path: ../../../etc/passwd}
      values: |
        replicas: 3
        featureFlag: "true"
        tolerations: [{key: dedicated}]
        nested: {ok: fine, list: []}
      parameters:
      - {name: flag, value: "true", forceString: true}
      - {name: port, value: "8080", forceString: true}
      - {name: count, value: "3"}
`},
		apps: []config.App{
			{
				Name: "web-helm", Owner: "shop", Namespace: "shop",
				Source: config.Source{ReleaseName: "web-helm", Repo: deployRepo, Path: "charts/web", Helm: &config.HelmSource{ArgoValueFiles: true,
					ReleaseName: "web-helm", Set: map[string]string{"count": "3"}, SkipCRDs: true, Namespace: "other",
					// forceString: --set-string, as Argo CD passes it.
					SetString: map[string]string{"flag": "true", "port": "8080"},
					SetFiles:  map[string]string{"dashboards.shop": "files/shop.json"},
					// Lists and strings --set would retype are kept.
					Values: map[string]any{"featureFlag": "true", "nested": map[string]any{"list": []any{}, "ok": "fine"}, "replicas": json.Number("3"),
						"tolerations": []any{map[string]any{"key": "dedicated"}}},
				}},
				Appliers: argoAppliers,
				GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/web-helm", Suspended: true},
			},
			{
				Name: "web-kustomize", Owner: "shop", Namespace: "shop",
				Source: config.Source{ReleaseName: "web-kustomize", Repo: deployRepo, Path: "apps/web-kustomize", Kustomize: &config.KustomizeSource{Argo: &config.ArgoKustomize{
					NamePrefix: "prod-", Images: []string{"nginx:1.26", "web=registry/web:${ARGOCD_APP_REVISION}"}, CommonLabels: map[string]string{"env": "prod"},
					Replicas:   []config.KustomizeReplica{{Name: "web", Count: 3}, {Name: "worker", Count: 2}},
					Patches:    []map[string]any{{"target": map[string]any{"kind": "Deployment"}, "patch": "- op: remove\n  path: /spec/replicas"}},
					Components: []string{"../components/audit"}, IgnoreMissingComponents: true,
				}, KubeVersion: "1.30.2", APIVersions: []string{"monitoring.coreos.com/v1/ServiceMonitor"}}},
				Appliers: argoAppliers,
				GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/web-kustomize", Suspended: true},
			},
		},
		errors: []string{
			`Application/NS/web-helm: spec.source.helm.kubeVersion "latest" is not a Kubernetes version: could not parse "latest" as version`,
			"Application/NS/web-helm: fileParameters secret: ../../../etc/passwd leaves the repository; left out",
		},
	},
	{
		name: "directory recurse, include and exclude are the app's; jsonnet is an error",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: filtered}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/shop/deploy.git
    path: apps/web
    directory:
      recurse: true
      include: '*.yaml'
      exclude: 'test/*'
      jsonnet:
        tlas: [{name: env, value: prod}]
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: plain}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/shop/deploy.git
    path: apps/web
    directory: {recurse: true, include: '*'}
`},
		apps: []config.App{
			{
				Name: "filtered", Owner: "shop", Namespace: "shop",
				Source:   config.Source{ReleaseName: "filtered", Repo: deployRepo, Path: "apps/web", Directory: &config.DirectorySource{Recurse: true, Include: "*.yaml", Exclude: "test/*"}},
				Appliers: argoAppliers,
				GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/filtered", Suspended: true},
			},
			{
				Name: "plain", Owner: "shop", Namespace: "shop",
				Source:   config.Source{ReleaseName: "plain", Repo: deployRepo, Path: "apps/web", Directory: &config.DirectorySource{Recurse: true, Include: "*"}},
				Appliers: argoAppliers,
				GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/plain", Suspended: true},
			},
		},
		errors: []string{
			"Application/NS/filtered: jsonnet is not rendered by driftscan: directory.jsonnet tlas not applied",
		},
	},
	{
		name: "ignoreDifferences become ignore rules owned by the app; an invalid one is an error",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  ignoreDifferences:
  - group: apps
    kind: Deployment
    name: web
    jsonPointers: [/spec/replicas]
  - kind: ConfigMap
    namespace: shop
    jqPathExpressions: ['.metadata.annotations."deploy.example.com/at"']
  - group: "*"
    kind: "*"
    managedFieldsManagers: [kube-controller-manager]
  - kind: Secret
    jqPathExpressions: ['.data[']
`},
		apps: []config.App{{
			Name: "web", Owner: "shop", Namespace: "shop",
			Source:   config.Source{ReleaseName: "web", Repo: deployRepo, Path: "apps/web"},
			Appliers: argoAppliers,
			GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/web", Suspended: true},
		}},
		rules: []classify.IgnoreRule{
			{Group: "apps", Kind: "Deployment", Name: "web", JSONPointers: []string{"/spec/replicas"}, Owner: "shop", Reason: "imported from Argo CD", Expires: "2027-03-01", App: "web", Reconciler: "argocd"},
			{Kind: "ConfigMap", Namespace: "shop", JQPathExpressions: []string{`.metadata.annotations."deploy.example.com/at"`}, Owner: "shop", Reason: "imported from Argo CD", Expires: "2027-03-01", App: "web", Reconciler: "argocd"},
			{ManagedFieldsManagers: []string{"kube-controller-manager"}, Owner: "shop", Reason: "imported from Argo CD", Expires: "2027-03-01", App: "web", Reconciler: "argocd"},
		},
		errors: []string{
			`Application/NS/web: not imported: ignore rule for Secret: jqPathExpression ".data[": unexpected EOF`,
		},
	},
	{
		name: "self-heal and prune come from the automated sync policy; without it, or with skip-reconcile, the app is suspended",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: healing}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  syncPolicy: {automated: {selfHeal: true}}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: pruning}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  syncPolicy: {automated: {prune: true}}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: switched-off}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  syncPolicy: {automated: {enabled: false, selfHeal: true, prune: true}, syncOptions: [ServerSideApply=true]}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: skipped, annotations: {argocd.argoproj.io/skip-reconcile: "True"}}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  syncPolicy: {automated: {selfHeal: true, prune: true}}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: not-skipped, annotations: {argocd.argoproj.io/skip-reconcile: "no"}}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  syncPolicy: {automated: {selfHeal: true}}
`},
		apps: []config.App{
			{Name: "healing", Owner: "shop", Source: config.Source{ReleaseName: "healing", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/healing", SelfHeal: true}},
			{Name: "not-skipped", Owner: "shop", Source: config.Source{ReleaseName: "not-skipped", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/not-skipped", SelfHeal: true}},
			{Name: "pruning", Owner: "shop", Source: config.Source{ReleaseName: "pruning", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/pruning", Prune: true}},
			{Name: "skipped", Owner: "shop", Source: config.Source{ReleaseName: "skipped", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/skipped", Suspended: true}},
			{Name: "switched-off", Owner: "shop", Source: config.Source{ReleaseName: "switched-off", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/switched-off", Suspended: true}},
		},
	},
	{
		name: "managed namespace metadata with CreateNamespace=true is what Argo CD applies to the destination namespace, with its server-side apply option over the Application's",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: managed}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  syncPolicy:
    syncOptions: [CreateNamespace=true]
    managedNamespaceMetadata:
      labels: {pod-security.kubernetes.io/enforce: restricted}
      annotations: {owner: shop, argocd.argoproj.io/sync-options: Prune=false}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: empty}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop-empty}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  syncPolicy: {syncOptions: [CreateNamespace=true], managedNamespaceMetadata: {}}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: not-created}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop-other}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
  syncPolicy:
    managedNamespaceMetadata:
      labels: {pod-security.kubernetes.io/enforce: restricted}
`},
		apps: []config.App{
			{Name: "empty", Owner: "shop", Namespace: "shop-empty", Source: config.Source{ReleaseName: "empty", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/empty", Suspended: true},
				ArgoManagedNamespace: &config.NamespaceMetadata{Annotations: map[string]string{"argocd.argoproj.io/sync-options": "ServerSideApply=true"},
					Where: "Application/NS/empty spec.syncPolicy.managedNamespaceMetadata"}},
			{Name: "managed", Owner: "shop", Namespace: "shop", Source: config.Source{ReleaseName: "managed", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/managed", Suspended: true},
				ArgoManagedNamespace: &config.NamespaceMetadata{Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
					Annotations: map[string]string{"owner": "shop", "argocd.argoproj.io/sync-options": "ServerSideApply=true"},
					Where:       "Application/NS/managed spec.syncPolicy.managedNamespaceMetadata"}},
			{Name: "not-created", Owner: "shop", Namespace: "shop-other", Source: config.Source{ReleaseName: "not-created", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/not-created", Suspended: true}},
		},
	},
	{
		name: "only Applications that deploy to the scanned cluster are kept",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: by-url}
spec:
  project: shop
  destination: {server: SERVER_URL/, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: by-name}
spec:
  project: shop
  destination: {name: in-cluster, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: prod}
spec:
  project: shop
  destination: {server: https://prod.example.com:6443, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: prod-eu}
spec:
  project: shop
  destination: {name: prod-eu, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`},
		apps: []config.App{
			{Name: "by-name", Owner: "shop", Namespace: "shop", Source: config.Source{ReleaseName: "by-name", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/by-name", Suspended: true}},
			{Name: "by-url", Owner: "shop", Namespace: "shop", Source: config.Source{ReleaseName: "by-url", Repo: deployRepo, Path: "apps/web"}, Appliers: argoAppliers,
				GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/by-url", Suspended: true}},
		},
		skipped: []string{
			"Application/NS/prod: destination server https://prod.example.com:6443 is not the scanned cluster (driftscan knows it as in-cluster, https://kubernetes.default.svc, SERVER_URL; name it with --argocd-cluster if it is)",
			`Application/NS/prod-eu: destination cluster "prod-eu" is not the scanned cluster (driftscan knows it as in-cluster, https://kubernetes.default.svc, SERVER_URL; name it with --argocd-cluster if it is)`,
		},
	},
	{
		name: "charts from Helm repositories and OCI registries are fetched at the version synced, with values from the chart and from Git; plugins are skipped",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ingress}
spec:
  project: infra
  destination: {server: https://kubernetes.default.svc, namespace: ingress}
  source:
    repoURL: https://kubernetes.github.io/ingress-nginx
    chart: ingress-nginx
    targetRevision: 4.11.*
    helm:
      valueFiles: [values-production.yaml, ./values-production.yaml]
      parameters: [{name: controller.replicaCount, value: "2"}]
status:
  history:
  - {revision: 4.11.2, id: 1}
  - {revision: 4.11.3, id: 2}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop}
spec:
  project: infra
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  sources:
  - repoURL: https://charts.example.com/stable
    chart: shop
    targetRevision: 1.2.0
    helm:
      releaseName: storefront
      valueFiles: [$values/envs/prod/shop.yaml, $chart/x.yaml, "$values/envs/*/shop.yaml"]
  - {repoURL: https://git.example.com/shop/deploy.git, targetRevision: main, ref: values}
  - {repoURL: https://charts.example.com/stable, chart: other, ref: chart}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: cache}
spec:
  project: infra
  destination: {server: https://kubernetes.default.svc, namespace: cache}
  source: {repoURL: registry-1.docker.io/bitnamicharts, chart: redis, targetRevision: 18.0.0}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: gitless}
spec:
  project: infra
  destination: {server: https://kubernetes.default.svc, namespace: gitless}
  source: {repoURL: oci://ghcr.io/example/manifests, targetRevision: 1.x, path: deploy}
status:
  history:
  - {revision: "sha256:` + strings.Repeat("c", 64) + `", id: 1}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: gitless-new}
spec:
  project: infra
  destination: {server: https://kubernetes.default.svc, namespace: gitless}
  source: {repoURL: oci://ghcr.io/example/manifests, path: .}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: mixed}
spec:
  project: infra
  destination: {server: https://kubernetes.default.svc, namespace: infra}
  sources:
  - {repoURL: https://git.example.com/shop/deploy.git, path: apps/web, plugin: {name: sops}}
  - {repoURL: https://git.example.com/shop/deploy.git, path: apps/web-kustomize}
`},
		apps: []config.App{{
			// An OCI registry, as Argo CD names one: no scheme.
			Name: "cache", Owner: "infra", Namespace: "cache",
			Source:   config.Source{Repo: "oci://registry-1.docker.io/bitnamicharts", Chart: "redis", Revision: "18.0.0", ReleaseName: "cache"},
			Appliers: argoAppliers,
			GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/cache", Suspended: true},
		}, {
			// An OCI artifact (oci:// without a chart): the digest Argo CD
			// synced; what its targetRevision names now is pending.
			Name: "gitless", Owner: "infra", Namespace: "gitless",
			Source:         config.Source{Repo: "oci://ghcr.io/example/manifests", Revision: "sha256:" + strings.Repeat("c", 64), Path: "deploy", ReleaseName: "gitless"},
			TargetRevision: "1.x", Appliers: argoAppliers,
			GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/gitless", Suspended: true},
		}, {
			// Never synced: the tag its targetRevision names, latest.
			Name: "gitless-new", Owner: "infra", Namespace: "gitless",
			Source:   config.Source{Repo: "oci://ghcr.io/example/manifests", ReleaseName: "gitless-new"},
			Appliers: argoAppliers,
			GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/gitless-new", Suspended: true},
		}, {
			Name: "ingress", Owner: "infra", Namespace: "ingress",
			Source: config.Source{Repo: "https://kubernetes.github.io/ingress-nginx", Chart: "ingress-nginx", Revision: "4.11.3", ReleaseName: "ingress",
				Helm: &config.HelmSource{ArgoValueFiles: true, ReleaseName: "ingress", ChartValues: []config.ValuesFile{{Path: "values-production.yaml"}}, Set: map[string]string{"controller.replicaCount": "2"}}},
			TargetRevision: "4.11.*", Appliers: argoAppliers,
			GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/ingress", Suspended: true},
		}, {
			Name: "mixed", Owner: "infra", Namespace: "infra",
			Source: config.Source{ReleaseName: "mixed", Repo: deployRepo, Path: "apps/web-kustomize"}, Appliers: argoAppliers,
			GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/mixed", Suspended: true},
		}, {
			Name: "shop", Owner: "infra", Namespace: "shop",
			Source: config.Source{Repo: "https://charts.example.com/stable", Chart: "shop", Revision: "1.2.0", ReleaseName: "shop",
				Helm: &config.HelmSource{ArgoValueFiles: true, ReleaseName: "storefront", ChartValues: []config.ValuesFile{{Repo: deployRepo, Revision: "main", Path: "envs/prod/shop.yaml"}}}},
			Appliers: argoAppliers,
			GitOps:   &report.GitOps{Tool: "argocd", Object: "Application/NS/shop", Suspended: true},
		}},
		skipped: []string{
			"Application/NS/mixed: source 0: config management plugin \"sops\": driftscan runs no plugin, so nothing it renders is compared",
		},
		warnings: []string{
			"NotScanned Application/NS/mixed: not scanned: source 0: config management plugin \"sops\": driftscan runs no plugin, so nothing it renders is compared",
		},
		errors: []string{
			"Application/NS/shop: valueFiles $chart/x.yaml: the source with ref chart is a chart from a Helm repository, not Git",
			"Application/NS/shop: valueFiles $values/envs/*/shop.yaml: driftscan expands a glob in the values files of a chart from Git only, not of one from a Helm repository",
		},
	},
	{
		name: "an Application whose project does not allow its repository is an app error naming the rule, and is never fetched",
		projects: []string{`
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: tenant}
spec:
  sourceRepos: ['https://git.example.com/tenant/*', '!https://git.example.com/tenant/secret*']
  destinations: [{server: '*', namespace: '*'}]
`},
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ok}
spec:
  project: tenant
  destination: {server: https://kubernetes.default.svc, namespace: tenant}
  source: {repoURL: https://git.example.com/tenant/deploy.git, path: apps/web}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: evil}
spec:
  project: tenant
  destination: {server: https://kubernetes.default.svc, namespace: tenant}
  source: {repoURL: "https://user:hunter2@attacker.example/x.git?token=abc", path: apps/web}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: denied}
spec:
  project: tenant
  destination: {server: https://kubernetes.default.svc, namespace: tenant}
  source: {repoURL: https://git.example.com/tenant/secrets.git, path: apps/web}
`, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: orphan}
spec:
  project: nowhere
  destination: {server: https://kubernetes.default.svc, namespace: tenant}
  source: {repoURL: https://git.example.com/tenant/deploy.git, path: apps/web}
`},
		apps: []config.App{
			{
				Name: "denied", Owner: "tenant", Namespace: "tenant", Source: config.Source{Repo: "https://git.example.com/tenant/secrets.git"},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/denied", Suspended: true},
				Error: `repository https://git.example.com/tenant/secrets.git is denied by sourceRepos entry "!https://git.example.com/tenant/secret*" of AppProject NS/tenant`,
			},
			{
				Name: "evil", Owner: "tenant", Namespace: "tenant", Source: config.Source{Repo: "https://user:hunter2@attacker.example/x.git?token=abc"},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/evil", Suspended: true},
				Error: `repository https://attacker.example/x.git?token=redacted matches no allowing sourceRepos entry of AppProject NS/tenant, so driftscan does not fetch it; Argo CD does sync it: its AppProject.IsSourcePermitted counts a denial that does not match (here "!https://git.example.com/tenant/secret*") as an allowing entry, against its documentation (argoproj/argo-cd#21264 reports the same of destinations): add an allowing entry for what the project may use`,
			},
			{
				Name: "ok", Owner: "tenant", Namespace: "tenant", Source: config.Source{ReleaseName: "ok", Repo: "https://git.example.com/tenant/deploy.git", Path: "apps/web"},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/ok", Suspended: true},
			},
			{
				Name: "orphan", Owner: "nowhere", Namespace: "tenant", Source: config.Source{Repo: "https://git.example.com/tenant/deploy.git"},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/orphan", Suspended: true},
				Error: "AppProject NS/nowhere does not exist, so Argo CD does not sync this Application and driftscan does not fetch its source",
			},
		},
	},
	{
		name: "a path or values file that leaves the repository is an app error, never read",
		applications: []string{`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: climb}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: ../../../var/run}
`, valuesApp("token", `[../../../../var/run/secrets/kubernetes.io/serviceaccount/token]`), valuesApp("absolute", `[/etc/passwd]`), valuesApp("remote", `["https://evil.example/values.yaml?sig=abc"]`), valuesApp("secrets", `["secrets://secrets.yaml"]`)},
		apps: []config.App{
			{
				Name: "absolute", Owner: "shop", Namespace: "shop", Source: config.Source{Repo: deployRepo},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/absolute", Suspended: true},
				Error: "valueFiles /etc/passwd leaves the repository",
			},
			{
				Name: "climb", Owner: "shop", Namespace: "shop", Source: config.Source{Repo: deployRepo},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/climb", Suspended: true},
				Error: `path "../../../var/run" leaves the repository`,
			},
			{
				Name: "remote", Owner: "shop", Namespace: "shop", Source: config.Source{Repo: deployRepo},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/remote", Suspended: true},
				Error: "valueFiles https://evil.example/values.yaml?sig=redacted: values files from URLs are not fetched by driftscan",
			},
			{
				// Argo CD's default helm.valuesFileSchemes: https and http.
				Name: "secrets", Owner: "shop", Namespace: "shop", Source: config.Source{Repo: deployRepo},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/secrets", Suspended: true},
				Error: `valueFiles secrets://secrets.yaml: Argo CD refuses it too, the URL scheme "secrets" is not in argocd-cm's helm.valuesFileSchemes (https, http)`,
			},
			{
				Name: "token", Owner: "shop", Namespace: "shop", Source: config.Source{Repo: deployRepo},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/token", Suspended: true},
				Error: "valueFiles ../../../../var/run/secrets/kubernetes.io/serviceaccount/token leaves the repository",
			},
		},
	}, {
		name:     "a values file of a URL scheme argocd-cm's helm.valuesFileSchemes does not allow is an app error, as in Argo CD; one helm-secrets decrypts is not scanned",
		argocdCM: "  helm.valuesFileSchemes: 'secrets+age-import, Secrets , https'\n",
		applications: []string{
			valuesApp("decrypted", `[values.yaml, "secrets://secrets.yaml"]`),
			valuesApp("imported", `["secrets+age-import:///keys/key.txt?secrets.yaml"]`),
			valuesApp("gpg", `["secrets+gpg-import:///keys/key.asc?secrets.yaml"]`),
			valuesApp("plain-http", `["http://values.example/values.yaml"]`),
			valuesApp("no-slashes", `["values:prod.yaml"]`),
		},
		apps: []config.App{
			{
				Name: "gpg", Owner: "shop", Namespace: "shop", Source: config.Source{Repo: deployRepo},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/gpg", Suspended: true}, KustomizeBuild: &config.KustomizeBuild{},
				Error: `valueFiles secrets+gpg-import:///keys/key.asc?secrets.yaml: Argo CD refuses it too, the URL scheme "secrets+gpg-import" is not in argocd-cm's helm.valuesFileSchemes (secrets+age-import, Secrets, https)`,
			},
			{
				Name: "no-slashes", Owner: "shop", Namespace: "shop", Source: config.Source{Repo: deployRepo},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/no-slashes", Suspended: true}, KustomizeBuild: &config.KustomizeBuild{},
				Error: `valueFiles values:prod.yaml: Argo CD refuses it too, the URL scheme "values" is not in argocd-cm's helm.valuesFileSchemes (secrets+age-import, Secrets, https)`,
			},
			{
				Name: "plain-http", Owner: "shop", Namespace: "shop", Source: config.Source{Repo: deployRepo},
				Appliers: argoAppliers, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/NS/plain-http", Suspended: true}, KustomizeBuild: &config.KustomizeBuild{},
				Error: `valueFiles http://values.example/values.yaml: Argo CD refuses it too, the URL scheme "http" is not in argocd-cm's helm.valuesFileSchemes (secrets+age-import, Secrets, https)`,
			},
		},
		skipped: []string{
			"Application/NS/decrypted: valueFiles secrets://secrets.yaml: the helm-secrets plugin decrypts it in Argo CD's repo server (argocd-cm's helm.valuesFileSchemes allows secrets://); driftscan runs no plugin and never decrypts, so nothing the chart renders is compared",
			"Application/NS/imported: valueFiles secrets+age-import:///keys/key.txt?secrets.yaml: the helm-secrets plugin decrypts it in Argo CD's repo server (argocd-cm's helm.valuesFileSchemes allows secrets+age-import://); driftscan runs no plugin and never decrypts, so nothing the chart renders is compared",
		},
		warnings: []string{
			"NotScanned Application/NS/decrypted: not scanned: valueFiles secrets://secrets.yaml: the helm-secrets plugin decrypts it in Argo CD's repo server (argocd-cm's helm.valuesFileSchemes allows secrets://); driftscan runs no plugin and never decrypts, so nothing the chart renders is compared",
			"NotScanned Application/NS/imported: not scanned: valueFiles secrets+age-import:///keys/key.txt?secrets.yaml: the helm-secrets plugin decrypts it in Argo CD's repo server (argocd-cm's helm.valuesFileSchemes allows secrets+age-import://); driftscan runs no plugin and never decrypts, so nothing the chart renders is compared",
		},
	},
}

// valuesApp is an Application of the chart charts/web in project shop with
// the Helm valueFiles given (a YAML flow list).
func valuesApp(name, valueFiles string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ` + name + `}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/shop/deploy.git
    path: charts/web
    helm: {valueFiles: ` + valueFiles + `}
`
}

// TestApplicationsInAnyNamespace lists Applications in any namespace, found
// by a label selector, as the Argo CD of the options' namespace
// reconciles them: its own namespace's, and those of the namespaces
// argocd-cmd-params-cm's application.namespaces enables whose AppProject
// lists their namespace in sourceNamespaces (seen with the real Argo CD in
// e2e TestArgoCDApplicationsInAnyNamespace). Two of the same name are
// named namespace/name, each with the instance name Argo CD tracks it by.
func TestApplicationsInAnyNamespace(t *testing.T) {
	installCRDs(t)
	a, b, c := env.Namespace(t, nil), env.Namespace(t, nil), env.Namespace(t, nil)
	manifest := func(name, project, suite string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ` + name + `, labels: {suite: ` + suite + `}}
spec:
  project: ` + project + `
  destination: {server: https://kubernetes.default.svc}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`
	}
	applyAll(t, "argocd-server", a,
		"apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: shop}\nspec: {sourceRepos: ['*'], sourceNamespaces: ['"+b+"'], destinations: [{server: '*', namespace: '*'}], clusterResourceWhitelist: [{group: '*', kind: '*'}]}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: infra}\nspec: {sourceRepos: ['*'], destinations: [{server: '*', namespace: '*'}], clusterResourceWhitelist: [{group: '*', kind: '*'}]}\n",
		// A regular expression that matches no namespace of the test, and a
		// glob that matches b.
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cmd-params-cm}\ndata: {application.namespaces: '/^nothing-.*$/, ?"+b[1:]+"'}\n")
	applyAll(t, "argocd-server", a, manifest("web", "shop", a), manifest("own-infra", "infra", a))
	applyAll(t, "argocd-server", b, manifest("web", "shop", a), manifest("refused", "infra", a), manifest("api", "shop", "other"))
	applyAll(t, "argocd-server", c, manifest("ignored", "shop", a))
	opts := options(FromArgoCD, a) // Argo CD's namespace
	opts.AllNamespaces = true
	opts.Selector = "suite=" + a
	res := discover(t, opts)
	var got []string
	for _, app := range res.Apps {
		got = append(got, app.Name+" from "+app.GitOps.Object+" as "+app.ArgoInstance+": "+strings.ReplaceAll(app.Error, a, "A"))
	}
	want := []string{
		a + "/web from Application/" + a + "/web as web: ",
		"own-infra from Application/" + a + "/own-infra as own-infra: ",
		b + "/web from Application/" + b + "/web as " + b + "_web: ",
		"refused from Application/" + b + "/refused as " + b + "_refused: AppProject A/infra does not list namespace " + b + " in its sourceNamespaces, so Argo CD refuses to reconcile this Application and driftscan does not fetch its source",
	}
	slices.Sort(got)
	slices.Sort(want)
	if d := diff(want, got); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
	wantSkipped := []string{"Application/" + c + "/ignored: Argo CD in namespace " + a + " does not reconcile Applications in namespace " + c + " (argocd-cmd-params-cm's application.namespaces is /^nothing-.*$/,?" + b[1:] + "), so it never syncs this one"}
	if d := diff(wantSkipped, skippedTexts(res.Skipped, "")); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}

	// Without argocd-cmd-params-cm, Argo CD reconciles its own namespace's
	// Applications only.
	if err := env.Client.CoreV1().ConfigMaps(a).Delete(t.Context(), "argocd-cmd-params-cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res = discover(t, opts)
	got = nil
	for _, app := range res.Apps {
		got = append(got, app.Name)
	}
	if d := diff([]string{"own-infra", "web"}, got); d != "" {
		t.Errorf("apps without application.namespaces (-want +got):\n%s", d)
	}
	if len(res.Skipped) != 3 || !strings.Contains(res.Skipped[0].Reason, "sets no application.namespaces") {
		t.Errorf("skipped without application.namespaces: %q, want the three Applications outside %s", res.Skipped, a)
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings %+v: a ConfigMap that does not exist is Argo CD's defaults, not a loss", res.Warnings)
	}
}

func TestKustomizeBuildOptionsAreReadAsKustomizeReadsItsFlags(t *testing.T) {
	for opts, want := range map[string]config.KustomizeBuild{
		"":                                       {},
		"--enable-helm":                          {EnableHelm: true},
		"--enable-helm=false":                    {},
		"--load-restrictor LoadRestrictionsNone": {LoadRestrictionsNone: true},
		"--load-restrictor=LoadRestrictionsNone --enable-helm=true": {EnableHelm: true, LoadRestrictionsNone: true},
		"--load-restrictor LoadRestrictionsRootOnly":                {},
	} {
		if got := kustomizeBuildOptions(opts); *got != want {
			t.Errorf("%q: %+v, want %+v", opts, *got, want)
		}
	}
}

// An identity that may list Applications and AppProjects but not read
// ConfigMaps cannot tell which namespaces Argo CD reconciles, nor its
// installation id: every namespace's Applications are kept, and any
// installation id is taken for Argo CD's (ArgoInstallationID nil), as
// before driftscan read them, and the scan warns of each ConfigMap.
func TestApplicationsInAnyNamespaceWithSettingsUnreadable(t *testing.T) {
	installCRDs(t)
	a, b := env.Namespace(t, nil), env.Namespace(t, nil)
	allowProjects(t, a, "shop")
	applyAll(t, "argocd-server", a, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cmd-params-cm}\ndata: {application.namespaces: none-of-these}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\ndata: {installationID: east}\n")
	manifest := `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, labels: {suite: ` + a + `}}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`
	applyAll(t, "argocd-server", a, manifest)
	applyAll(t, "argocd-server", b, manifest)
	reader, err := dynamic.NewForConfig(env.BindUser(t, "argo-reader-"+a,
		rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications", "appprojects"}, Verbs: []string{"get", "list"}}))
	if err != nil {
		t.Fatal(err)
	}
	opts := options(FromArgoCD, a)
	opts.AllNamespaces, opts.Selector = true, "suite="+a
	res, err := Discover(t.Context(), reader, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, app := range res.Apps {
		got = append(got, app.Name)
		if app.ArgoInstallationID != nil {
			t.Errorf("%s: installation id %q, want none known", app.Name, *app.ArgoInstallationID)
		}
	}
	if d := diff([]string{a + "/web", b + "/web"}, got); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
	if len(res.Skipped) > 0 {
		t.Errorf("skipped %q, want none", res.Skipped)
	}
	// The scan says what it went without, naming each ConfigMap and why.
	var warned []string
	for _, w := range res.Warnings {
		warned = append(warned, string(w.Code)+" "+w.Object)
		if !strings.Contains(w.Message, "forbidden") {
			t.Errorf("%s: warning %q does not say why it could not be read", w.Object, w.Message)
		}
	}
	want := []string{"ReconcilerSettingsUnreadable ConfigMap/" + a + "/argocd-cmd-params-cm", "ReconcilerSettingsUnreadable ConfigMap/" + a + "/argocd-cm"}
	if d := diff(want, warned); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

// Each app carries its AppProject's resource lists, a namespace whitelist
// that is not set told from one set empty (which permits no namespaced
// kind), so the scan can tell which objects Argo CD refuses to sync.
func TestAppProjectResources(t *testing.T) {
	installCRDs(t)
	ns := env.Namespace(t, nil)
	applyAll(t, "argocd-server", ns, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: team}
spec:
  sourceRepos: ['*']
  clusterResourceWhitelist: [{group: '', kind: Namespace, name: 'team-*'}]
  namespaceResourceBlacklist: [{group: '', kind: ResourceQuota}]
  destinations: [{server: https://kubernetes.default.svc, namespace: shop}]
`, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: locked}
spec:
  sourceRepos: ['*']
  namespaceResourceWhitelist: []
`, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: named}
spec:
  sourceRepos: ['*']
  destinations: [{name: local, namespace: '*'}]
`)
	for _, project := range []string{"team", "locked", "named", "gone"} {
		applyAll(t, "argocd-server", ns, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: `+project+`}
spec:
  project: `+project+`
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`)
	}
	res := discover(t, options(FromArgoCD, ns))
	got := map[string]*config.ProjectResources{}
	refused := map[string]string{}
	for _, app := range res.Apps {
		got[app.Name] = app.ArgoProject
		refused[app.Name] = app.Error
	}
	// locked has no destinations: Argo CD syncs nothing of an app of it
	// (InvalidSpecError), so its source is not fetched.
	if why := refused["locked"]; !strings.Contains(why, "AppProject "+ns+`/locked does not permit the Application's destination, namespace "shop"`) {
		t.Errorf("the app of locked, a project with no destinations: error %q, want its destination refused", why)
	}
	if why := refused["team"] + refused["named"]; why != "" {
		t.Errorf("the apps of team and named are refused (%q): their destinations are permitted, or not checked", why)
	}
	want := map[string]*config.ProjectResources{
		"team": {Project: ns + "/team", ClusterWhitelist: []config.ProjectResource{{Kind: "Namespace", Name: "team-*"}},
			NamespaceBlacklist: []config.ProjectResource{{Kind: "ResourceQuota"}},
			CheckDestinations:  true, Destinations: []config.ProjectDestination{{Server: "https://kubernetes.default.svc", Namespace: "shop"}},
			ClusterServer: "https://kubernetes.default.svc"},
		"locked": {Project: ns + "/locked", NamespaceWhitelistSet: true, NamespaceWhitelist: []config.ProjectResource{},
			CheckDestinations: true, ClusterServer: "https://kubernetes.default.svc"},
		// A destination by a cluster's name: in-cluster may be renamed, so
		// an app naming it by server is not checked.
		"named": {Project: ns + "/named"},
		"gone":  nil,
	}
	if d := diff(want, got); d != "" {
		t.Errorf("project resources (-want +got):\n%s", d)
	}
	if why := got["locked"].Refuses("apps", "Deployment", "web", "shop", true); !strings.Contains(why, "namespaceResourceWhitelist") {
		t.Errorf("locked permits a Deployment (%q): an empty namespaceResourceWhitelist permits nothing", why)
	}
	if why := got["team"].Refuses("", "ConfigMap", "cfg", "monitoring", true); !strings.Contains(why, "does not permit namespace monitoring on cluster https://kubernetes.default.svc") {
		t.Errorf("team permits a ConfigMap in monitoring (%q): its destinations name shop only", why)
	}
}
