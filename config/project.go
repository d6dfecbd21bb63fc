package config

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gobwas/glob"
)

// ProjectResources are the objects an Argo CD AppProject lets an
// Application sync: AppProject.IsGroupKindNamePermitted, and for a
// namespaced object IsDestinationPermitted. A namespaced kind
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
	// CheckDestinations: the namespace of each namespaced object must be
	// one Destinations permit on the app's cluster, known by its server
	// and, when ClusterName is set, its name in Argo CD (Argo CD's
	// in-cluster); false leaves namespaces unchecked.
	CheckDestinations          bool
	Destinations               []ProjectDestination
	ClusterServer, ClusterName string
}

// ProjectDestination is one entry of an AppProject's destinations: globs
// on the cluster's server or name and on the namespace, "!" negating.
type ProjectDestination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// ArgoGlobMatch is Argo CD's glob.Match (util/glob): gobwas/glob with
// separators (sourceRepos take "/"); a pattern that does not compile
// matches nothing, as Argo CD logs it and goes on.
func ArgoGlobMatch(pattern, value string, separators ...rune) bool {
	g, err := glob.Compile(pattern, separators...)
	return err == nil && g.Match(value)
}

// argoGlobMatch is an AppProject's globMatch with negation: "!" matches
// what the rest does not.
func argoGlobMatch(pattern, value string) bool {
	if rest, ok := strings.CutPrefix(pattern, "!"); ok {
		return !ArgoGlobMatch(rest, value)
	}
	return ArgoGlobMatch(pattern, value)
}

// destinationPermitted is AppProject.isDestinationMatched for namespace ns
// on the app's cluster, word for word: a destination entry whose server or
// name is negated and does not match the cluster, or whose namespace is
// negated and does not match ns, denies (the negation's reading
// argoproj/argo-cd#21264 reports); else one entry must match both.
func (p *ProjectResources) destinationPermitted(ns string) bool {
	matched := false
	for _, d := range p.Destinations {
		nameOK := p.ClusterName != "" && argoGlobMatch(d.Name, p.ClusterName)
		serverOK := p.ClusterServer != "" && argoGlobMatch(d.Server, p.ClusterServer)
		nsOK := argoGlobMatch(d.Namespace, ns)
		switch {
		case (serverOK || nameOK) && nsOK:
			matched = true
		case (!nameOK && strings.HasPrefix(d.Name, "!")) || (!serverOK && strings.HasPrefix(d.Server, "!")) && nsOK:
			return false
		case !nsOK && strings.HasPrefix(d.Namespace, "!") && serverOK:
			return false
		}
	}
	return matched
}

// RefusesDestination says why the project does not permit an Application
// whose destination is namespace ns on the app's cluster, or "" when it does
// (and when destinations are not checked). Argo CD's ValidatePermissions
// makes such an Application an InvalidSpecError: nothing of it is compared
// or synced, an empty namespace included (seen: e2e
// TestArgoCDApplicationDestinationRefused).
func (p *ProjectResources) RefusesDestination(ns string) string {
	if p == nil || !p.CheckDestinations || p.destinationPermitted(ns) {
		return ""
	}
	return fmt.Sprintf("AppProject %s does not permit the Application's destination, namespace %q on cluster %s: Argo CD does not sync this Application (InvalidSpecError) and driftscan does not fetch its source", p.Project, ns, cmp.Or(p.ClusterName, p.ClusterServer))
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
func (p *ProjectResources) Refuses(group, kind, name, namespace string, namespaced bool) string {
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
		case p.CheckDestinations && !p.destinationPermitted(namespace):
			return fmt.Sprintf("AppProject %s does not permit namespace %s on cluster %s: none of its destinations does", p.Project, namespace, cmp.Or(p.ClusterName, p.ClusterServer))
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
