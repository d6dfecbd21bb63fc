package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/spf13/pflag"

	"github.com/calricon/driftscan/config"
)

// gitFlags say which credential goes to which Git server. They add to the
// config's git.credentials; a credential is never sent to a host it is not
// bound to.
type gitFlags struct {
	credentials []string
	caFile      string
	// The flags of before credentials were bound to hosts.
	tokenEnv, username, sshKeyFile, sshKeyEnv string
}

func (g *gitFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&g.credentials, "git-credential", nil, "[USER@]HOST[/PATH]=ENV_VAR: send the HTTPS token in ENV_VAR to Git URLs of that host (and path prefix) only, never over http:// (repeatable; adds to the config's git.credentials)")
	f.StringVar(&g.caFile, "git-ca-file", "", "PEM file of certificates trusted for https Git servers, in addition to the system's")
	f.StringVar(&g.tokenEnv, "git-token-env", "", "deprecated, use --git-credential: environment variable holding an HTTPS token, sent only to the hosts of the config file's own https repositories, never to a discovered one's")
	f.StringVar(&g.username, "git-username", "", "with --git-token-env: the user name (default git)")
	f.StringVar(&g.sshKeyFile, "git-ssh-key-file", "", "SSH private key file for ssh:// and git@ sources whose host is in known_hosts")
	f.StringVar(&g.sshKeyEnv, "git-ssh-key-env", "", "environment variable holding an SSH private key, for ssh:// and git@ sources whose host is in known_hosts")
}

// apply adds the flags' credentials to cfg.Git. It runs before discovery:
// --git-token-env is bound to the hosts of the config's own apps only.
func (g *gitFlags) apply(cfg *config.Config) error {
	for _, s := range g.credentials {
		c, err := config.ParseGitCredentialFlag(s)
		if err != nil {
			return fmt.Errorf("--git-credential %w", err)
		}
		cfg.Git.Credentials = append(cfg.Git.Credentials, c)
	}
	if g.caFile != "" {
		abs, err := filepath.Abs(g.caFile)
		if err != nil {
			return fmt.Errorf("--git-ca-file: %w", err)
		}
		cfg.Git.CAFile = abs
	}
	if g.username != "" && g.tokenEnv == "" {
		return fmt.Errorf("--git-username goes with --git-token-env; with --git-credential write USER@HOST=ENV_VAR")
	}
	if g.tokenEnv != "" {
		hosts := configHosts(cfg)
		if len(hosts) == 0 {
			return fmt.Errorf("--git-token-env %s: no host to send it to: the token goes only to the hosts of the config file's own https repositories, and there are none; bind it to a host with --git-credential HOST=%s", g.tokenEnv, g.tokenEnv)
		}
		for _, h := range hosts {
			cfg.Git.Credentials = append(cfg.Git.Credentials, config.GitCredential{URL: "https://" + h, GitAuth: config.GitAuth{TokenEnv: g.tokenEnv, Username: g.username}})
		}
	}
	if g.sshKeyFile != "" && g.sshKeyEnv != "" {
		return fmt.Errorf("give --git-ssh-key-file or --git-ssh-key-env, not both")
	}
	if g.sshKeyFile != "" || g.sshKeyEnv != "" {
		// An SSH key never leaves the process, and the host must be in
		// known_hosts: it may go to every SSH host.
		cfg.Git.Credentials = append(cfg.Git.Credentials, config.GitCredential{URL: "ssh://", GitAuth: config.GitAuth{SSHKeyFile: g.sshKeyFile, SSHKeyEnv: g.sshKeyEnv}})
	}
	return nil
}

// configHosts are the host[:port]s of the https repositories that the
// config file's apps name, in order, once each.
func configHosts(cfg *config.Config) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range cfg.Apps {
		if a.GitOps != nil || !strings.HasPrefix(strings.ToLower(a.Source.Repo), "https://") {
			continue
		}
		ep, err := transport.NewEndpoint(a.Source.Repo)
		if err != nil {
			continue
		}
		h := strings.ToLower(ep.Host)
		if ep.Port != 0 && ep.Port != 443 {
			h = net.JoinHostPort(h, fmt.Sprint(ep.Port))
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}
