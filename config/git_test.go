package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGitCredentialsAreCheckedWhenTheConfigIsRead(t *testing.T) {
	tests := []struct {
		name, git, want string // want "" means valid
	}{
		{"a host and a token", "credentials: [{url: github.com, tokenEnv: GIT_TOKEN}]", ""},
		{"an https prefix and a user", "credentials: [{url: 'https://gitlab.example.com/platform/', tokenEnv: T, username: oauth2}]", ""},
		{"every SSH host for a key", "credentials: [{url: 'ssh://', sshKeyFile: /keys/id}]", ""},
		{"http:// is refused", "credentials: [{url: 'http://git.example.com', tokenEnv: T}]", "credentials are never sent over http://"},
		{"a token for every host is refused", "credentials: [{url: 'https://', tokenEnv: T}]", "want a host"},
		{"a token for ssh is refused", "credentials: [{url: 'ssh://github.com', tokenEnv: T}]", "a token is sent to https URLs only"},
		{"a key for https is refused", "credentials: [{url: 'https://github.com', sshKeyEnv: K}]", "an SSH key is used with ssh URLs only"},
		{"two secrets in one entry", "credentials: [{url: github.com, tokenEnv: T, sshKeyEnv: K}]", "want exactly one of"},
		{"a password in the url", "credentials: [{url: 'https://u:p@github.com', tokenEnv: T}]", "a user or password in the url is not allowed"},
		{"a wildcard host", "credentials: [{url: '*.example.com', tokenEnv: T}]", "no wildcards"},
		{"no url", "credentials: [{tokenEnv: T}]", "url is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\ngit:\n  " + tt.git + "\n"))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestASourceWithARepoStaysInsideIt(t *testing.T) {
	tests := []struct {
		name, source, want string
	}{
		{"a path inside the repository", "{repo: 'https://github.com/o/r', path: apps/web}", ""},
		{"a path that climbs out", "{repo: 'https://github.com/o/r', path: ../../etc}", `source.path "../../etc" leaves the repository`},
		{"an absolute path", "{repo: 'https://github.com/o/r', path: /var/run/secrets}", `source.path "/var/run/secrets" leaves the repository`},
		{"a values file in a sibling folder", "{repo: 'https://github.com/o/r', path: charts/web, helm: {valuesFiles: [../../values/prod.yaml]}}", ""},
		{"a values file that climbs out", "{repo: 'https://github.com/o/r', path: charts/web, helm: {valuesFiles: [../../../secret.yaml]}}", "leaves the repository"},
		{"an absolute values file", "{repo: 'https://github.com/o/r', path: charts/web, helm: {valuesFiles: [/etc/passwd]}}", "leaves the repository"},
		{"a local path may climb: the config author wrote it", "{path: ../shared/apps}", ""},
		{"a token over http://", "{repo: 'http://git.example.com/o/r', auth: {tokenEnv: T}}", "a token is sent over https only"},
		{"a chart from a repository", "{repo: 'https://charts.example.com', chart: web, revision: ^1.2, helm: {valuesFiles: [values/prod.yaml]}}", ""},
		{"a chart with no repository", "{chart: web}", "source.chart needs source.repo"},
		{"a chart with a path", "{repo: 'https://charts.example.com', chart: web, path: charts/web}", "leave path out"},
		{"a chart rendered with kustomize", "{repo: 'https://charts.example.com', chart: web, kustomize: {}}", "rendered with Helm"},
		{"a chart named by its URL", "{repo: 'https://charts.example.com', chart: 'https://charts.example.com/web'}", "want the chart's name"},
		{"a chart from an OCI registry over plain HTTP", "{repo: 'oci://registry.internal:5000/charts', chart: web, plainHTTP: true}", ""},
		{"plain HTTP for an index repository", "{repo: 'https://charts.example.com', chart: web, plainHTTP: true}", "source.plainHTTP is for an oci:// registry"},
		{"plain HTTP for a Git repository", "{repo: 'https://git.example.com/o/r', plainHTTP: true}", "source.plainHTTP is for an oci:// registry"},
		{"an OCI artifact over plain HTTP, its layer named", "{repo: 'oci://registry.internal:5000/manifests/app', revision: '1.x', path: deploy, plainHTTP: true, layer: application/vnd.oci.image.layer.v1.tar}", ""},
		{"a layer for a Git repository", "{repo: 'https://git.example.com/o/r', layer: application/vnd.oci.image.layer.v1.tar}", "source.layer is for an OCI artifact"},
		{"a layer for a chart", "{repo: 'oci://registry.internal:5000/charts', chart: web, layer: application/vnd.oci.image.layer.v1.tar}", "source.layer is for an OCI artifact"},
		{"an OCI artifact's path that leaves it", "{repo: 'oci://registry.internal:5000/manifests/app', path: ../x}", "leaves the repository"},
		{"a chart's token over http://", "{repo: 'http://charts.example.com', chart: web, auth: {tokenEnv: T}}", "a token is sent over https only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\napps:\n- name: web\n  source: " + tt.source + "\n"))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseGitCredentialFlag(t *testing.T) {
	tests := []struct {
		in   string
		want GitCredential
		err  string
	}{
		{in: "github.com=GIT_TOKEN", want: GitCredential{URL: "github.com", GitAuth: GitAuth{TokenEnv: "GIT_TOKEN"}}},
		{in: "x-access-token@github.com/platform=GH", want: GitCredential{URL: "github.com/platform", GitAuth: GitAuth{TokenEnv: "GH", Username: "x-access-token"}}},
		{in: "https://oauth2@gitlab.example.com:8443/group=GL", want: GitCredential{URL: "https://gitlab.example.com:8443/group", GitAuth: GitAuth{TokenEnv: "GL", Username: "oauth2"}}},
		{in: "GIT_TOKEN", err: "want HOST[/PATH]=ENV_VAR"},
		{in: "http://github.com=T", err: "never sent over http://"},
	}
	for _, tt := range tests {
		got, err := ParseGitCredentialFlag(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.in, d)
		}
	}
}
