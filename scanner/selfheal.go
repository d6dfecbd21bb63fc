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
// does it:
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
// "" when no hint applies.
func selfHealHint(g *report.GitOps, f report.Finding) string {
	if g == nil || !g.SelfHeal || g.Suspended || !f.Class.Deliberate() {
		return ""
	}
	if f.Type != report.TypeAdded {
		return fmt.Sprintf("self-heal is on for %s: this change will be reverted at the next sync; carry it back to Git or suspend sync first", g.Object)
	}
	if g.Tool == "flux" && strings.HasPrefix(g.Object, "Kustomization/") && strings.HasPrefix(f.Manager, "kubectl") {
		return fmt.Sprintf("self-heal is on for %s: kustomize-controller takes over fields that kubectl wrote and removes this one at the next reconcile, since Git does not declare it; carry it back to Git or suspend the Kustomization first", g.Object)
	}
	return fmt.Sprintf("self-heal is on for %s, but it does not remove this: the reconciler applies only what Git declares and leaves fields others added; remove it by hand or add it to Git", g.Object)
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
