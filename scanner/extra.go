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

// of is the app the listed item belongs to, by its labels and annotations.
func (o extraOwners) of(s *scan, it *listItem) (int, bool) {
	labels, annotations := it.tracking()
	if len(o.tracked) > 0 {
		h := it.head
		gv, _ := schema.ParseGroupVersion(h.APIVersion)
		obj := classify.Object{Group: gv.Group, Version: gv.Version, Kind: h.Kind, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name}
		for _, k := range classify.ClaimKeys(labels, annotations, o.argoLabels) {
			if ai, ok := o.tracked[k]; ok && s.tracking[ai].Tracks(obj, labels, annotations) {
				return ai, true
			}
		}
	}
	for _, k := range trackingKeys {
		name := labels[k]
		if name == "" {
			name = annotations[k]
		}
		if ai, ok := o.byName[name]; ok {
			return ai, true
		}
	}
	return -1, false
}
