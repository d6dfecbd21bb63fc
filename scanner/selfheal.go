package scanner

import (
	"fmt"
	"strings"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// selfHealHint says what the app's reconciler, with self-heal on, does to a
// pipeline's or a human's change at its next sync, as each tool really
// does it (and, for an Argo CD app synced with Replace=true, what any sync
// does to a field Git does not declare: kubectl replace drops it):
//   - a field Git declares (Changed, Removed) is put back by Argo CD and
//     by Flux alike;
//   - a field Git does not declare (Added) stays with Argo CD, whose sync
//     (server-side apply, or kubectl apply's three-way merge) touches only
//     what Git declares and what it applied itself; and with Flux's
//     helm-controller, whose drift detection compares only the release's
//     manifest. Flux's kustomize-controller takes over what kubectl wrote
//     (every kubectl* manager with an Update, and kubectl's server-side
//     apply: fluxcd/pkg/ssa field-manager cleanup) before it applies, so
//     such a field Git does not declare is removed.
//
// While the reconciler applies nothing (GitOps.SyncBlocked: an Argo CD
// sync window or a failed sync it does not retry, a Kustomization or a
// HelmRelease waiting for its dependencies, a Kustomization whose build or
// apply fails, a HelmRelease out of retries), such a change
// holds until then; a kind the reconciler still applies meanwhile
// (GitOps.SyncBlockedExcept: the earlier stages of a Kustomization whose
// apply fails in a later one) is reverted all the same. "" when no hint
// applies.
func selfHealHint(g *report.GitOps, o hintFacts, f report.Finding) string {
	if g == nil || !f.Class.Deliberate() {
		return ""
	}
	if g.Replace && f.Type == report.TypeAdded {
		// Out of Argo CD's diff, so self-heal does not act; but whatever
		// syncs next replaces the object whole.
		return fmt.Sprintf("%s syncs with Replace=true (kubectl replace): this field Git does not declare is out of Argo CD's diff, but the next sync, for any change, replaces the whole object and drops it; add it to Git to keep it", g.Object)
	}
	if !g.SelfHeal || g.Suspended {
		return ""
	}
	takenOver := f.Type == report.TypeAdded && g.Tool == "flux" && strings.HasPrefix(g.Object, "Kustomization/") && strings.HasPrefix(f.Manager, "kubectl") && !o.fluxMerge
	if (f.Type != report.TypeAdded || takenOver) && g.SyncBlockedFor(o.group, o.kind) {
		// A sync window, a failed sync or build: self-heal waits.
		return fmt.Sprintf("self-heal is on for %s, but %s: this change holds until then, and the next sync reverts it; carry it back to Git or suspend sync before syncs resume", g.Object, g.SyncBlocked)
	}
	if f.Type != report.TypeAdded {
		return fmt.Sprintf("self-heal is on for %s: this change will be reverted at the next sync; carry it back to Git or suspend sync first", g.Object)
	}
	if takenOver {
		return fmt.Sprintf("self-heal is on for %s: kustomize-controller takes over fields that kubectl wrote and removes this one at the next reconcile, since Git does not declare it; carry it back to Git or suspend the Kustomization first", g.Object)
	}
	return fmt.Sprintf("self-heal is on for %s, but it does not remove this: the reconciler applies only what Git declares and leaves fields others added; remove it by hand or add it to Git", g.Object)
}

// hintFacts are what the hints need to know of the object a finding is
// in: its API group and kind, whether a mutating webhook admits it, and
// whether Git or the live object marks it `kustomize.toolkit.fluxcd.io/ssa:
// Merge` (fluxMerges).
type hintFacts struct {
	group, kind string
	webhooks    bool
	fluxMerge   bool
}

// takenOverHint says what a field of the applier's with a value Git does
// not hold is while a Kustomization's apply fails in the field's stage
// (GitOps.SyncBlockedReason ReconciliationFailed, SyncBlockedFor its kind):
// at every retry kustomize-controller dry-runs the stage, and for each
// object whose dry run passes it takes over the fields kubectl wrote
// (fluxcd/pkg/ssa's field-manager cleanup, a real patch of managedFields)
// before the failing object ends the stage, so Git's value is never
// applied. Such a field was most likely changed (or added) with kubectl
// and now shows as kustomize-controller's (seen with kustomize-controller:
// e2e TestFluxFailedApplyStillAppliesItsFirstStages); the classifier's
// hint, which assumes the applier wrote it, is replaced. Not for an object
// a mutating webhook admits (the webhook's rewrite of what the applier
// sends is the applier's too), nor one marked `ssa: Merge` (no take-over).
// "" for any other finding.
func takenOverHint(g *report.GitOps, o hintFacts, f report.Finding, cl *classify.Classifier) string {
	if g == nil || o.webhooks || o.fluxMerge || g.Tool != "flux" || !strings.HasPrefix(g.Object, "Kustomization/") || g.SyncBlockedReason != "ReconciliationFailed" ||
		!g.SelfHeal || g.Suspended || !g.SyncBlockedFor(o.group, o.kind) ||
		f.Class != report.ClassUnknown || f.Manager == "" || !cl.IsApplier(f.Manager) || f.Type == report.TypeRemoved {
		return ""
	}
	next := "reverts it"
	if f.Type == report.TypeAdded {
		next = "removes it, since Git does not declare it"
	}
	return fmt.Sprintf("%s owns this value but never applied it: %s, and each retry takes over the fields kubectl wrote in objects whose dry run passes without applying Git's values, so this is most likely a change made with kubectl (the audit log says who); it holds until the apply passes, and that apply %s; carry it back to Git or suspend the Kustomization first", f.Manager, g.SyncBlocked, next)
}

// chartCRDHint says what Flux's helm-controller does with a CRD from its
// chart's crds/ folder (chartCRD). Its drift detection compares the
// release's manifest, which holds none of them, so a pipeline's or a
// person's change stays until an upgrade (a new chart version, changed
// values) applies the chart's CRDs again; which it never does when it
// keeps a CRD that exists (HelmSource.CRDsKept: upgrade.crds Skip, or
// Create with client-side apply), so then a difference helm-controller
// owns is a newer chart's CRD it will not apply. "" for any other finding.
func chartCRDHint(chartCRD bool, h *config.HelmSource, g *report.GitOps, f report.Finding, cl *classify.Classifier) string {
	if !chartCRD || h == nil || g == nil {
		return ""
	}
	kept := "upgrade.crds: " + h.UpgradeCRDs
	if h.UpgradeCRDs == "Create" {
		kept += ", with client-side apply"
	}
	switch {
	case f.Class.Deliberate() && h.CRDsKept:
		return fmt.Sprintf("helm-controller's drift detection does not cover the CRDs of a chart's crds/ folder, and %s never updates one that exists (%s): this change stays until someone applies the CRD again", g.Object, kept)
	case f.Class.Deliberate():
		return fmt.Sprintf("helm-controller's drift detection does not cover the CRDs of a chart's crds/ folder: this change stays until the next upgrade of %s (a new chart version or values) applies the chart's CRDs again (upgrade.crds: %s); carry it back to the chart, or undo it", g.Object, h.UpgradeCRDs)
	case h.CRDsKept && f.Manager != "" && cl.IsApplier(f.Manager):
		return fmt.Sprintf("helm-controller created this CRD from the chart's crds/ and never updates one that exists (%s): the chart's CRD in Git is not applied; set spec.upgrade.crds: CreateReplace on %s, or apply it yourself", kept, g.Object)
	}
	return ""
}

// managedNamespaceHint says what Argo CD does with a change of the
// namespace metadata it manages for the app (desired.managedNamespace):
// it applies spec.syncPolicy.managedNamespaceMetadata at each sync, with
// server-side apply, and never compares it (controller/sync_namespace.go;
// seen in e2e TestArgoCDManagedNamespaceMetadata), so a change of what it
// declares leaves the app Synced and self-heal idle until a sync, for any
// reason, puts it back; a key it does not declare stays. "" for any other
// finding.
func managedNamespaceHint(managed bool, g *report.GitOps, f report.Finding) string {
	if !managed || g == nil {
		return ""
	}
	if f.Type == report.TypeAdded {
		return fmt.Sprintf("%s applies only the namespace metadata it declares, with server-side apply: it leaves this key", g.Object)
	}
	return fmt.Sprintf("%s applies spec.syncPolicy.managedNamespaceMetadata at each sync but never compares it: the app shows Synced and self-heal does not act, and the next sync, for any change, puts Git's value back", g.Object)
}

// argoIgnoredHint says what Argo CD does at a sync with a field Git
// declares that one of its own ignoreDifferences (the Application's or
// argocd-cm's) hides: the field is out of its diff, so the app shows
// Synced and self-heal never acts on it, but a sync applies Git's value
// all the same unless the Application has the sync option
// RespectIgnoreDifferences=true (controller/sync.go normalizeTargetResources):
// the next sync, for any other change, puts Git's value back (as it does
// with RespectIgnoreDifferences for a rule of its diff alone, DiffOnly:
// argocd-cm's ignoreAggregatedRoles). "" for any
// other finding; a field Git does not declare is left by any sync.
func argoIgnoredHint(g *report.GitOps, f report.Finding) string {
	if g == nil || g.Tool != "argocd" || !f.Ignored || f.IgnoreRule == nil || f.IgnoreRule.Reconciler != "argocd" || f.Type == report.TypeAdded {
		return ""
	}
	if f.IgnoreRule.DiffOnly {
		return fmt.Sprintf("Argo CD leaves this field out of its diff, so %s shows Synced and self-heal never acts on it, but a sync still applies Git's value, whatever its sync options (RespectIgnoreDifferences does not cover this rule): the next sync, for any change, puts it back", g.Object)
	}
	if g.RespectIgnoreDifferences {
		return fmt.Sprintf("Argo CD leaves this field out of its diff and, with RespectIgnoreDifferences=true, keeps the live value when %s syncs", g.Object)
	}
	return fmt.Sprintf("Argo CD leaves this field out of its diff, so %s shows Synced and self-heal never acts on it, but a sync still applies Git's value: the next sync, for any change, puts it back; add the sync option RespectIgnoreDifferences=true to keep the live value, or carry it back to Git", g.Object)
}

// argoSyncOptions is the annotation in which Git sets Argo CD sync options
// for one object, comma-separated (`Prune=false,Replace=true`).
const argoSyncOptions = "argocd.argoproj.io/sync-options"

// argoReplaced reports whether Git's object, of an Argo CD app, sets the
// sync option Replace=true for itself: Argo CD then syncs it with kubectl
// replace, as it does every object of an app that sets it.
func argoReplaced(app config.App, ann map[string]string) bool {
	if app.GitOps == nil || app.GitOps.Tool != "argocd" {
		return false
	}
	return argoOption(ann, argoSyncOptions, "Replace=true")
}

// argoOption reports whether the comma-separated options of annotation key
// hold opt, as Argo CD reads them (gitops-engine's HasAnnotationOption).
func argoOption(ann map[string]string, key, opt string) bool {
	for o := range strings.SplitSeq(ann[key], ",") {
		if strings.TrimSpace(o) == opt {
			return true
		}
	}
	return false
}

// keptChartHint explains a difference the applier owns in an app whose
// chart source-controller builds from Git with reconcileStrategy
// ChartVersion (config.HelmSource.KeptChartVersion): a chart changed in Git
// at the version released is never built, so helm-controller never applies
// the change, however long one waits.
func keptChartHint(h *config.HelmSource, f report.Finding, cl *classify.Classifier) string {
	if h == nil || h.KeptChartVersion == "" || f.Manager == "" || !cl.IsApplier(f.Manager) {
		return ""
	}
	return fmt.Sprintf("if the chart's version in Git is still %s, %s never applies this: source-controller (reconcileStrategy ChartVersion, the default) keeps the chart it built for that version; bump the version in Chart.yaml, or set reconcileStrategy: Revision", h.KeptChartVersion, f.Manager)
}
