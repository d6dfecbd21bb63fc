package scanner

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/render"
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
	switch key, skip := argoHook(ann); {
	case skip:
		return argoHookAnnotation + ": Skip: Argo CD never applies it"
	case key == argoHookAnnotation:
		return key + ": " + ann[key] + ": Argo CD runs it during a sync and does not count it towards the app's sync status"
	case key != "":
		return key + ": " + ann[key] + ": Argo CD runs it as a sync hook and does not count it towards the app's sync status"
	}
	return ""
}

// argoHook is the annotation (argoHookAnnotation or helmHookAnnotation)
// by which Argo CD takes an object for one of its sync hooks, "" for
// none; skip when argocd.argoproj.io/hook names Skip alone, which makes it
// no hook but an object Argo CD never applies (gitops-engine's hook.IsHook
// and hook.Skip: Argo CD's annotation hides Helm's).
func argoHook(ann map[string]string) (key string, skip bool) {
	if v, ok := ann[argoHookAnnotation]; ok {
		for t := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(t) != "Skip" {
				return argoHookAnnotation, false
			}
		}
		return "", true
	}
	if v, ok := ann[helmHookAnnotation]; ok && v != "crd-install" {
		return helmHookAnnotation, false
	}
	return "", false
}

// The annotations by which Git tells Flux's kustomize-controller how to
// apply an object (its apply options: ExclusionSelector and
// IfNotPresentSelector, kustomization_controller.go).
const (
	fluxSSAAnnotation       = render.FluxMarkPrefix + "ssa"
	fluxReconcileAnnotation = render.FluxMarkPrefix + "reconcile"
)

// fluxApplyPolicy says how kustomize-controller applies an object of app
// whose Git marks it by its annotations or its labels (id.FluxLabels), when
// it is app's applier (AppliedAsFlux): never (why it does not, for `ssa:
// Ignore` and `reconcile: disabled`), only while it is missing (createOnly,
// for `ssa: IfNotPresent`: it creates it and never updates it), or as any
// other ("", false). Values compare as kustomize-controller compares them
// (fluxcd/pkg/ssa utils.AnyInMetadata), without case, in either.
func fluxApplyPolicy(app config.App, id render.Ident) (never string, createOnly bool) {
	if app.AppliedAs != config.AppliedAsFlux {
		return "", false
	}
	if never := fluxExcluded(id.Annotations, id.FluxLabels); never != "" {
		return never, false
	}
	return "", fluxSSA("IfNotPresent", id.Annotations, id.FluxLabels)
}

// fluxExcluded is the mark among metadata (labels or annotations) for
// which kustomize-controller skips an object (its ExclusionSelector:
// `reconcile: disabled`, `ssa: Ignore`), as "key: value", or "".
func fluxExcluded(metadata ...map[string]string) string {
	for _, m := range metadata {
		switch {
		case strings.EqualFold(m[fluxReconcileAnnotation], "disabled"):
			return fluxReconcileAnnotation + ": " + m[fluxReconcileAnnotation]
		case strings.EqualFold(m[fluxSSAAnnotation], "Ignore"):
			return fluxSSAAnnotation + ": " + m[fluxSSAAnnotation]
		}
	}
	return ""
}

// fluxSSA says whether any of metadata (labels or annotations) sets
// kustomize.toolkit.fluxcd.io/ssa to policy, the value without case, as
// kustomize-controller compares it (fluxcd/pkg/ssa utils.AnyInMetadata).
func fluxSSA(policy string, metadata ...map[string]string) bool {
	for _, m := range metadata {
		if strings.EqualFold(m[fluxSSAAnnotation], policy) {
			return true
		}
	}
	return false
}

// fluxMerges says whether kustomize-controller leaves what kubectl wrote
// in an object of app: Git or the live object marks it `ssa: Merge`, for
// which its field-manager cleanup is skipped (ApplyCleanupOptions.Exclusions,
// kustomization_controller.go), so a field kubectl added stays and one
// kubectl changed is put back by the apply alone.
func fluxMerges(app config.App, objs ...*unstructured.Unstructured) bool {
	if app.AppliedAs != config.AppliedAsFlux {
		return false
	}
	for _, o := range objs {
		if o != nil && fluxSSA("Merge", o.GetAnnotations(), o.GetLabels()) {
			return true
		}
	}
	return false
}

// fluxLiveMarks reads, once, what the live object of a kustomize-controller
// app is marked with. paused is the hint for a person's or a pipeline's
// change when it carries a mark kustomize-controller skips it for (someone
// paused Flux on this object by hand, as on-call engineers do to keep a
// hotfix): the change is not reverted, whatever self-heal says, until the
// mark goes ("" when it carries none). merge says whether it, or git,
// marks it `ssa: Merge` (fluxMerges). Both zero for any other app.
func fluxLiveMarks(app config.App, live, git *unstructured.Unstructured) (paused string, merge bool) {
	if app.AppliedAs != config.AppliedAsFlux {
		return "", false
	}
	ann, labels := live.GetAnnotations(), live.GetLabels()
	if mark := fluxExcluded(ann, labels); mark != "" {
		paused = fmt.Sprintf("the live object is marked %s: kustomize-controller skips it, so this change stays until the mark is removed; carry it back to Git, then remove the mark", mark)
	}
	return paused, fluxSSA("Merge", ann, labels) || fluxMerges(app, git)
}
