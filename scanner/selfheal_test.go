package scanner

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

func TestSelfHealHintSaysWhatEachReconcilerReallyDoes(t *testing.T) {
	argo := &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", SelfHeal: true}
	ks := &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/web", SelfHeal: true}
	hr := &report.GitOps{Tool: "flux", Object: "HelmRelease/flux-system/web", SelfHeal: true}
	for _, c := range []struct {
		name string
		g    *report.GitOps
		f    report.Finding
		want string
	}{
		{"Argo CD puts back a field Git declares", argo, report.Finding{Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}, "will be reverted at the next sync"},
		{"Flux puts back a field Git declares that was removed", ks, report.Finding{Type: report.TypeRemoved, Class: report.ClassPipeline, Manager: "deploy"}, "will be reverted at the next sync"},
		{"Argo CD leaves a label Git does not declare", argo, report.Finding{Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label"}, "does not remove this"},
		{"kustomize-controller takes over and removes what kubectl added", ks, report.Finding{Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label"}, "removes this one at the next reconcile"},
		{"kustomize-controller leaves what another tool added", ks, report.Finding{Type: report.TypeAdded, Class: report.ClassPipeline, Manager: "deploy-pipeline"}, "does not remove this"},
		{"helm-controller's drift detection compares only the manifest", hr, report.Finding{Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label"}, "does not remove this"},
		{"no hint for an operator's change", argo, report.Finding{Type: report.TypeChanged, Class: report.ClassOperator}, ""},
		{"a sync window defers the revert", &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", SelfHeal: true, SyncBlocked: "the deny sync window \"0 22 * * *\" for 8h of AppProject argocd/shop blocks automated syncs until 2026-12-08 06:00 UTC"},
			report.Finding{Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}, "self-heal is on for Application/argocd/web, but the deny sync window \"0 22 * * *\" for 8h of AppProject argocd/shop blocks automated syncs until 2026-12-08 06:00 UTC: this change holds until then, and the next sync reverts it"},
		{"a build that fails defers kustomize-controller's take-over", &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/web", SelfHeal: true, SyncBlocked: "the build of Kustomization/flux-system/web at abc fails (boom), and kustomize-controller applies nothing of it until Git moves past that revision"},
			report.Finding{Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label"}, "but the build of Kustomization/flux-system/web at abc fails (boom), and kustomize-controller applies nothing of it until Git moves past that revision: this change holds until then"},
		{"no hint when sync is suspended", &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", SelfHeal: true, Suspended: true}, report.Finding{Type: report.TypeChanged, Class: report.ClassHuman}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := selfHealHint(c.g, hintFacts{kind: "ConfigMap"}, c.f)
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("hint = %q, want it to say %q", got, c.want)
			}
		})
	}
}

// A Kustomization whose apply fails in its last stage still applies its
// earlier ones at every retry (seen with kustomize-controller: e2e
// TestFluxFailedApplyStillAppliesItsFirstStages): a change of those holds
// only as long as any other, the rest until the apply passes.
func TestSelfHealHintOfAnApplyThatFailsInALaterStage(t *testing.T) {
	g := &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/web", SelfHeal: true,
		SyncBlocked:       "the apply of Kustomization/flux-system/web at abc fails (ConfigMap/web/Bad_Name dry-run failed (Invalid): boom): kustomize-controller applies CustomResourceDefinitions, Namespaces, ClusterRoles and *Class kinds first, and nothing else of it until the apply passes",
		SyncBlockedExcept: []string{"CustomResourceDefinition.apiextensions.k8s.io", "Namespace", "ClusterRole.rbac.authorization.k8s.io", "*Class", "*Class.*"}}
	edit := report.Finding{Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}
	for _, c := range []struct {
		group, kind, want string
	}{
		{"", "ConfigMap", "this change holds until then"},
		{"apps", "Deployment", "this change holds until then"},
		{"", "Namespace", "will be reverted at the next sync"},
		{"rbac.authorization.k8s.io", "ClusterRole", "will be reverted at the next sync"},
		{"rbac.authorization.k8s.io", "Role", "this change holds until then"},
		{"apiextensions.k8s.io", "CustomResourceDefinition", "will be reverted at the next sync"},
		{"storage.k8s.io", "StorageClass", "will be reverted at the next sync"},
		{"scheduling.k8s.io", "PriorityClass", "will be reverted at the next sync"},
	} {
		if got := selfHealHint(g, hintFacts{group: c.group, kind: c.kind}, edit); !strings.Contains(got, c.want) {
			t.Errorf("%s.%s: hint %q, want it to say %q", c.kind, c.group, got, c.want)
		}
	}
}

// kustomize-controller leaves out of its take-over of kubectl's fields an
// object Git or the live object marks ssa: Merge (seen with
// kustomize-controller: e2e TestFluxMergeKeepsWhatKubectlAdded).
func TestSelfHealHintOfAnObjectMarkedSSAMerge(t *testing.T) {
	ks := &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/web", SelfHeal: true}
	label := report.Finding{Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label"}
	if got := selfHealHint(ks, hintFacts{kind: "ConfigMap", fluxMerge: true}, label); !strings.Contains(got, "it does not remove this") {
		t.Errorf("hint for a label kubectl added to an object marked ssa: Merge = %q, want that it stays", got)
	}
	if got := selfHealHint(ks, hintFacts{kind: "ConfigMap"}, label); !strings.Contains(got, "removes this one at the next reconcile") {
		t.Errorf("hint for a label kubectl added to an object not so marked = %q, want it removed", got)
	}
	flux := config.App{AppliedAs: config.AppliedAsFlux}
	obj := func(labels, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		return u
	}
	mark := map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "merge"}
	for _, c := range []struct {
		name string
		app  config.App
		objs []*unstructured.Unstructured
		want bool
	}{
		{"an annotation of Git's, any case", flux, []*unstructured.Unstructured{obj(nil, nil), obj(nil, mark)}, true},
		{"a label of the live object's", flux, []*unstructured.Unstructured{obj(mark, nil), nil}, true},
		{"another policy", flux, []*unstructured.Unstructured{obj(nil, map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Override"})}, false},
		{"an app Flux does not apply", config.App{}, []*unstructured.Unstructured{obj(nil, mark)}, false},
	} {
		if got := fluxMerges(c.app, c.objs...); got != c.want {
			t.Errorf("%s: fluxMerges = %v, want %v", c.name, got, c.want)
		}
	}
}

// While a Kustomization's apply fails, each retry takes over what kubectl
// wrote in the objects whose dry run passes without applying Git's value
// (seen with kustomize-controller: e2e
// TestFluxFailedApplyStillAppliesItsFirstStages): a value the applier owns
// and Git does not hold is then most likely a kubectl edit.
func TestTakenOverHintWhileAKustomizationsApplyFails(t *testing.T) {
	cl, err := classify.New(classify.Options{Appliers: []string{"kustomize-controller"}})
	if err != nil {
		t.Fatal(err)
	}
	failing := &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/web", SelfHeal: true, SyncBlockedReason: "ReconciliationFailed",
		SyncBlocked:       "the apply of Kustomization/flux-system/web at abc fails (ConfigMap/web/Bad_Name dry-run failed (Invalid): boom): kustomize-controller applies CustomResourceDefinitions, Namespaces, ClusterRoles and *Class kinds first, and nothing else of it until the apply passes",
		SyncBlockedExcept: []string{"Namespace"}}
	build := *failing
	build.SyncBlockedReason = "BuildFailed"
	owned := report.Finding{Type: report.TypeChanged, Class: report.ClassUnknown, Manager: "kustomize-controller"}
	added := owned
	added.Type = report.TypeAdded
	for _, c := range []struct {
		name     string
		g        *report.GitOps
		kind     string
		webhooks bool
		f        report.Finding
		want     string
		merge    bool
	}{
		{"an object marked ssa: Merge keeps what kubectl wrote", failing, "ConfigMap", false, owned, "", true},
		{"a changed value the applier owns", failing, "ConfigMap", false, owned, "kustomize-controller owns this value but never applied it: the apply of Kustomization/flux-system/web at abc fails", false},
		{"it says what the apply that passes does", failing, "ConfigMap", false, owned, "most likely a change made with kubectl (the audit log says who); it holds until the apply passes, and that apply reverts it", false},
		{"an added field is removed then", failing, "ConfigMap", false, added, "that apply removes it, since Git does not declare it", false},
		{"a kind of a stage that is applied", failing, "Namespace", false, owned, "", false},
		{"a build that fails takes nothing over", &build, "ConfigMap", false, owned, "", false},
		{"a webhook's rewrite is the applier's too", failing, "ConfigMap", true, owned, "", false},
		{"a person's own field", failing, "ConfigMap", false, report.Finding{Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}, "", false},
	} {
		got := takenOverHint(c.g, hintFacts{kind: c.kind, webhooks: c.webhooks, fluxMerge: c.merge}, c.f, cl)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: hint %q, want it to say %q", c.name, got, c.want)
		}
	}
}

// A field one of Argo CD's own ignoreDifferences hides is out of its diff,
// but a sync applies Git's value unless RespectIgnoreDifferences=true (seen
// with the real Argo CD: e2e TestArgoCDSyncAppliesIgnoredFieldsUnlessRespectIgnoreDifferences).
func TestArgoIgnoredHintSaysWhetherASyncPutsGitsValueBack(t *testing.T) {
	argo := &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", SelfHeal: true}
	respect := &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", RespectIgnoreDifferences: true}
	flux := &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/web", SelfHeal: true}
	argoRule := &report.IgnoreRule{Owner: "web", Reason: "imported from Argo CD", Reconciler: "argocd"}
	ownRule := &report.IgnoreRule{Owner: "web", Reason: "HPA"}
	replicas := func(rule *report.IgnoreRule, typ report.Type) report.Finding {
		return report.Finding{Path: ".spec.replicas", Type: typ, Class: report.ClassOperator, Ignored: rule != nil, IgnoreRule: rule}
	}
	for _, c := range []struct {
		name string
		g    *report.GitOps
		f    report.Finding
		want string
	}{
		{"without RespectIgnoreDifferences a sync applies Git's value", argo, replicas(argoRule, report.TypeChanged), "puts it back; add the sync option RespectIgnoreDifferences=true"},
		{"with it the live value stays", respect, replicas(argoRule, report.TypeChanged), "keeps the live value"},
		{"even with it a rule of Argo CD's diff alone is applied", respect, replicas(&report.IgnoreRule{Owner: "argocd", Reason: "ignoreAggregatedRoles", Reconciler: "argocd", DiffOnly: true}, report.TypeChanged), "does not cover this rule): the next sync, for any change, puts it back"},
		{"the option is no way out for a rule of the diff alone", argo, replicas(&report.IgnoreRule{Owner: "argocd", Reason: "ignoreAggregatedRoles", Reconciler: "argocd", DiffOnly: true}, report.TypeChanged), "RespectIgnoreDifferences does not cover"},
		{"a field Git does not declare is left by any sync", argo, replicas(argoRule, report.TypeAdded), ""},
		{"a rule of driftscan's own is not Argo CD's", argo, replicas(ownRule, report.TypeChanged), ""},
		{"a finding no rule hides", argo, replicas(nil, report.TypeChanged), ""},
		{"a Flux app", flux, replicas(&report.IgnoreRule{Owner: "web", Reason: "imported from Flux", Reconciler: "flux"}, report.TypeChanged), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := argoIgnoredHint(c.g, c.f)
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("hint = %q, want it to say %q", got, c.want)
			}
		})
	}
}

// An Argo CD app synced with Replace=true: a field Git does not declare is
// out of the diff, but the next sync (self-heal or not) replaces the object
// and drops it (e2e TestArgoCDReplaceDropsWhatGitDoesNotDeclare).
func TestSelfHealHintForAnAppSyncedWithReplace(t *testing.T) {
	replace := &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", Replace: true, Suspended: true}
	label := report.Finding{Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label"}
	if got := selfHealHint(replace, hintFacts{kind: "ConfigMap"}, label); !strings.Contains(got, "replaces the whole object and drops it") {
		t.Errorf("hint for an added label = %q", got)
	}
	changed := report.Finding{Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}
	if got := selfHealHint(replace, hintFacts{kind: "ConfigMap"}, changed); got != "" {
		t.Errorf("hint for a change of a field Git declares, sync suspended = %q, want none", got)
	}
}

// One object of an Argo CD app sets Replace=true among its sync options.
func TestArgoReplacedReadsTheObjectsSyncOptions(t *testing.T) {
	argo := config.App{GitOps: &report.GitOps{Tool: "argocd"}}
	flux := config.App{GitOps: &report.GitOps{Tool: "flux"}}
	for _, c := range []struct {
		app  config.App
		ann  string
		want bool
	}{
		{argo, "Replace=true", true},
		{argo, "Prune=false, Replace=true", true},
		{argo, "Replace=false", false},
		{argo, "ServerSideApply=true", false},
		{flux, "Replace=true", false},
		{config.App{}, "Replace=true", false},
	} {
		if got := argoReplaced(c.app, map[string]string{argoSyncOptions: c.ann}); got != c.want {
			t.Errorf("%v, %q: %v, want %v", c.app.GitOps, c.ann, got, c.want)
		}
	}
}

// helm-controller's drift detection compares the release's manifest, which
// holds none of the chart's crds/ (seen with the real one, e2e
// TestFluxHelmReleaseCRDs): a person's edit of such a CRD stays until an
// upgrade applies the chart's CRDs again, or, when helm-controller keeps a
// CRD that exists (upgrade.crds Skip, Create with client-side apply),
// until someone does; then a difference helm-controller owns is a newer
// CRD it will not apply. The hint replaces self-heal's, false here.
func TestChartCRDHint(t *testing.T) {
	hr := &report.GitOps{Tool: "flux", Object: "HelmRelease/flux-system/web", SelfHeal: true}
	edit := report.Finding{Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}
	newer := report.Finding{Type: report.TypeChanged, Class: report.ClassUnknown, Manager: "helm-controller"}
	cl, err := classify.New(classify.Options{Appliers: []string{"helm-controller"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		chartCRD bool
		h        *config.HelmSource
		f        report.Finding
		want     string
	}{
		{"the next upgrade applies it again", true, &config.HelmSource{UpgradeCRDs: "Create"}, edit, "stays until the next upgrade of HelmRelease/flux-system/web"},
		{"no upgrade applies it", true, &config.HelmSource{UpgradeCRDs: "Skip", CRDsKept: true}, edit, "stays until someone applies the CRD again"},
		{"client-side apply keeps it", true, &config.HelmSource{UpgradeCRDs: "Create", CRDsKept: true}, edit, "(upgrade.crds: Create, with client-side apply)"},
		{"a newer CRD never applied", true, &config.HelmSource{UpgradeCRDs: "Create", CRDsKept: true}, newer, "set spec.upgrade.crds: CreateReplace"},
		{"a newer CRD the next upgrade applies", true, &config.HelmSource{UpgradeCRDs: "Create"}, newer, ""},
		{"a template's object", false, &config.HelmSource{UpgradeCRDs: "Create"}, edit, ""},
		{"an operator's change", true, &config.HelmSource{UpgradeCRDs: "Create"}, report.Finding{Type: report.TypeChanged, Class: report.ClassOperator}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := chartCRDHint(c.chartCRD, c.h, hr, c.f, cl)
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("hint = %q, want it to say %q", got, c.want)
			}
		})
	}
}
