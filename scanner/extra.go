package scanner

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/classify"
)

// trackingKeys are the label and annotation that tie a live object to an
// app of a config by its name: no reconciler discovered it, so what a chart
// or a person writes is all there is.
var trackingKeys = []string{"app.kubernetes.io/instance", "argocd.argoproj.io/instance"}

// extraOwners finds the app a live object no app declares belongs to
// (Options.Extra): for an app discovered from Argo CD or Flux, the one
// whose reconciler's own tracking the object carries (classify.Tracking's
// Tracks: what that reconciler would prune), not a label a chart or an
// operator copied; for an app of a config, the one its trackingKeys name.
type extraOwners struct {
	byName  map[string]int // apps of a config
	tracked map[string]int // apps of Argo CD and Flux, by classify.Tracking's Keys
	// argoLabels are the keys of the instance labels of the Argo CD apps
	// (one, unless argocd-cm's application.instanceLabelKey changed).
	argoLabels []string
}

func (s *scan) extraOwners() extraOwners {
	o := extraOwners{byName: map[string]int{}, tracked: map[string]int{}}
	for i, a := range s.r.Apps {
		if a.GitOps == nil {
			o.byName[a.Name] = i
			continue
		}
		t := s.tracking[i]
		for _, k := range t.Keys() {
			o.tracked[k] = i
		}
		if len(t.ArgoApps) > 0 && !slices.Contains(o.argoLabels, t.ArgoInstanceLabel()) {
			o.argoLabels = append(o.argoLabels, t.ArgoInstanceLabel())
		}
	}
	return o
}

// of is the app the listed item belongs to, by its labels and annotations
// (returned for uncounted).
func (o extraOwners) of(s *scan, it *listItem) (int, map[string]string, bool) {
	labels, annotations := it.tracking()
	if len(o.tracked) > 0 {
		h := it.head
		gv, _ := schema.ParseGroupVersion(h.APIVersion)
		obj := classify.Object{Group: gv.Group, Version: gv.Version, Kind: h.Kind, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name}
		for _, k := range classify.ClaimKeys(labels, annotations, o.argoLabels) {
			if ai, ok := o.tracked[k]; ok && s.tracking[ai].Tracks(obj, labels, annotations) {
				return ai, annotations, true
			}
		}
	}
	for _, k := range trackingKeys {
		name := labels[k]
		if name == "" {
			name = annotations[k]
		}
		if ai, ok := o.byName[name]; ok {
			return ai, annotations, true
		}
	}
	return -1, nil, false
}

// argoCompareOptions is the annotation in which Git sets Argo CD compare
// options for one object, comma-separated.
const argoCompareOptions = "argocd.argoproj.io/compare-options"

// uncounted says whether an undeclared live object of an app, which the
// app's tracking t names, is one Argo CD leaves out of the app's
// sync status (controller/state.go, CompareAppState), seen with the real
// Argo CD (e2e TestExtraObjectsArgoCDDoesNotCount): a sync hook (hook), which it
// never prunes either (gitops-engine skips hooks when it builds a sync's
// tasks) and runs again at each sync, so it stays between syncs; an
// object whose compare options say IgnoreExtraneous (ignored), which a
// sync with prune deletes unless it also says Prune=false, as kustomize's
// generators are told to mark what they generate. An object marked
// Prune=false alone is left and counted: the app stays OutOfSync. As
// hookOf, for every app but a Flux one. Of a Flux HelmRelease, Helm's
// hooks (helm.sh/hook, of any type: Helm never installs one it does not
// know) are no extra objects either: helm-controller post-renders them
// with the templates (Helm 4's combined strategy, its default), so they
// carry its labels, and Helm deletes them by their delete policy, never
// at an upgrade (e2e TestExtraObjectsOfAFluxHelmRelease). To
// kustomize-controller these marks mean nothing: it applies and prunes
// such an object as any other.
func uncounted(t classify.Tracking, annotations map[string]string) (ignored, hook bool) {
	if t.FluxKind != "" {
		_, helmHook := annotations[helmHookAnnotation]
		return false, helmHook && t.FluxKind == "HelmRelease"
	}
	if key, _ := argoHook(annotations); key != "" {
		return false, true
	}
	return argoOption(annotations, argoCompareOptions, "IgnoreExtraneous"), false
}
