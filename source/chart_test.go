package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
	"github.com/calricon/driftscan/fixtures/chartrepo"
)

// webChart is a small chart at version, its ConfigMap naming the version.
func webChart(version string) chartrepo.Chart {
	return chartrepo.Chart{Files: map[string]string{
		"Chart.yaml":           "apiVersion: v2\nname: web\nversion: " + version + "\n",
		"values.yaml":          "greeting: hello\n",
		"templates/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-web\ndata:\n  version: {{ .Chart.Version | quote }}\n  greeting: {{ .Values.greeting | quote }}\n",
		"templates/NOTES.txt":  "installed\n",
		"files/config/app.ini": "[app]\n",
	}}
}

func chartVersionOf(t *testing.T, c Chart) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.Dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A chart from a repository that the real helm packaged and indexed is
// fetched at the version asked for, or the newest a constraint allows, and
// unpacked whole; the folder is named after the chart.
func TestFetchChartPicksTheVersionAsArgoCDAndFluxDo(t *testing.T) {
	repo := chartrepo.Serve(t, chartrepo.Options{}, webChart("1.0.0"), webChart("1.1.0"), webChart("2.0.0-rc.1"), webChart("0.9.0"))
	cache := NewCache(t.TempDir())
	for _, c := range []struct{ want, got, err string }{
		{want: "", got: "1.1.0"},
		{want: "*", got: "1.1.0"},
		{want: "1.0.0", got: "1.0.0"},
		{want: "^1.0", got: "1.1.0"},
		{want: "~1.0.0", got: "1.0.0"},
		{want: ">=1.0.0-0", got: "2.0.0-rc.1"},
		{want: "2.0.0-rc.1", got: "2.0.0-rc.1"},
		{want: "3.x", err: `no version meets "3.x" (newest listed: 2.0.0-rc.1, 1.1.0, 1.0.0, 0.9.0)`},
		{want: "not a version", err: `version "not a version" is neither a version the index lists nor a semver constraint`},
	} {
		got, err := FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Version: c.want, Cache: cache})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "chart web from "+repo.URL) {
				t.Errorf("version %q: want an error naming the chart, repository and %q, got %v", c.want, c.err, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("version %q: %v", c.want, err)
			continue
		}
		if got.Version != c.got || !strings.Contains(chartVersionOf(t, got), "version: "+c.got) {
			t.Errorf("version %q: fetched %s (Chart.yaml %q), want %s", c.want, got.Version, chartVersionOf(t, got), c.got)
		}
		if filepath.Base(got.Dir) != "web" {
			t.Errorf("the chart's folder is %s, want one named web", got.Dir)
		}
		for _, f := range []string{"values.yaml", "templates/cm.yaml", "templates/NOTES.txt", "files/config/app.ini"} {
			if _, err := os.Stat(filepath.Join(got.Dir, f)); err != nil {
				t.Errorf("version %q: %v", c.want, err)
			}
		}
	}
	if _, err := FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "api", Cache: cache}); err == nil || !strings.Contains(err.Error(), "lists no such chart") {
		t.Errorf("a chart the index does not list: %v", err)
	}
}

// An exact version already fetched is read from the cache, without asking
// the repository (it may be down); a constraint needs the index.
func TestAFetchedChartVersionIsReadFromTheCache(t *testing.T) {
	repo := chartrepo.Serve(t, chartrepo.Options{}, webChart("1.0.0"))
	cache := NewCache(t.TempDir())
	first, err := FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Version: "1.0.0", Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	served := len(repo.Requests())
	repo.Server.Close()
	again, err := FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Version: "1.0.0", Cache: NewCache(cache.Dir)})
	if err != nil {
		t.Fatalf("the cached version, with the repository down: %v", err)
	}
	if again != first {
		t.Errorf("from the cache %+v, fetched %+v", again, first)
	}
	if n := len(repo.Requests()); n != served {
		t.Errorf("%d requests after the first fetch, want none", n-served)
	}
	if _, err := FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Version: "^1", Cache: NewCache(cache.Dir)}); err == nil || !strings.Contains(err.Error(), "index") {
		t.Errorf("a constraint with the repository down: want an error reading the index, got %v", err)
	}
}

// A private repository over TLS: the credential bound to its URL is sent
// to it, as basic auth, and to nothing else; without one the error says
// what to do; the CA bundle is trusted.
func TestFetchChartSendsTheCredentialOnlyWhereItIsBound(t *testing.T) {
	// The archives live on a second, open server (a CDN): the index
	// names them by absolute URL.
	cdn := chartrepo.Serve(t, chartrepo.Options{TLS: true}, webChart("1.0.0"))
	repo := chartrepo.Serve(t, chartrepo.Options{TLS: true, User: "ci", Password: "s3cret-token"})
	data, err := os.ReadFile(filepath.Join(cdn.Dir, "web-1.0.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo.Dir, "web-1.0.0.tgz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	repo.Index(t, cdn.URL)
	ca := append(append([]byte{}, repo.CA...), cdn.CA...)
	getenv := func(k string) string { return map[string]string{"CHARTS_TOKEN": "s3cret-token"}[k] }
	creds := []config.GitCredential{{URL: repo.URL, GitAuth: config.GitAuth{TokenEnv: "CHARTS_TOKEN", Username: "ci"}}}

	_, err = FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Cache: NewCache(t.TempDir()), CABundle: ca})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "git.credentials") {
		t.Errorf("no credential: want a 401 error saying where to give one, got %v", err)
	}
	_, err = FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Cache: NewCache(t.TempDir()), Credentials: creds, Getenv: getenv})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted certificate: want a certificate error, got %v", err)
	}
	got, err := FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Cache: NewCache(t.TempDir()), Credentials: creds, Getenv: getenv, CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "1.0.0" {
		t.Errorf("version %s", got.Version)
	}
	sawIndex := false
	for _, r := range repo.Requests() {
		if r.Path == "/charts/index.yaml" && r.Status == http.StatusOK {
			sawIndex = true
		}
	}
	if !sawIndex {
		t.Errorf("the private index was never read with the credential: %+v", repo.Requests())
	}
	archives := 0
	for _, r := range cdn.Requests() {
		if strings.HasSuffix(r.Path, ".tgz") {
			archives++
		}
		if r.Auth != "" {
			t.Errorf("the credential went to %s, a host it is not bound to", r.Path)
		}
	}
	if archives != 1 {
		t.Errorf("%d archive requests to the CDN, want 1: %+v", archives, cdn.Requests())
	}

	// Over http:// a token is never sent.
	plain := chartrepo.Serve(t, chartrepo.Options{User: "ci", Password: "s3cret-token"}, webChart("1.0.0"))
	_, err = FetchChart(t.Context(), ChartOptions{Repo: plain.URL, Chart: "web", Cache: NewCache(t.TempDir()),
		Auth: config.GitAuth{TokenEnv: "CHARTS_TOKEN"}, Getenv: getenv})
	if err == nil || !strings.Contains(err.Error(), "https only") {
		t.Errorf("a token for an http:// repository: want it refused, got %v", err)
	}
	for _, r := range plain.Requests() {
		if r.Auth != "" {
			t.Errorf("a credential went over http:// to %s", r.Path)
		}
	}
}

// An archive that is not what the index says is refused, and nothing of it
// is kept.
func TestFetchChartRefusesAnArchiveWhoseDigestDiffers(t *testing.T) {
	repo := chartrepo.Serve(t, chartrepo.Options{}, webChart("1.0.0"))
	// Replace the archive after indexing: the index's digest is the old one.
	other := chartrepo.Package(t, t.TempDir(), chartrepo.Chart{Files: map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n",
	}})
	data, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo.Dir, "web-1.0.0.tgz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cache := NewCache(t.TempDir())
	_, err = FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Version: "1.0.0", Cache: cache})
	if err == nil || !strings.Contains(err.Error(), "SHA-256") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("want the archive refused for its digest, got %v", err)
	}
	var kept []string
	_ = filepath.WalkDir(cache.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) != "lock" && filepath.Base(p) != "runs.json" {
			kept = append(kept, p)
		}
		return nil
	})
	if len(kept) > 0 {
		t.Errorf("the refused archive left files in the cache: %v", kept)
	}
}

// tgz builds a gzipped tar of the given entries.
func tgz(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte{'a'}, int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// hostileRepo serves one archive under a valid index that lists its
// digest.
func hostileRepo(t *testing.T, archive []byte, index string) string {
	t.Helper()
	sum := sha256.Sum256(archive)
	digest := hex.EncodeToString(sum[:])
	if index == "" {
		index = fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.0.0\n    urls: [web-1.0.0.tgz]\n    digest: %s\n", digest)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.yaml":
			_, _ = w.Write([]byte(index))
		case "/web-1.0.0.tgz":
			_, _ = w.Write(archive)
		case "/endless":
			for {
				if _, err := w.Write(bytes.Repeat([]byte("a"), 1<<20)); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// What a hostile repository may send is refused within bounds: an archive
// whose names leave the chart, one that decompresses past Helm's limit, an
// endless response, a YAML bomb of an index, a version that is a path.
func TestFetchChartRefusesHostileRepositories(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 3 << 30, Time: 120 * time.Second}) {
		return
	}
	chartYAML := &tar.Header{Name: "web/Chart.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}
	bomb := "apiVersion: v1\nentries:\n  a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		bomb += fmt.Sprintf("  %s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", n, n, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = n
	}
	for _, c := range []struct {
		name    string
		archive []byte
		index   string
		want    string
		version string // asked for; "" the newest
	}{
		{"a name that climbs out", tgz(t, chartYAML, &tar.Header{Name: "web/../../../escape", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}), "", "unpack", ""},
		{"past Helm's size limit", tgz(t, chartYAML, &tar.Header{Name: "web/big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 200 << 20}), "", "unpack", ""},
		{"no Chart.yaml", tgz(t, &tar.Header{Name: "web/values.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}), "", "Chart.yaml", ""},
		{"an endless archive", nil, "apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.0.0\n    urls: [endless]\n", "more than", ""},
		{"a YAML bomb of an index", nil, bomb, "index", ""},
		{"a version that is a path", nil, "apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: ../../x\n    urls: [web-1.0.0.tgz]\n", "version", ""},
		{"a version asked for exactly that is no version text", nil, "apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: \"1.0.0\\e[31m\"\n    urls: [web-1.0.0.tgz]\n", "not a version text", "1.0.0\x1b[31m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cache := NewCache(t.TempDir())
			_, err := FetchChart(context.Background(), ChartOptions{Repo: hostileRepo(t, c.archive, c.index), Chart: "web", Version: c.version, Cache: cache})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error about %q, got %v", c.want, err)
			}
			escaped, _ := filepath.Glob(filepath.Join(cache.Dir, "..", "escape"))
			if len(escaped) > 0 {
				t.Errorf("a file was written outside the cache: %v", escaped)
			}
		})
	}
	// Helm reads a name as relative to the archive's first folder, so an
	// absolute one lands inside the chart.
	got, err := FetchChart(context.Background(), ChartOptions{Cache: NewCache(t.TempDir()), Chart: "web",
		Repo: hostileRepo(t, tgz(t, chartYAML, &tar.Header{Name: "/etc/escape", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}), "")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(got.Dir, "etc", "escape")); err != nil {
		t.Errorf("an absolute name in the archive: %v", err)
	}
}

// Whatever an index lists and whatever a source asks for, the version
// chosen is one the index lists, a plain version text, and its digest a
// SHA-256 or nothing: it is reported, a cache key, and checked against the
// archive.
func FuzzPickVersion(f *testing.F) {
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {name: web, version: 1.0.0, urls: [a.tgz]}\n  - {name: web, version: 1.2.0-rc.1}\n", "^1.0")
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: \"../../x\", digest: ZZ}\n", "../../x")
	f.Add("apiVersion: v1\nentries: {web: [{version: latest}]}\n", "latest")
	f.Fuzz(func(t *testing.T, index, want string) {
		// make fuzz runs this under ulimit -v; the size keeps an alias
		// bomb within it, as index()'s limit does for a repository's.
		if len(index) > 64<<10 || len(want) > 1<<10 {
			return
		}
		var idx chartIndex
		if err := sigsyaml.Unmarshal([]byte(index), &idx); err != nil {
			return
		}
		v, err := pickVersion(&idx, "web", want)
		if err != nil {
			return
		}
		if !versionText.MatchString(v.Version) || v.Digest != "" && !digestText.MatchString(v.Digest) {
			t.Fatalf("picked %q (digest %q) from %q for %q", v.Version, v.Digest, index, want)
		}
		listed := false
		for _, e := range idx.Entries["web"] {
			listed = listed || e.Version == v.Version
		}
		if !listed {
			t.Fatalf("picked %q, which the index does not list", v.Version)
		}
	})
}

// Charts of one repository in one run (apps sharing a repository, an app
// and its pending sync) read its index once: it can be tens of MiB.
func TestARepositorysIndexIsReadOnceARun(t *testing.T) {
	other := webChart("2.0.0")
	other.Files["Chart.yaml"] = "apiVersion: v2\nname: api\nversion: 2.0.0\n"
	repo := chartrepo.Serve(t, chartrepo.Options{}, webChart("1.0.0"), webChart("1.1.0"), other)
	cache := NewCache(t.TempDir())
	for _, c := range []struct{ chart, want string }{{"web", "^1.0"}, {"api", "*"}, {"web", "~1.0.0"}} {
		if _, err := FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: c.chart, Version: c.want, Cache: cache}); err != nil {
			t.Fatal(err)
		}
	}
	indexes := 0
	for _, r := range repo.Requests() {
		if r.Path == "/charts/index.yaml" {
			indexes++
		}
	}
	if indexes != 1 {
		t.Errorf("index.yaml read %d times in one run, want once", indexes)
	}
	// The next run reads it again: a repository moves on.
	if _, err := FetchChart(t.Context(), ChartOptions{Repo: repo.URL, Chart: "web", Version: "^1.0", Cache: NewCache(cache.Dir)}); err != nil {
		t.Fatal(err)
	}
	if n := len(repo.Requests()); repo.Requests()[n-1].Path != "/charts/index.yaml" {
		t.Errorf("the next run's last request was %s, want the index", repo.Requests()[n-1].Path)
	}
}
