package discover

import (
	"strings"
	"testing"
)

func TestSourceReposMatchAsArgoCDMatchesThem(t *testing.T) {
	tests := []struct {
		pattern, repo string
		want          bool
	}{
		{"*", "https://anything.example/x.git", true},
		{"https://github.com/org/*", "https://github.com/org/repo.git", true},
		{"https://github.com/org/*", "https://github.com/org/team/repo.git", false},
		{"https://github.com/org/**", "https://github.com/org/team/repo.git", true},
		{"https://GitHub.com/Org/Repo.git", "https://github.com/org/repo", true},
		{"git@github.com:org/*", "ssh://git@github.com/org/repo.git", true},
		{"https://github.com/org/rep?", "https://github.com/org/repo", true},
		{"https://github.com/org/[a-c]*", "https://github.com/org/db", false},
		{"https://github.com/org/*", "https://github.com/org-evil/repo", false},
		{"https://github.com/org/[!a-c]*", "https://github.com/org/ci", false},
		{"https://github.com/org/[!a-c]*", "https://github.com/org/db", true},
		// Argo CD normalizes a pattern as a URL (url.URL.String), which
		// escapes braces: they match only themselves.
		{"https://github.com/org/{web,api}", "https://github.com/org/api.git", false},
		{"https://github.com/{org,team}.git", "https://github.com/{org,team}", true},
	}
	for _, tt := range tests {
		projects := map[string]*appProject{"p": {}}
		projects["p"].Spec.SourceRepos = []string{tt.pattern}
		if got := sourcePermitted(projects, "argocd", "p", tt.repo) == ""; got != tt.want {
			t.Errorf("sourceRepos [%s] allows %s: %v, want %v", tt.pattern, tt.repo, got, tt.want)
		}
	}
}

// A denial ("!") refuses what it matches whatever allows it, and a
// repository no allowing entry matches is not fetched. Argo CD v3.5.7
// syncs such a repository when the project has a denial that does not
// match it (e2e TestArgoCDDenyOnlySourceRepos): the reason says so.
func TestSourceRepoDenials(t *testing.T) {
	for _, tt := range []struct {
		repos  []string
		repo   string
		reason string // "" when permitted
	}{
		{[]string{"!https://github.com/org/secret*"}, "https://github.com/org/web.git", `Argo CD does sync it: its AppProject.IsSourcePermitted counts a denial that does not match (here "!https://github.com/org/secret*")`},
		{[]string{"!https://github.com/org/secret*"}, "https://github.com/org/secrets.git", `is denied by sourceRepos entry "!https://github.com/org/secret*"`},
		{[]string{"!https://github.com/org/secret*", "*"}, "https://github.com/org/secrets.git", "is denied by"},
		{[]string{"*", "!https://github.com/org/secret*"}, "https://github.com/org/secrets.git", "is denied by"},
		{[]string{"*", "!https://github.com/org/secret*"}, "https://github.com/org/web.git", ""},
		{[]string{"https://github.com/org/web", "!https://github.com/org/*"}, "https://github.com/org/web", "is denied by"},
		{[]string{"https://github.com/org/*", "!https://github.com/org/secret*"}, "https://attacker.example/x.git", "Argo CD does sync it"},
		{[]string{"!*"}, "https://github.com/org/web", `(here "!*")`}, // "*" does not cross "/": it denies nothing
		{[]string{}, "https://github.com/org/web", "is not in the sourceRepos"},
	} {
		projects := map[string]*appProject{"p": {}}
		projects["p"].Spec.SourceRepos = tt.repos
		got := sourcePermitted(projects, "argocd", "p", tt.repo)
		if (got == "") != (tt.reason == "") || !strings.Contains(got, tt.reason) {
			t.Errorf("sourceRepos %q, %s: %q, want %q", tt.repos, tt.repo, got, tt.reason)
		}
	}
}
