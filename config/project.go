package config

import (
	"fmt"
	"path/filepath"
)

// ProjectResources are the kinds an Argo CD AppProject lets its
// Applications sync: AppProject.IsGroupKindNamePermitted. A namespaced kind
// must match NamespaceWhitelist (any kind when it is not set; none when it
// is set and empty) and no entry of NamespaceBlacklist; a cluster-scoped
// one must match ClusterWhitelist (none when empty) and no entry of
// ClusterBlacklist. Group, kind and name are Go filepath.Match patterns, as
// Argo CD matches them. Argo CD marks an object the project does not
// permit Unknown and fails every sync of the app that declares it.
type ProjectResources struct {
	// Project is the AppProject, namespace/name.
	Project                                string
	NamespaceWhitelistSet                  bool
	NamespaceWhitelist, NamespaceBlacklist []ProjectResource
	ClusterWhitelist, ClusterBlacklist     []ProjectResource
}

// ProjectResource is one entry of an AppProject's resource lists; Name
// (cluster lists only) "" matches every name.
type ProjectResource struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name,omitempty"`
}

func (r ProjectResource) match(group, kind, name string) bool {
	if ok, err := filepath.Match(r.Kind, kind); !ok || err != nil {
		return false
	}
	if ok, err := filepath.Match(r.Group, group); !ok || err != nil {
		return false
	}
	if r.Name == "" {
		return true
	}
	ok, err := filepath.Match(r.Name, name)
	return ok && err == nil
}

func anyMatch(list []ProjectResource, group, kind, name string) bool {
	for _, r := range list {
		if r.match(group, kind, name) {
			return true
		}
	}
	return false
}

// Refuses says why the project does not permit an object of group and kind
// named name, or "" when it does (and for a nil ProjectResources).
func (p *ProjectResources) Refuses(group, kind, name string, namespaced bool) string {
	if p == nil {
		return ""
	}
	gk := kind
	if group != "" {
		gk = group + "/" + kind
	}
	if namespaced {
		switch {
		case p.NamespaceWhitelistSet && !anyMatch(p.NamespaceWhitelist, group, kind, ""):
			return fmt.Sprintf("AppProject %s does not permit %s: its namespaceResourceWhitelist has no entry for it", p.Project, gk)
		case anyMatch(p.NamespaceBlacklist, group, kind, ""):
			return fmt.Sprintf("AppProject %s does not permit %s: its namespaceResourceBlacklist names it", p.Project, gk)
		}
		return ""
	}
	switch {
	case !anyMatch(p.ClusterWhitelist, group, kind, name):
		return fmt.Sprintf("AppProject %s does not permit the cluster-scoped %s %s: its clusterResourceWhitelist has no entry for it", p.Project, gk, name)
	case anyMatch(p.ClusterBlacklist, group, kind, name):
		return fmt.Sprintf("AppProject %s does not permit the cluster-scoped %s %s: its clusterResourceBlacklist names it", p.Project, gk, name)
	}
	return ""
}
