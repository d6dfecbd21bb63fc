package forge

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTheForgeAndItsAPIComeFromTheRepositoryURL(t *testing.T) {
	cases := []struct {
		url  string
		kind Kind
		api  string
		path string
	}{
		{"https://github.com/acme/deploy.git", GitHub, "https://api.github.com", "acme/deploy"},
		{"git@github.com:acme/deploy.git", GitHub, "https://api.github.com", "acme/deploy"},
		{"https://github.acme.corp/platform/deploy", GitHub, "https://github.acme.corp/api/v3", "platform/deploy"},
		{"https://gitlab.com/acme/infra/deploy.git", GitLab, "https://gitlab.com/api/v4", "acme/infra/deploy"},
		{"ssh://git@gitlab.example.com:2222/acme/deploy.git", GitLab, "https://gitlab.example.com/api/v4", "acme/deploy"},
		{"https://gitlab.example.com:8443/acme/deploy.git", GitLab, "https://gitlab.example.com:8443/api/v4", "acme/deploy"},
		{"https://codeberg.org/acme/deploy.git", Gitea, "https://codeberg.org/api/v1", "acme/deploy"},
		{"https://forgejo.example.com/acme/deploy.git", Gitea, "https://forgejo.example.com/api/v1", "acme/deploy"},
		{"https://gitea.example.com/acme/deploy.git", Gitea, "https://gitea.example.com/api/v1", "acme/deploy"},
	}
	for _, c := range cases {
		repo, err := ParseRepo(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		kind, err := Detect(repo.Host)
		got := []string{string(kind), DefaultAPIURL(kind, repo.Host), repo.Path}
		if diff := cmp.Diff([]string{string(c.kind), c.api, c.path}, got); err != nil || diff != "" {
			t.Errorf("%s: %v (-want +got):\n%s", c.url, err, diff)
		}
	}
	if _, err := Detect("git.example.com"); err == nil || !strings.Contains(err.Error(), "set forge.kind") {
		t.Errorf("an unknown host: %v, want a hint to set forge.kind", err)
	}
	for _, bad := range []string{"/srv/deploy", "file:///srv/deploy.git", "https://github.com/deploy"} {
		if _, err := ParseRepo(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestATokenGoesOverHTTPSOnly(t *testing.T) {
	_, err := New(Options{Kind: GitLab, APIURL: "http://gitlab.example.com/api/v4", RepoURL: "https://gitlab.example.com/a/b.git", Token: "t"})
	if err == nil || !strings.Contains(err.Error(), "https only") {
		t.Errorf("New over http = %v", err)
	}
	if _, err := New(Options{RepoURL: "https://github.com/a/b.git"}); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("New without a token = %v", err)
	}
}
