package discover

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

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
	} `json:"spec"`
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
// else allows it; the repository must match at least one allowing entry.
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
	allowed := false
	for _, pattern := range p.Spec.SourceRepos {
		deny := strings.HasPrefix(pattern, "!")
		norm := normalizeArgoURL(strings.TrimPrefix(pattern, "!"))
		matched := pattern == "*" || globMatch(norm, src)
		switch {
		case deny && matched:
			return fmt.Sprintf("repository %s is denied by sourceRepos entry %q of AppProject %s/%s", source.SafeURL(repo), pattern, ns, project)
		case !deny && matched:
			allowed = true
		}
	}
	if !allowed {
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

// globMatch matches value against a sourceRepos glob, "/" separating
// segments (gobwas/glob with separator '/', as Argo CD uses it).
func globMatch(pattern, value string) bool {
	re, err := globRegexp(pattern)
	if err != nil {
		return false
	}
	return re.MatchString(value)
}

// globRegexp translates a glob into an anchored regular expression.
func globRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0 // inside {a,b}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(pattern[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ in %q", pattern)
			}
			class := pattern[i+1 : i+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end
		case c == '{':
			depth++
			b.WriteString("(?:")
		case c == '}' && depth > 0:
			depth--
			b.WriteString(")")
		case c == ',' && depth > 0:
			b.WriteString("|")
		case c == '\\' && i+1 < len(pattern):
			i++
			b.WriteString(regexp.QuoteMeta(string(pattern[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unclosed { in %q", pattern)
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
