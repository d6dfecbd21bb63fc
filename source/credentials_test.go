package source

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/gitrepo"
)

func TestACredentialGoesOnlyToTheHostsItIsBoundTo(t *testing.T) {
	const token = "ghp_platformT0kenThatMustNotLeak0001"
	getenv := func(k string) string {
		if k == "GIT_TOKEN" {
			return token
		}
		return ""
	}
	dir, _ := gitrepo.Bare(t, "", map[string]string{"apps/web/cm.yaml": "kind: ConfigMap\n"})
	platform := gitrepo.Serve(t, dir, true)
	attacker := gitrepo.Serve(t, dir, true)
	plain := gitrepo.Serve(t, dir, false)
	bound := func(url string) []config.GitCredential {
		return []config.GitCredential{{URL: url, GitAuth: config.GitAuth{TokenEnv: "GIT_TOKEN"}}}
	}
	name := "/" + strings.TrimPrefix(platform.RepoURL(dir), platform.URL+"/")

	tests := []struct {
		name     string
		srv      *gitrepo.Server
		creds    []config.GitCredential
		wantAuth bool
	}{
		{"the host and path the token is bound to get it", platform, bound(platform.Host() + name), true},
		{"another port of the same address gets nothing", attacker, bound(platform.Host()), false},
		{"a path outside the bound prefix gets nothing", platform, bound(platform.Host() + "/org"), false},
		{"a token bound to a host is never sent over http://", plain, bound(plain.Host()), false},
		{"a token bound to github.com never reaches a loopback server", attacker, bound("github.com"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.srv.Requests()
			ca := append(platform.CABundle(), attacker.CABundle()...)
			// The backend serves anonymous clones: a fetch without the
			// token works, so only the headers tell.
			_, err := FetchGit(t.Context(), GitOptions{Repo: tt.srv.RepoURL(dir), Cache: NewCache(t.TempDir()), Credentials: tt.creds, CABundle: ca, Getenv: getenv})
			if err != nil {
				t.Fatalf("FetchGit: %v", err)
			}
			authorized, total := tt.srv.Authorized()
			if total == 0 {
				t.Fatal("the server got no request")
			}
			if got := authorized > 0; got != tt.wantAuth {
				t.Errorf("%d of %d requests carried credentials, want credentials: %v", authorized, total, tt.wantAuth)
			}
		})
	}
}

func TestATokenOfTheSourceItselfIsRefusedOverHTTP(t *testing.T) {
	dir, _ := gitrepo.Bare(t, "", map[string]string{"cm.yaml": "kind: ConfigMap\n"})
	plain := gitrepo.Serve(t, dir, false)
	_, err := FetchGit(t.Context(), GitOptions{
		Repo: plain.RepoURL(dir), Cache: NewCache(t.TempDir()),
		Auth:   config.GitAuth{TokenEnv: "GIT_TOKEN"},
		Getenv: func(string) string { return "s3cr3t-token-value" },
	})
	if err == nil || !strings.Contains(err.Error(), "a token is sent over https only") {
		t.Fatalf("err = %v, want the token refused over http", err)
	}
	if n := len(plain.Requests()); n != 0 {
		t.Errorf("the http server got %d requests, want none", n)
	}
}

func TestCredentialForPicksTheLongestMatchingPrefix(t *testing.T) {
	creds := []config.GitCredential{
		{URL: "github.com", GitAuth: config.GitAuth{TokenEnv: "ANY_GITHUB"}},
		{URL: "https://github.com/platform/", GitAuth: config.GitAuth{TokenEnv: "PLATFORM"}},
		{URL: "git.example.com:8443", GitAuth: config.GitAuth{TokenEnv: "EXAMPLE_8443"}},
		{URL: "ssh://github.com", GitAuth: config.GitAuth{SSHKeyFile: "/keys/github"}},
	}
	tests := []struct{ repo, want string }{
		{"https://github.com/platform/deploy.git", "PLATFORM"},
		{"https://github.com/platform", "PLATFORM"},
		{"https://GitHub.com/platform-evil/deploy.git", "ANY_GITHUB"},
		{"https://github.com:443/tenant/x.git", "ANY_GITHUB"},
		{"https://github.com:8443/tenant/x.git", ""},
		{"http://github.com/platform/deploy.git", ""},
		{"https://github.com.evil.example/platform/deploy.git", ""},
		{"https://git.example.com:8443/x.git", "EXAMPLE_8443"},
		{"https://git.example.com/x.git", ""},
		{"git@github.com:platform/deploy.git", "/keys/github"},
		{"ssh://git@github.com/platform/deploy.git", "/keys/github"},
		{"file:///srv/git/deploy.git", ""},
	}
	for _, tt := range tests {
		ep, err := transport.NewEndpoint(tt.repo)
		if err != nil {
			t.Fatalf("%s: %v", tt.repo, err)
		}
		a, _, _ := credentialFor(creds, ep)
		if got := a.TokenEnv + a.SSHKeyFile; got != tt.want {
			t.Errorf("%s: credential %q, want %q", tt.repo, got, tt.want)
		}
	}
}
