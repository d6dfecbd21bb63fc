package config

import "github.com/gobwas/glob"

// KindFilter is what a reconciler drops from an app's Git before it
// compares or applies it, by kind: Argo CD's resource filter
// (util/settings ResourcesFilter) for an Application's destination
// cluster, which discovery builds from argocd-cm's resource.exclusions and
// resource.inclusions and the kinds Argo CD always excludes. An object of
// a kind it excludes is never applied, and the scan does not compare it.
type KindFilter struct {
	// Exclusions are the entries that exclude a kind they match.
	Exclusions []FilteredKinds
	// Inclusions are the entries of resource.inclusions for the cluster;
	// when there are any, a kind none of them matches is excluded.
	Inclusions []FilteredKinds
}

// FilteredKinds is one entry of a KindFilter: API groups (globs, as
// Argo CD matches them) and kinds ("*" for any), each list matching
// everything when empty.
type FilteredKinds struct {
	APIGroups []glob.Glob
	Kinds     []string
	// Why says where the entry comes from, for a warning
	// ("argocd-cm's resource.exclusions").
	Why string
}

func (e FilteredKinds) match(group, kind string) bool {
	groupOK := len(e.APIGroups) == 0
	for _, g := range e.APIGroups {
		if g.Match(group) {
			groupOK = true
			break
		}
	}
	if !groupOK {
		return false
	}
	for _, k := range e.Kinds {
		if k == "*" || k == kind {
			return true
		}
	}
	return len(e.Kinds) == 0
}

// Excludes says why f excludes objects of group and kind ("argocd-cm's
// resource.exclusions excludes it"), or "" when it does not; a nil filter
// excludes nothing. An exclusion wins over an inclusion, as in Argo CD.
func (f *KindFilter) Excludes(group, kind string) string {
	if f == nil {
		return ""
	}
	for _, e := range f.Exclusions {
		if e.match(group, kind) {
			return e.Why
		}
	}
	if len(f.Inclusions) == 0 {
		return ""
	}
	for _, e := range f.Inclusions {
		if e.match(group, kind) {
			return ""
		}
	}
	return f.Inclusions[0].Why
}
