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
