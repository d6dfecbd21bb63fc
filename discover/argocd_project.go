package discover

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/source"
)

// AppProjects are the Argo CD projects whose sourceRepos say which
// repositories an Application may name, and whose sourceNamespaces which
// namespaces outside Argo CD's own an Application may be in.
var AppProjects = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}

// appProject holds the fields of an AppProject that discovery reads. See
// https://argo-cd.readthedocs.io/en/stable/user-guide/projects/
type appProject struct {
	Spec struct {
		SourceRepos      []string `json:"sourceRepos"`
		SourceNamespaces []string `json:"sourceNamespaces"`
		// The resources lists; a namespace whitelist that is not set
		// permits every namespaced kind, one set empty none.
		NamespaceResourceWhitelist *[]config.ProjectResource   `json:"namespaceResourceWhitelist"`
		NamespaceResourceBlacklist []config.ProjectResource    `json:"namespaceResourceBlacklist"`
		ClusterResourceWhitelist   []config.ProjectResource    `json:"clusterResourceWhitelist"`
		ClusterResourceBlacklist   []config.ProjectResource    `json:"clusterResourceBlacklist"`
		Destinations               []config.ProjectDestination `json:"destinations"`
		// PermitOnlyProjectScopedClusters also requires the cluster to
		// be one of the project's own (its cluster secrets).
		PermitOnlyProjectScopedClusters bool `json:"permitOnlyProjectScopedClusters"`
		// SyncWindows say when Argo CD may sync the project's apps.
		SyncWindows []*syncWindow `json:"syncWindows"`
	} `json:"spec"`
}

// projectResources are the objects the Application a's project (in
// namespace ns) lets it sync; nil when the project does not exist
// (sourcePermitted reports that). Its destinations are checked on Argo
// CD's in-cluster only (by name only when the Application names it so:
// in-cluster may be renamed), or on the scanned cluster when the
// Application names it by one of the names clusterName knows and no
// destination names a server (which server that name has is in its
// cluster secret), and not with permitOnlyProjectScopedClusters, which
// reads the project's cluster secrets.
func projectResources(projects map[string]*appProject, ns string, a application, clusterName func(string) bool) *config.ProjectResources {
	project := a.Spec.Project
	if project == "" {
		project = "default"
	}
	p, ok := projects[project]
	if !ok {
		return nil
	}
	r := &config.ProjectResources{
		Project:            ns + "/" + project,
		NamespaceBlacklist: p.Spec.NamespaceResourceBlacklist,
		ClusterWhitelist:   p.Spec.ClusterResourceWhitelist,
		ClusterBlacklist:   p.Spec.ClusterResourceBlacklist,
	}
	if w := p.Spec.NamespaceResourceWhitelist; w != nil {
		r.NamespaceWhitelistSet, r.NamespaceWhitelist = true, *w
	}
	if p.Spec.PermitOnlyProjectScopedClusters {
		return r
	}
	switch dst := a.Spec.Destination; {
	case dst.Server == "" && dst.Name == "in-cluster":
		r.CheckDestinations, r.Destinations = true, p.Spec.Destinations
		r.ClusterServer, r.ClusterName = inCluster, "in-cluster"
	case strings.TrimRight(dst.Server, "/") == inCluster && !slices.ContainsFunc(p.Spec.Destinations, func(d config.ProjectDestination) bool { return d.Name != "" }):
		// Named by its server, in-cluster may have been renamed (its
		// cluster secret): checked when no destination names a cluster.
		r.CheckDestinations, r.Destinations = true, p.Spec.Destinations
		r.ClusterServer = inCluster
	case dst.Server == "" && clusterName(dst.Name) && !slices.ContainsFunc(p.Spec.Destinations, func(d config.ProjectDestination) bool { return d.Server != "" }):
		r.CheckDestinations, r.Destinations = true, p.Spec.Destinations
		r.ClusterName = dst.Name
	}
	return r
}

// projects lists the AppProjects of the Argo CD namespace ns, by name.
func (d *discovery) projects(ctx context.Context, ns string) (map[string]*appProject, error) {
	items, err := d.list(ctx, AppProjects, ns, "")
	if err != nil {
		return nil, fmt.Errorf("discover Argo CD AppProjects: %w", err)
	}
	out := map[string]*appProject{}
	for i := range items {
		var p appProject
		if err := decode(&items[i], &p); err != nil {
			d.fail(ref(&items[i]), "", err)
			continue
		}
		out[items[i].GetName()] = &p
	}
	return out, nil
}

// sourcePermitted says why project (in namespace ns) does not let an
// Application fetch repo, or "" when it does. It follows Argo CD's
// AppProject.IsSourcePermitted: each sourceRepos entry is a glob on the
// normalized URL ("*" any run of characters but "/", "**" any run, "?",
// [...] and {a,b}); an entry "!pattern" denies what it matches, whatever
// else allows it; the repository must match at least one allowing entry,
// as Argo CD's documentation says (its code also takes a denial that does
// not match for one, which the reason names).
// See https://github.com/argoproj/argo-cd/blob/master/pkg/apis/application/v1alpha1/app_project_types.go
func sourcePermitted(projects map[string]*appProject, ns, project, repo string) string {
	if project == "" {
		project = "default"
	}
	p, ok := projects[project]
	if !ok {
		return fmt.Sprintf("AppProject %s/%s does not exist, so Argo CD does not sync this Application and driftscan does not fetch its source", ns, project)
	}
	src := normalizeArgoURL(repo)
	allowed, byDenial := false, ""
	for _, pattern := range p.Spec.SourceRepos {
		deny := strings.HasPrefix(pattern, "!")
		norm := normalizeArgoURL(strings.TrimPrefix(pattern, "!"))
		matched := pattern == "*" || config.ArgoGlobMatch(norm, src, '/')
		switch {
		case deny && matched:
			return fmt.Sprintf("repository %s is denied by sourceRepos entry %q of AppProject %s/%s", source.SafeURL(repo), pattern, ns, project)
		case matched:
			allowed = true
		case deny && byDenial == "":
			byDenial = pattern
		}
	}
	switch {
	case !allowed && byDenial != "":
		// IsSourcePermitted counts a denial that does not match as a
		// match (globMatch with allowNegation): Argo CD syncs what no
		// allowing entry names (e2e TestArgoCDDenyOnlySourceRepos). The
		// project's author meant what the documentation says; driftscan
		// holds to that and says what Argo CD does.
		return fmt.Sprintf("repository %s matches no allowing sourceRepos entry of AppProject %s/%s, so driftscan does not fetch it; Argo CD does sync it: its AppProject.IsSourcePermitted counts a denial that does not match (here %q) as an allowing entry, against its documentation (argoproj/argo-cd#21264 reports the same of destinations): add an allowing entry for what the project may use", source.SafeURL(repo), ns, project, byDenial)
	case !allowed:
		return fmt.Sprintf("repository %s is not in the sourceRepos of AppProject %s/%s, so driftscan does not fetch it", source.SafeURL(repo), ns, project)
	}
	return ""
}

// normalizeArgoURL is Argo CD's git.NormalizeGitURL: lower case, scp-like
// addresses as ssh URLs without the scheme, no trailing .git.
func normalizeArgoURL(repo string) string {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if scpLike.MatchString(repo) && !strings.HasPrefix(repo, "ssh://") {
		repo = "ssh://" + strings.Replace(repo, ":", "/", 1)
	}
	repo = strings.TrimSuffix(repo, ".git")
	u, err := url.Parse(repo)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.String(), "ssh://")
}

// scpLike matches git@host:path and ssh://user@host/path addresses.
var scpLike = regexp.MustCompile(`^(ssh://)?([^/:]*?)@[^@]+$`)
