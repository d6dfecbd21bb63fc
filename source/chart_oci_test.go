package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/chartrepo"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// pushCharts packages each version of webChart with the real helm and
// pushes it to the registry with `helm push`, as a chart's publisher does.
func pushCharts(t *testing.T, reg *reconcilers.Registry, versions ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, v := range versions {
		tgz := chartrepo.Package(t, dir, webChart(v))
		args := []string{"push", tgz, "oci://" + reg.Host + "/charts"}
		if reg.CA == nil {
			args = append(args, "--plain-http")
		} else {
			ca := filepath.Join(dir, "ca.pem")
			if err := os.WriteFile(ca, reg.CA, 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--ca-file", ca)
		}
		if reg.User != "" {
			args = append(args, "--username", reg.User, "--password", reg.Password)
		}
		chartrepo.RunHelm(t, dir, args...)
	}
}

// A chart `helm push` stored in a real OCI registry (distribution) is
// fetched as Argo CD and Flux fetch it: the version asked for, the newest a
// constraint allows (a "+" in a version is "_" in its tag), checked against
// the manifest's layer digest, and cached.
func TestFetchChartFromAnOCIRegistry(t *testing.T) {
	reg := reconcilers.StartRegistry(t, reconcilers.RegistryOptions{})
	pushCharts(t, reg, "1.0.0", "1.1.0", "1.2.0+build.7", "2.0.0-rc.1")
	repo := "oci://" + reg.Host + "/charts"
	cache := NewCache(t.TempDir())
	for _, c := range []struct{ want, got string }{
		{"1.0.0", "1.0.0"},
		{"", "1.2.0+build.7"},
		{"~1.1", "1.1.0"},
		{">=2.0.0-0", "2.0.0-rc.1"},
		{"1.2.0+build.7", "1.2.0+build.7"},
	} {
		got, err := FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "web", Version: c.want, PlainHTTP: true, Cache: cache})
		if err != nil {
			t.Errorf("version %q: %v", c.want, err)
			continue
		}
		if got.Version != c.got || !strings.Contains(chartVersionOf(t, got), "version: "+c.got) {
			t.Errorf("version %q: fetched %s (Chart.yaml %q), want %s", c.want, got.Version, chartVersionOf(t, got), c.got)
		}
		if _, err := os.Stat(filepath.Join(got.Dir, "templates", "cm.yaml")); err != nil {
			t.Errorf("version %q: %v", c.want, err)
		}
	}
	if _, err := FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "web", Version: "3.x", PlainHTTP: true, Cache: cache}); err == nil || !strings.Contains(err.Error(), `no version meets "3.x"`) {
		t.Errorf("a constraint nothing meets: %v", err)
	}
	if _, err := FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "api", Version: "1.0.0", PlainHTTP: true, Cache: cache}); err == nil || !strings.Contains(err.Error(), "chart api from oci://"+reg.Host) {
		t.Errorf("a chart the registry does not hold: %v", err)
	}
	// HTTPS is the default: the plain-HTTP registry does not speak it.
	if _, err := FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "web", Version: "1.1.0", Cache: NewCache(t.TempDir())}); err == nil {
		t.Error("fetched over https from a plain-HTTP registry")
	}
}

// A private registry over TLS gets the credential bound to it, and none
// without one; a token never goes over plain HTTP.
func TestFetchChartFromAPrivateOCIRegistry(t *testing.T) {
	reg := reconcilers.StartRegistry(t, reconcilers.RegistryOptions{User: "ci", Password: "s3cret-token", TLS: true})
	pushCharts(t, reg, "1.0.0", "1.1.0")
	repo := "oci://" + reg.Host + "/charts"
	getenv := func(k string) string { return map[string]string{"REGISTRY_TOKEN": "s3cret-token"}[k] }
	creds := []config.GitCredential{{URL: reg.Host, GitAuth: config.GitAuth{TokenEnv: "REGISTRY_TOKEN", Username: "ci"}}}

	_, err := FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "web", Version: "1.0.0", CABundle: reg.CA, Cache: NewCache(t.TempDir())})
	if err == nil || !strings.Contains(err.Error(), "give one in git.credentials") {
		t.Errorf("no credential for a private registry: want an error saying where to give one, got %v", err)
	}
	_, err = FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "web", Version: "1.0.0", Cache: NewCache(t.TempDir()), Credentials: creds, Getenv: getenv})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted certificate: want a certificate error, got %v", err)
	}
	wrong := func(string) string { return "not-the-token" }
	_, err = FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "web", Version: "1.0.0", CABundle: reg.CA, Cache: NewCache(t.TempDir()), Credentials: creds, Getenv: wrong})
	if err == nil || !strings.Contains(err.Error(), "the credential sent was refused") || strings.Contains(err.Error(), "not-the-token") {
		t.Errorf("a wrong token: want it named refused and never shown, got %v", err)
	}
	got, err := FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "web", Version: "^1.0", CABundle: reg.CA, Cache: NewCache(t.TempDir()), Credentials: creds, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "1.1.0" {
		t.Errorf("^1.0 from the private registry: %s, want 1.1.0", got.Version)
	}
	_, err = FetchChart(t.Context(), ChartOptions{Repo: repo, Chart: "web", Version: "1.0.0", PlainHTTP: true, Cache: NewCache(t.TempDir()),
		Auth: config.GitAuth{TokenEnv: "REGISTRY_TOKEN", Username: "ci"}, Getenv: getenv})
	if err == nil || !strings.Contains(err.Error(), "https only") {
		t.Errorf("a token over plain HTTP: want it refused, got %v", err)
	}
}
