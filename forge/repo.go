package forge

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Repo is a repository on a forge, read from its Git URL.
type Repo struct {
	// Host is the web host, with its port when the URL is https:// on
	// another port than 443 (an SSH port says nothing of the web's).
	Host string
	// Path is the repository's path without ".git": "owner/name", or
	// "group/subgroup/name" on GitLab.
	Path string
}

// Owner is the first segment of the path (GitHub's owner, Gitea's owner).
func (r Repo) Owner() string { o, _, _ := strings.Cut(r.Path, "/"); return o }

// Name is the last segment of the path.
func (r Repo) Name() string { return r.Path[strings.LastIndex(r.Path, "/")+1:] }

// ParseRepo reads a repository's Git URL: https://host/owner/name(.git),
// ssh://git@host/owner/name.git or git@host:owner/name.git.
func ParseRepo(url string) (Repo, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return Repo{}, fmt.Errorf("repository URL: %w", err)
	}
	if ep.Protocol == "file" || ep.Host == "" {
		return Repo{}, fmt.Errorf("repository %s is not on a forge (a local path or file:// URL)", ep.Path)
	}
	path := strings.TrimSuffix(strings.Trim(ep.Path, "/"), ".git")
	if !strings.Contains(path, "/") {
		return Repo{}, fmt.Errorf("repository URL %s: want host/owner/name", ep.Host+"/"+path)
	}
	host := strings.ToLower(ep.Host)
	if ep.Protocol == "https" && ep.Port != 0 && ep.Port != 443 {
		host = fmt.Sprintf("%s:%d", host, ep.Port)
	}
	return Repo{Host: host, Path: path}, nil
}

// Detect tells the forge from a host: github.com and hosts named like
// github (GitHub Enterprise), gitlab.com and hosts named like gitlab,
// codeberg.org and hosts named like gitea or forgejo. Any other host needs
// forge.kind in the config.
func Detect(host string) (Kind, error) {
	h := strings.ToLower(host)
	switch {
	case h == "codeberg.org" || strings.Contains(h, "gitea") || strings.Contains(h, "forgejo"):
		return Gitea, nil
	case strings.Contains(h, "gitlab"):
		return GitLab, nil
	case strings.Contains(h, "github"):
		return GitHub, nil
	}
	return "", fmt.Errorf("cannot tell which forge %s is: set forge.kind (%s) and forge.apiURL in the config", host, kindList())
}

// DefaultAPIURL is the API base URL of a forge at host: api.github.com for
// github.com and https://HOST/api/v3 for GitHub Enterprise,
// https://HOST/api/v4 for GitLab, https://HOST/api/v1 for Gitea; "" for an
// unknown kind.
func DefaultAPIURL(kind Kind, host string) string {
	switch kind {
	case GitHub:
		if host == "github.com" {
			return "https://api.github.com"
		}
		return "https://" + host + "/api/v3"
	case GitLab:
		return "https://" + host + "/api/v4"
	case Gitea:
		return "https://" + host + "/api/v1"
	}
	return ""
}
