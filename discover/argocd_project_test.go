package discover

import "testing"

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
	}
	for _, tt := range tests {
		projects := map[string]*appProject{"p": {}}
		projects["p"].Spec.SourceRepos = []string{tt.pattern}
		if got := sourcePermitted(projects, "argocd", "p", tt.repo) == ""; got != tt.want {
			t.Errorf("sourceRepos [%s] allows %s: %v, want %v", tt.pattern, tt.repo, got, tt.want)
		}
	}
}
