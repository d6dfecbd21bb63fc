package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/calricon/driftscan/redact"
)

// Git is the config's git section: settings for every Git source.
type Git struct {
	// Credentials say which credential goes to which Git server. A source
	// without its own auth gets the credential of the longest prefix that
	// matches its URL, and none when no prefix does: a credential is never
	// sent to a host it is not listed for, and a token never over http://.
	Credentials []GitCredential `yaml:"credentials"`
	// CAFile is a PEM file of certificates trusted for https Git servers,
	// in addition to the system's; relative to the config file's folder.
	CAFile string `yaml:"caFile"`
}

// GitCredential is one credential and the repositories it may be sent to.
type GitCredential struct {
	// URL is where the credential may go: a host ("github.com",
	// "git.example.com:8443"), a host and path prefix ("github.com/org"), or
	// an https:// or ssh:// URL prefix ("https://github.com/org/"). A path
	// prefix matches whole path segments: /org matches /org/repo, not
	// /organisation. A token goes to https URLs only; an SSH key to ssh://
	// and git@host: URLs only, and "ssh://" alone gives an SSH key to every
	// SSH host (the key never leaves the process, and the host must be in
	// known_hosts).
	URL     string `yaml:"url"`
	GitAuth `yaml:",inline"`
}

// GitPrefix is a parsed GitCredential.URL.
type GitPrefix struct {
	// Scheme is "https" or "ssh"; empty when the URL named a host only, so
	// that the credential's kind decides.
	Scheme string
	// Host is lower case; empty only for "ssh://" (every SSH host).
	Host string
	// Port is empty for the scheme's default port.
	Port string
	// Path starts with "/" and has no trailing slash; "" is every path.
	Path string
}

// ParseGitPrefix reads a GitCredential.URL. http:// is refused: a credential
// is never sent in clear text.
func ParseGitPrefix(s string) (GitPrefix, error) {
	if s == "" {
		return GitPrefix{}, errors.New("url is required: the host or URL prefix the credential may be sent to")
	}
	var p GitPrefix
	rest := s
	if scheme, r, ok := strings.Cut(s, "://"); ok {
		switch strings.ToLower(scheme) {
		case "https", "ssh":
			p.Scheme = strings.ToLower(scheme)
		case "http":
			return GitPrefix{}, fmt.Errorf("url %q: credentials are never sent over http://; use https://", s)
		default:
			return GitPrefix{}, fmt.Errorf("url %q: want a host, or an https:// or ssh:// URL prefix", s)
		}
		rest = r
	}
	if p.Scheme == "ssh" && rest == "" {
		return p, nil
	}
	u, err := url.Parse("x://" + rest)
	if err != nil {
		return GitPrefix{}, fmt.Errorf("url %q: %w", s, err)
	}
	if u.User != nil {
		return GitPrefix{}, fmt.Errorf("url %q: a user or password in the url is not allowed: name the credential with tokenEnv, sshKeyFile or sshKeyEnv", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Hostname() == "" || strings.ContainsAny(u.Hostname(), "*?[") {
		return GitPrefix{}, fmt.Errorf("url %q: want a host, or an https:// or ssh:// URL prefix (no wildcards, query or fragment)", s)
	}
	p.Host = strings.ToLower(u.Hostname())
	p.Port = u.Port()
	if p.Port != "" && p.Port == DefaultPort(p.Scheme) {
		p.Port = ""
	}
	p.Path = strings.TrimRight(u.Path, "/")
	return p, nil
}

// DefaultPort is the port a Git URL of the scheme uses when it names none.
func DefaultPort(scheme string) string {
	switch scheme {
	case "https":
		return "443"
	case "ssh":
		return "22"
	case "http":
		return "80"
	}
	return ""
}

// String is the prefix as a URL, as errors name it.
func (p GitPrefix) String() string {
	host := p.Host
	if p.Port != "" {
		host = net.JoinHostPort(p.Host, p.Port)
	}
	if p.Scheme == "" {
		return host + p.Path
	}
	return p.Scheme + "://" + host + p.Path
}

// Validate checks that the credential names exactly one secret and a URL
// that suits it.
func (c GitCredential) Validate() error {
	p, err := ParseGitPrefix(c.URL)
	if err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{c.TokenEnv != "", c.SSHKeyFile != "", c.SSHKeyEnv != ""} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return fmt.Errorf("url %s: want exactly one of tokenEnv, sshKeyFile and sshKeyEnv", c.URL)
	case c.TokenEnv != "" && p.Scheme == "ssh":
		return fmt.Errorf("url %s: a token is sent to https URLs only, not ssh ones", c.URL)
	case c.TokenEnv != "" && p.Host == "":
		return fmt.Errorf("url %s: a token needs a host", c.URL)
	case c.TokenEnv == "" && p.Scheme == "https":
		return fmt.Errorf("url %s: an SSH key is used with ssh URLs only, not https ones", c.URL)
	case c.TokenEnv == "" && c.Username != "":
		return fmt.Errorf("url %s: username goes with tokenEnv; an SSH key's user is the URL's (git@host)", c.URL)
	}
	return nil
}

// ParseGitCredentialFlag reads a --git-credential value,
// [USER@]HOST[/PATH]=ENV or https://[USER@]HOST[/PATH]=ENV: a token in the
// environment variable ENV, for https URLs under that prefix.
func ParseGitCredentialFlag(s string) (GitCredential, error) {
	i := strings.LastIndex(s, "=")
	if i <= 0 || i == len(s)-1 {
		return GitCredential{}, fmt.Errorf("%q: want HOST[/PATH]=ENV_VAR, for example github.com=GIT_TOKEN", s)
	}
	prefix, env := s[:i], s[i+1:]
	c := GitCredential{GitAuth: GitAuth{TokenEnv: env}}
	scheme, rest, ok := strings.Cut(prefix, "://")
	if !ok {
		scheme, rest = "", prefix
	}
	host, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(host, "@"); at >= 0 {
		c.Username = rest[:at]
		rest = rest[at+1:]
	}
	c.URL = rest
	if ok {
		c.URL = scheme + "://" + rest
	}
	if err := c.Validate(); err != nil {
		return GitCredential{}, err
	}
	return c, nil
}

// validate checks what a source may name: with a repo, a path and values
// files that stay inside the repository, and a token that never goes over
// http://.
func (s Source) validate() error {
	var errs []error
	if s.Chart != "" {
		if s.Path != "" {
			errs = append(errs, fmt.Errorf("source.path %q: a chart from a Helm repository is the whole source; leave path out", s.Path))
		}
		if s.Kustomize != nil {
			errs = append(errs, errors.New("source.kustomize: a chart from a Helm repository is rendered with Helm"))
		}
		if s.PlainHTTP && !strings.HasPrefix(strings.ToLower(s.Repo), "oci://") {
			errs = append(errs, errors.New("source.plainHTTP is for an oci:// registry; write http:// in a chart repository's URL instead"))
		}
		if strings.ContainsAny(s.Chart, `/\`) {
			errs = append(errs, fmt.Errorf("source.chart %q: want the chart's name in the repository's index (the repository URL goes in source.repo)", s.Chart))
		}
	}
	if s.PlainHTTP && s.Chart == "" && !IsOCI(s.Repo) {
		errs = append(errs, errors.New("source.plainHTTP is for an oci:// registry (a chart or an OCI artifact)"))
	}
	if s.Layer != "" && (!IsOCI(s.Repo) || s.Chart != "") {
		errs = append(errs, errors.New("source.layer is for an OCI artifact (an oci:// repo without source.chart)"))
	}
	if s.Repo != "" && s.Chart == "" {
		if s.Path != "" && !InRepo(s.Path) {
			errs = append(errs, fmt.Errorf("source.path %q leaves the repository: with repo set it is relative to the repository's root", s.Path))
		}
		if h := s.Helm; h != nil {
			for _, f := range h.ValuesFiles {
				if !InRepoFrom(s.Path, f) {
					errs = append(errs, fmt.Errorf("source.helm.valuesFiles %q leaves the repository", f))
				}
			}
		}
	}
	if s.Repo != "" && s.Auth.TokenEnv != "" && !strings.HasPrefix(strings.ToLower(s.Repo), "https://") {
		errs = append(errs, fmt.Errorf("source.auth.tokenEnv: a token is sent over https only, and repo %s is not an https URL", redact.URL(s.Repo)))
	}
	return errors.Join(errs...)
}

// IsOCI reports whether repo is an oci:// URL: a registry, holding a chart
// (Source.Chart) or an OCI artifact.
func IsOCI(repo string) bool { return strings.HasPrefix(strings.ToLower(repo), "oci://") }

// OCIArtifact reports whether s is an OCI artifact: an oci:// repo without
// a chart.
func (s Source) OCIArtifact() bool { return s.Chart == "" && IsOCI(s.Repo) }

// InRepo reports whether p, a slash path relative to a repository's root,
// stays inside it: not absolute, and no ".." that climbs above the root.
func InRepo(p string) bool {
	if p == "" {
		return true
	}
	if isAbs(p) {
		return false
	}
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../")
}

// InRepoFrom reports whether f, a slash path relative to the folder dir of a
// repository, stays inside the repository.
func InRepoFrom(dir, f string) bool {
	return !isAbs(f) && InRepo(path.Join(dir, f))
}

// isAbs reports whether p is absolute on any system: /x, \x or C:x.
func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':')
}
