package discover

import (
	"errors"
	"fmt"

	"github.com/gobwas/glob"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
)

// argoFilteredResource is an entry of argocd-cm's resource.exclusions or
// resource.inclusions (util/settings FilteredResource).
type argoFilteredResource struct {
	APIGroups []string `json:"apiGroups"`
	Kinds     []string `json:"kinds"`
	Clusters  []string `json:"clusters"`
}

// argoCoreExclusions are the kinds Argo CD excludes whatever argocd-cm
// says (util/settings coreExcludedResources).
var argoCoreExclusions = []argoFilteredResource{
	{APIGroups: []string{"events.k8s.io", "metrics.k8s.io"}},
	{APIGroups: []string{""}, Kinds: []string{"Event"}},
	{APIGroups: []string{"coordination.k8s.io"}, Kinds: []string{"Lease"}},
}

const (
	argoExclusions = "resource.exclusions"
	argoInclusions = "resource.inclusions"
)

// argoResourceFilter is Argo CD's resource filter as argocd-cm sets it,
// for every destination cluster; forCluster narrows it to one.
type argoResourceFilter struct {
	exclusions, inclusions []argoFilteredResource
}

// argoFilter reads argocd-cm's resource.exclusions and resource.inclusions.
// A key that is not a list of filters is an error naming it; Argo CD then
// fails to compare any app, and the scan keeps the rest.
func (d *discovery) argoFilter(cm *unstructured.Unstructured, data map[string]string) *argoResourceFilter {
	f := &argoResourceFilter{}
	for _, key := range []string{argoExclusions, argoInclusions} {
		text, ok := data[key]
		if !ok {
			continue
		}
		var entries []argoFilteredResource
		if err := yaml.Unmarshal([]byte(text), &entries); err != nil {
			var v any
			if yaml.Unmarshal([]byte(text), &v) == nil {
				err = errors.New("not a list of {apiGroups, kinds, clusters}")
			}
			d.fail(ref(cm), "", fmt.Errorf("%s: %w (Argo CD compares no app until it is mended; the scan reads it as absent)", key, err))
			continue
		}
		if key == argoExclusions {
			f.exclusions = entries
		} else {
			f.inclusions = entries
		}
	}
	return f
}

// forCluster is the filter for an Application whose destination is server
// (util/settings ResourcesFilter.IsExcludedResource): the kinds Argo CD
// always excludes, the exclusions whose clusters match it, and the
// inclusions whose clusters match it, which, when there are any, exclude
// every kind they do not name. Globs compile as Argo CD's util/glob
// compiles them (no separators); one that does not compile matches
// nothing, as there.
func (f *argoResourceFilter) forCluster(server string) *config.KindFilter {
	out := &config.KindFilter{}
	add := func(to *[]config.FilteredKinds, entries []argoFilteredResource, why string) {
		for _, e := range entries {
			if k, ok := filteredKinds(e, server, why); ok {
				*to = append(*to, k)
			}
		}
	}
	add(&out.Exclusions, argoCoreExclusions, "Argo CD always excludes it")
	add(&out.Exclusions, f.exclusions, "argocd-cm's "+argoExclusions+" excludes it")
	add(&out.Inclusions, f.inclusions, "argocd-cm's "+argoInclusions+" does not include it")
	return out
}

// filteredKinds is e as a config.FilteredKinds, and whether its clusters
// match server (FilteredResource.MatchCluster: any glob, or none given).
func filteredKinds(e argoFilteredResource, server, why string) (config.FilteredKinds, bool) {
	matched := len(e.Clusters) == 0
	for _, c := range e.Clusters {
		if g, err := glob.Compile(c); err == nil && g.Match(server) {
			matched = true
			break
		}
	}
	if !matched {
		return config.FilteredKinds{}, false
	}
	k := config.FilteredKinds{Kinds: e.Kinds, Why: why}
	for _, p := range e.APIGroups {
		if g, err := glob.Compile(p); err == nil {
			k.APIGroups = append(k.APIGroups, g)
		} else {
			k.APIGroups = append(k.APIGroups, nothing{})
		}
	}
	return k, true
}

// nothing is a glob that does not compile: it matches nothing, and keeps
// its entry's group list from matching every group.
type nothing struct{}

func (nothing) Match(string) bool { return false }
