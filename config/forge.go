package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/calricon/driftscan/forge"
)

// DefaultForgeTokenEnv is the variable the forge token is read from when
// forge.tokenEnv names none (the chart sets it from forge.tokenSecret).
const DefaultForgeTokenEnv = "DRIFTSCAN_FORGE_TOKEN"

// Forge is the config's forge section: where pull requests of backports
// are opened. Every field may be left out: the forge and its API are
// detected from the app's repository URL.
//
//	forge:
//	  kind: github                                  # github, gitlab or gitea (Forgejo too)
//	  apiURL: https://github.example.com/api/v3     # GitHub Enterprise, self-managed GitLab, ...
//	  tokenEnv: GITHUB_TOKEN                         # default DRIFTSCAN_FORGE_TOKEN
type Forge struct {
	Kind     forge.Kind `yaml:"kind" json:"kind,omitempty"`
	APIURL   string     `yaml:"apiURL" json:"apiURL,omitempty"`
	TokenEnv string     `yaml:"tokenEnv" json:"tokenEnv,omitempty"`
}

// Token is the name of the variable the token is in.
func (f *Forge) Token() string {
	if f == nil || f.TokenEnv == "" {
		return DefaultForgeTokenEnv
	}
	return f.TokenEnv
}

// Validate checks the kind and that the API is https; it reads no secret.
func (f *Forge) Validate() error {
	if f == nil {
		return nil
	}
	if f.Kind != "" && !slices.Contains(forge.Kinds, f.Kind) {
		return fmt.Errorf("kind %q: want one of %v", f.Kind, forge.Kinds)
	}
	if f.APIURL != "" && !strings.HasPrefix(f.APIURL, "https://") {
		return fmt.Errorf("apiURL %q: the token is sent over https only", f.APIURL)
	}
	return nil
}

// PullRequestRoute is what an owner wants on the pull requests of its apps'
// backports: labels, and reviewers ("@user" or "org/team"), besides the
// repository's CODEOWNERS.
type PullRequestRoute struct {
	Labels    []string `yaml:"labels,omitempty" json:"labels,omitempty"`
	Reviewers []string `yaml:"reviewers,omitempty" json:"reviewers,omitempty"`
}
