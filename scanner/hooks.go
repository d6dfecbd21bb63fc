package scanner

import (
	"strings"

	"github.com/calricon/driftscan/config"
)

// The annotations that make an object a sync hook rather than desired state.
const (
	argoHookAnnotation = "argocd.argoproj.io/hook"
	helmHookAnnotation = "helm.sh/hook"
)

// hookOf says why an object annotated ann is not desired state the way
// app's reconciler sees it, or "" when it is. Argo CD runs an object annotated
// argocd.argoproj.io/hook (PreSync, Sync, PostSync, SyncFail, PostDelete)
// or helm.sh/hook (Argo CD maps Helm's hooks onto its own) at its phase of a
// sync and then, by its delete policy, deletes it; one annotated
// argocd.argoproj.io/hook: Skip it never applies. None of them counts
// towards the app's sync status, so comparing them would report them
// Missing, or drifted, after every clean sync. Helm's crd-install is no hook
// (Helm marks CRDs with it). Flux's kustomize-controller applies every
// object of a Kustomization, hooks included, so for a Flux app they are
// compared like any other; the Helm renderer leaves Helm's hooks out of a
// chart for every app, as Helm does.
func hookOf(app config.App, ann map[string]string) string {
	if app.GitOps != nil && app.GitOps.Tool == "flux" {
		return ""
	}
	if v, ok := ann[argoHookAnnotation]; ok {
		for _, t := range strings.Split(v, ",") {
			if strings.TrimSpace(t) != "Skip" {
				return argoHookAnnotation + ": " + v + ": Argo CD runs it during a sync and does not count it towards the app's sync status"
			}
		}
		return argoHookAnnotation + ": Skip: Argo CD never applies it"
	}
	if v, ok := ann[helmHookAnnotation]; ok && v != "crd-install" {
		return helmHookAnnotation + ": " + v + ": Argo CD runs it as a sync hook and does not count it towards the app's sync status"
	}
	return ""
}

// The annotations by which Git tells Flux's kustomize-controller how to
// apply an object (its apply options: ExclusionSelector and
// IfNotPresentSelector, kustomization_controller.go).
const (
	fluxSSAAnnotation       = "kustomize.toolkit.fluxcd.io/ssa"
	fluxReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"
)

// fluxApplyPolicy says how kustomize-controller applies an object of app
// annotated ann, when it is app's applier (AppliedAsFlux): never (why it
// does not, for `ssa: Ignore` and `reconcile: disabled`), only while it is
// missing (createOnly, for `ssa: IfNotPresent`: it creates it and never
// updates it), or as any other ("", false). Values compare as
// kustomize-controller compares them (fluxcd/pkg/ssa utils.AnyInMetadata),
// without case. kustomize-controller reads labels too; only annotations
// are read here.
func fluxApplyPolicy(app config.App, ann map[string]string) (never string, createOnly bool) {
	if app.AppliedAs != config.AppliedAsFlux {
		return "", false
	}
	switch ssa := ann[fluxSSAAnnotation]; {
	case strings.EqualFold(ann[fluxReconcileAnnotation], "disabled"):
		return fluxReconcileAnnotation + ": " + ann[fluxReconcileAnnotation], false
	case strings.EqualFold(ssa, "Ignore"):
		return fluxSSAAnnotation + ": " + ssa, false
	case strings.EqualFold(ssa, "IfNotPresent"):
		return "", true
	}
	return "", false
}
