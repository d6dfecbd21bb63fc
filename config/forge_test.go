package config

import (
	"strings"
	"testing"
)

func TestTheForgeSectionAndAnOwnersPullRequestAreRead(t *testing.T) {
	cfg, err := Parse([]byte(`apiVersion: driftscan.dev/v1alpha1
kind: ScanConfig
forge: {kind: gitlab, apiURL: "https://git.example.com/api/v4", tokenEnv: GITLAB_API_TOKEN}
owners:
  team-web:
    pullRequest: {labels: [hotfix], reviewers: ["@alice", acme/web]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Forge.Kind != "gitlab" || cfg.Forge.Token() != "GITLAB_API_TOKEN" || cfg.Owners["team-web"].PullRequest.Reviewers[1] != "acme/web" {
		t.Errorf("forge %+v, owner %+v", cfg.Forge, cfg.Owners["team-web"].PullRequest)
	}
	if (*Forge)(nil).Token() != DefaultForgeTokenEnv {
		t.Errorf("no forge section: token in %s", (*Forge)(nil).Token())
	}
	for _, bad := range []struct{ yaml, want string }{
		{"forge: {kind: bitbucket}", `forge: kind "bitbucket": want one of [github gitlab gitea]`},
		{"forge: {apiURL: http://git.example.com/api/v4}", "the token is sent over https only"},
		{"forge: {token: x}", "field token not found"},
	} {
		_, err := Parse([]byte("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\n" + bad.yaml + "\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}
