package source

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/calricon/driftscan/config"
)

// credentialFor picks the credential of the longest prefix in creds that
// matches ep, and says which prefix it was; ok is false when none matches.
// A token matches https URLs only, an SSH key ssh URLs only: nothing is
// matched for http://, file:// or a local path.
func credentialFor(creds []config.GitCredential, ep *transport.Endpoint) (auth config.GitAuth, prefix string, ok bool) {
	best := -1
	for _, c := range creds {
		p, err := config.ParseGitPrefix(c.URL)
		if err != nil {
			continue // Config.Parse refuses it; a library caller gets nothing
		}
		if n := prefixMatch(p, c.TokenEnv != "", ep); n > best {
			best, auth, prefix = n, c.GitAuth, p.String()
		}
	}
	return auth, prefix, best >= 0
}

// prefixMatch is how specific a match of p on ep is (the length of its
// host and path), or -1 when p does not match.
func prefixMatch(p config.GitPrefix, token bool, ep *transport.Endpoint) int {
	want := "ssh"
	if token {
		want = "https"
	}
	if ep.Protocol != want || (p.Scheme != "" && p.Scheme != want) {
		return -1
	}
	if p.Host == "" { // "ssh://": every SSH host
		return 0
	}
	port := ""
	if ep.Port != 0 {
		port = fmt.Sprint(ep.Port)
	}
	if port == config.DefaultPort(want) {
		port = ""
	}
	if !strings.EqualFold(ep.Host, p.Host) || port != p.Port {
		return -1
	}
	path := "/" + strings.TrimPrefix(ep.Path, "/")
	if p.Path != "" {
		rest, ok := strings.CutPrefix(path, p.Path)
		if !ok || (rest != "" && rest != ".git" && !strings.HasPrefix(rest, "/")) {
			return -1
		}
	}
	return len(p.Host) + len(p.Path) + 1
}

// CheckCredentials says, in one error, which of the variables and files
// that creds name are empty or missing, so that a typo is one clear error
// rather than one per app.
func CheckCredentials(creds []config.GitCredential, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	var errs []error
	for i, c := range creds {
		for _, env := range []string{c.TokenEnv, c.SSHKeyEnv} {
			if env != "" && getenv(env) == "" {
				errs = append(errs, fmt.Errorf("git credential %d (%s): environment variable %s is empty", i, c.URL, env))
			}
		}
		if c.SSHKeyFile != "" {
			if _, err := os.Stat(c.SSHKeyFile); err != nil {
				errs = append(errs, fmt.Errorf("git credential %d (%s): %w", i, c.URL, err))
			}
		}
	}
	return errors.Join(errs...)
}
