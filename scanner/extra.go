package scanner

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/classify"
)

// trackingKeys are the label and annotation that tie a live object to an
// app of a config by its name: no reconciler discovered it, so what a chart
// or a person writes is all there is.
var trackingKeys = []string{"app.kubernetes.io/instance", "argocd.argoproj.io/instance"}

const argoTrackingID = "argocd.argoproj.io/tracking-id"

// extraOwners finds the app a live object no app declares belongs to
// (Options.Extra): for an app discovered from Argo CD or Flux, the one
// whose reconciler's own tracking the object carries (classify.Tracking's
// Tracks: what that reconciler would prune), not a label a chart or an
// operator copied; for an app of a config, the one its trackingKeys name.
type extraOwners struct {
	byName map[string]int // apps of a config
	argo   map[string]int // Argo CD apps, by each instance name Argo CD writes
	flux   map[string]int // Flux apps, by Kind/namespace/name
}

func (s *scan) extraOwners() extraOwners {
	o := extraOwners{byName: map[string]int{}, argo: map[string]int{}, flux: map[string]int{}}
	for i, a := range s.r.Apps {
		switch {
		case a.GitOps == nil:
			o.byName[a.Name] = i
		case a.GitOps.Tool == "argocd":
			for _, name := range s.tracking[i].ArgoApps {
				o.argo[name] = i
			}
		case a.GitOps.Tool == "flux":
			t := s.tracking[i]
			o.flux[t.FluxKind+"/"+t.FluxNamespace+"/"+t.FluxName] = i
		}
	}
	return o
}

// of is the app the listed item belongs to, by its labels and annotations.
func (o extraOwners) of(s *scan, it *listItem) (int, bool) {
	labels, annotations := it.tracking()
	h := it.head
	gv, _ := schema.ParseGroupVersion(h.APIVersion)
	obj := classify.Object{Group: gv.Group, Version: gv.Version, Kind: h.Kind, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name}
	tracks := func(ai int, ok bool) bool {
		return ok && s.tracking[ai].Tracks(obj, labels, annotations)
	}
	if len(o.argo) > 0 {
		instance, _, _ := strings.Cut(annotations[argoTrackingID], ":")
		if ai, ok := o.argo[instance]; tracks(ai, ok) {
			return ai, true
		}
		if ai, ok := o.argo[labels["app.kubernetes.io/instance"]]; tracks(ai, ok) {
			return ai, true
		}
	}
	if len(o.flux) > 0 {
		for _, kind := range []string{"Kustomization", "HelmRelease"} {
			prefix := classify.FluxLabelPrefix(kind)
			if ai, ok := o.flux[kind+"/"+labels[prefix+"namespace"]+"/"+labels[prefix+"name"]]; tracks(ai, ok) {
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
