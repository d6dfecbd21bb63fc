package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/internal/httpca"
	"github.com/calricon/driftscan/redact"
)

// Bounds on what a chart repository may send. A repository's index.yaml
// lists every version of every chart it holds: the largest public ones are
// tens of MiB. A packaged chart is bounded by Helm's own limit on what it
// decompresses to (archive.MaxDecompressedChartSize); compressed it is a
// fraction of that.
const (
	maxIndexBytes   = 64 << 20
	maxArchiveBytes = 32 << 20
)

// ChartOptions say which chart to fetch from a Helm chart repository, and
// how. Start from the scan's Options (Resolve fills them).
type ChartOptions struct {
	// Repo is the repository's URL: https:// or http://, index.yaml
	// beneath it, or oci://host/path, the chart being host/path/<Chart>.
	Repo string
	// Chart is the chart's name in the repository's index.
	Chart string
	// Version is a version the index lists, or a semver constraint
	// ("^1.2", ">=1.0 <2"), as Argo CD's targetRevision and Flux's
	// chart.spec.version are: the newest version that meets it. "" or "*"
	// is the newest version that is not a pre-release.
	Version string
	// Auth, else the credential of Credentials whose prefix matches a URL,
	// is sent as HTTP basic auth (the user and the token), over https
	// only, and only to URLs it matches: the index and, when the index
	// points elsewhere, the archive each get their own.
	Auth        config.GitAuth
	Credentials []config.GitCredential
	// CABundle is PEM certificates trusted in addition to the system's.
	CABundle []byte
	// PlainHTTP speaks HTTP to an oci:// registry instead of HTTPS (a
	// registry on a private network, Flux's HelmRepository insecure);
	// no token is sent then.
	PlainHTTP bool
	Cache     *Cache
	Getenv    func(string) string
}

// Chart is a chart fetched and unpacked.
type Chart struct {
	// Dir is the unpacked chart; its folder name is the chart's name.
	Dir string
	// Version is the version fetched.
	Version string
	// Digest is the SHA-256 of the archive, as the index lists it.
	Digest string
}

// chartIndex is what FetchChart reads of a repository's index.yaml.
type chartIndex struct {
	APIVersion string                    `json:"apiVersion"`
	Entries    map[string][]chartVersion `json:"entries"`
}

type chartVersion struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// chartCache is <chart folder>/versions.json: the digest of each version
// unpacked there, so that a version asked for exactly is read from the
// cache without asking the repository.
type chartCache struct {
	Versions map[string]string `json:"versions"`
}

var (
	digestText  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	versionText = regexp.MustCompile(`^v?[0-9A-Za-z.+-]{1,128}$`)
)

// FetchChart fetches a chart from a Helm chart repository, as `helm pull
// --repo` does, or from an OCI registry (ociRemote), into the cache, and
// unpacks it:
//   - the version is chosen from the repository's index.yaml, or the
//     registry's tags (see ChartOptions.Version); an exact version already
//     in the cache is read from there without asking the repository,
//     because a chart version, once published, does not change (Argo CD's
//     repo-server caches them so too);
//   - the archive must have the SHA-256 the index lists (the registry's
//     layer digest), and is unpacked with Helm's own loader (its bounds on
//     size, and on paths that would leave the chart);
//   - the cache folder is <cache>/charts/<hash of repository and chart>/,
//     one folder per archive digest, shared between processes as Git
//     clones are (Cache), and pruned like them.
//
// Errors name the repository (without credentials), the chart and the
// version.
func FetchChart(ctx context.Context, opts ChartOptions) (Chart, error) {
	repo := strings.TrimRight(opts.Repo, "/")
	what := fmt.Sprintf("chart %s from %s", opts.Chart, redact.URL(repo))
	c, err := fetchChart(ctx, repo, opts)
	if err != nil {
		return Chart{}, fmt.Errorf("%s: %w", what, err)
	}
	return c, nil
}

func fetchChart(ctx context.Context, repo string, opts ChartOptions) (Chart, error) {
	if opts.Cache == nil || opts.Cache.Dir == "" {
		return Chart{}, errors.New("no cache folder")
	}
	if opts.Chart == "" || strings.ContainsAny(opts.Chart, `/\`) || opts.Chart == "." || opts.Chart == ".." {
		return Chart{}, fmt.Errorf("chart name %q: want the name of one chart in the repository", opts.Chart)
	}
	base, err := repoURL(repo)
	if err != nil {
		return Chart{}, err
	}
	f, err := newChartFetch(opts)
	if err != nil {
		return Chart{}, err
	}
	var remote chartRemote
	switch base.Scheme {
	case "https", "http":
		f.client.CheckRedirect = f.redirect
		remote = &indexRemote{f: f, base: base, repo: repo}
	case "oci":
		if remote, err = newOCIRemote(f, base); err != nil {
			return Chart{}, err
		}
	default:
		return Chart{}, fmt.Errorf("repository URL: want https://, http:// or oci://, got %q", base.Scheme+"://")
	}

	sum := sha256.Sum256([]byte(repo + "\n" + opts.Chart))
	dir := filepath.Join(opts.Cache.Dir, "charts", hex.EncodeToString(sum[:16]))
	unlock, err := opts.Cache.lock(ctx, dir)
	if err != nil {
		return Chart{}, err
	}
	defer unlock()
	cached := readChartCache(dir)

	if d, ok := cached.Versions[opts.Version]; ok && opts.Version != "" {
		if c, ok := unpacked(dir, opts.Chart, opts.Version, d); ok {
			return c, opts.Cache.used(dir, d[:40])
		}
	}
	version, want, err := remote.resolve(ctx, opts.Version)
	if err != nil {
		return Chart{}, err
	}
	if want != "" && cached.Versions[version] == want {
		if c, ok := unpacked(dir, opts.Chart, version, want); ok {
			return c, opts.Cache.used(dir, want[:40])
		}
	}
	data, err := remote.archive(ctx, version)
	if err != nil {
		return Chart{}, fmt.Errorf("version %s: %w", version, err)
	}
	got := sha256.Sum256(data)
	digest := hex.EncodeToString(got[:])
	if want != "" && want != digest {
		return Chart{}, fmt.Errorf("version %s: the archive's SHA-256 is %s, the repository says %s: refused", version, digest, want)
	}
	files, err := archive.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil {
		return Chart{}, fmt.Errorf("version %s: unpack: %w", version, err)
	}
	c, err := unpack(dir, opts.Chart, version, digest, files)
	if err != nil {
		return Chart{}, fmt.Errorf("version %s: %w", version, err)
	}
	if cached.Versions == nil {
		cached.Versions = map[string]string{}
	}
	cached.Versions[version] = digest
	if data, err := json.Marshal(cached); err == nil {
		// A cache that is not written only costs the next run a request.
		_ = replaceFile(filepath.Join(dir, "versions.json"), data)
	}
	return c, opts.Cache.used(dir, digest[:40])
}

// chartRemote is where a chart's versions are listed and its archives
// fetched: a repository with an index.yaml, or an OCI registry.
type chartRemote interface {
	// resolve picks the version want names (see ChartOptions.Version)
	// and says the SHA-256 its archive must have ("" when the repository
	// does not say).
	resolve(ctx context.Context, want string) (version, digest string, err error)
	// archive fetches the packaged chart of version.
	archive(ctx context.Context, version string) ([]byte, error)
}

// indexRemote is a Helm chart repository: index.yaml lists every version
// and where its archive is.
type indexRemote struct {
	f    *chartFetch
	base *url.URL
	repo string
	v    chartVersion // the version resolve picked
}

func (r *indexRemote) resolve(ctx context.Context, want string) (string, string, error) {
	key := r.repo + "\n" + r.f.opts.Auth.Username + "\n" + r.f.opts.Auth.TokenEnv
	index, err := r.f.opts.Cache.index(key, func() (*chartIndex, error) { return r.f.index(ctx, r.repo) })
	if err != nil {
		return "", "", err
	}
	if r.v, err = pickVersion(index, r.f.opts.Chart, want); err != nil {
		return "", "", err
	}
	return r.v.Version, r.v.Digest, nil
}

func (r *indexRemote) archive(ctx context.Context, version string) ([]byte, error) {
	if len(r.v.URLs) == 0 {
		return nil, errors.New("the index lists no URL for it")
	}
	base := *r.base
	if !strings.HasSuffix(base.Path, "/") {
		// Relative to the repository, as Helm's ResolveReferenceURL
		// reads it: the repository URL is a folder.
		base.Path += "/"
	}
	ref, err := base.Parse(r.v.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("archive URL: %w", err)
	}
	return r.f.get(ctx, ref.String(), maxArchiveBytes)
}

// replaceFile writes data to file through a temporary file renamed over it,
// so that a reader sees the old file or the new one, whole.
func replaceFile(file string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".versions-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// readChartCache reads versions.json; a missing or broken one is empty.
func readChartCache(dir string) chartCache {
	var c chartCache
	if data, err := os.ReadFile(filepath.Join(dir, "versions.json")); err == nil {
		_ = json.Unmarshal(data, &c)
	}
	if !digestsValid(c.Versions) {
		c.Versions = nil
	}
	return c
}

func digestsValid(m map[string]string) bool {
	for _, d := range m {
		if !digestText.MatchString(d) {
			return false
		}
	}
	return true
}

// unpacked is the chart of digest in the cache folder dir, when a complete
// one is there (its Chart.yaml was written last).
func unpacked(dir, name, version, digest string) (Chart, bool) {
	d := filepath.Join(dir, digest[:40], name)
	if _, err := os.Stat(filepath.Join(d, "Chart.yaml")); err != nil {
		return Chart{}, false
	}
	return Chart{Dir: d, Version: version, Digest: digest}, true
}

// unpack writes files, as Helm's loader read them from the archive, into
// <dir>/<digest[:40]>/<name>/: first into a temporary folder, renamed into
// place whole, so that a process killed on the way leaves no half chart
// (Cache.used removes the temporary folder).
func unpack(dir, name, version, digest string, files []*archive.BufferedFile) (Chart, error) {
	tmp, err := os.MkdirTemp(dir, ".tree-")
	if err != nil {
		return Chart{}, err
	}
	defer os.RemoveAll(tmp)
	hasChart := false
	for _, f := range files {
		// LoadArchiveFiles has refused absolute names and names with "..";
		// checked again, as nothing may land outside the folder.
		p := path.Clean(f.Name)
		if p == "." || !config.InRepo(p) {
			return Chart{}, fmt.Errorf("archive file %q leaves the chart", f.Name)
		}
		hasChart = hasChart || p == "Chart.yaml"
		out := filepath.Join(tmp, name, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return Chart{}, err
		}
		if err := os.WriteFile(out, f.Data, 0o644); err != nil {
			return Chart{}, err
		}
	}
	if !hasChart {
		return Chart{}, errors.New("the archive holds no Chart.yaml")
	}
	tree := filepath.Join(dir, digest[:40])
	if err := os.RemoveAll(tree); err != nil {
		return Chart{}, err
	}
	if err := os.Rename(tmp, tree); err != nil {
		return Chart{}, err
	}
	return Chart{Dir: filepath.Join(tree, name), Version: version, Digest: digest}, nil
}

// pickVersion chooses the version of chart that want names: the version
// itself when the index lists it, else the newest that meets want as a
// semver constraint.
func pickVersion(index *chartIndex, chart, want string) (chartVersion, error) {
	versions, ok := index.Entries[chart]
	if !ok || len(versions) == 0 {
		return chartVersion{}, errors.New("the repository's index lists no such chart")
	}
	for _, v := range versions {
		if want != "" && v.Version == want {
			return checkedVersion(v)
		}
	}
	constraint := want
	if constraint == "" {
		constraint = "*"
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return chartVersion{}, fmt.Errorf("version %q is neither a version the index lists nor a semver constraint: %v", want, err)
	}
	var best chartVersion
	var bestV *semver.Version
	var listed []*semver.Version
	for _, v := range versions {
		sv, err := semver.NewVersion(v.Version)
		if err != nil {
			continue
		}
		listed = append(listed, sv)
		if c.Check(sv) && (bestV == nil || sv.GreaterThan(bestV)) {
			best, bestV = v, sv
		}
	}
	if bestV == nil {
		slices.SortFunc(listed, func(a, b *semver.Version) int { return b.Compare(a) })
		var names []string
		for _, v := range listed[:min(len(listed), 5)] {
			names = append(names, v.Original())
		}
		return chartVersion{}, fmt.Errorf("no version meets %q (newest listed: %s)", constraint, strings.Join(names, ", "))
	}
	return checkedVersion(best)
}

// checkedVersion refuses what a repository may write that the report, the
// cache and the archive check cannot take: a version that is no plain
// version text (it is reported, and a cache key), a digest that is not a
// SHA-256.
func checkedVersion(v chartVersion) (chartVersion, error) {
	if !versionText.MatchString(v.Version) {
		return chartVersion{}, fmt.Errorf("version %q: not a version text (letters, digits, '.', '+', '-')", v.Version)
	}
	if v.Digest != "" && !digestText.MatchString(strings.ToLower(v.Digest)) {
		return chartVersion{}, fmt.Errorf("version %s: digest %q is not a SHA-256", v.Version, v.Digest)
	}
	v.Digest = strings.ToLower(v.Digest)
	return v, nil
}

// chartFetch is one FetchChart's HTTP client and credentials.
type chartFetch struct {
	opts   ChartOptions
	client *http.Client
	getenv func(string) string
}

// repoURL parses a chart repository's or a registry's URL, which carries
// no credential: those are bound to it by the config.
func repoURL(repo string) (*url.URL, error) {
	base, err := url.Parse(repo)
	if err != nil {
		return nil, fmt.Errorf("repository URL: %w", err)
	}
	if base.User != nil {
		return nil, errors.New("repository URL: a user or password in the URL is not sent: name the credential with git.credentials or auth.tokenEnv")
	}
	return base, nil
}

// newChartFetch is the client and credentials of one fetch with opts: its
// CA bundle trusted, its environment read (os.Getenv by default).
func newChartFetch(opts ChartOptions) (*chartFetch, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	client, err := chartClient(opts.CABundle)
	if err != nil {
		return nil, err
	}
	return &chartFetch{opts: opts, client: client, getenv: getenv}, nil
}

// index reads and parses the repository's index.yaml.
func (f *chartFetch) index(ctx context.Context, repo string) (*chartIndex, error) {
	data, err := f.get(ctx, repo+"/index.yaml", maxIndexBytes)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	var index chartIndex
	if err := sigsyaml.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("index.yaml: not a Helm repository index: %v", err)
	}
	if index.APIVersion == "" || index.Entries == nil {
		return nil, errors.New("index.yaml: not a Helm repository index (no apiVersion or entries)")
	}
	return &index, nil
}

// get reads u, at most limit bytes, with the credential that matches it.
func (f *chartFetch) get(ctx context.Context, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	sent, secrets, err := f.authorize(req)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "driftscan")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, scrubError(err, secrets)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint := "give one in git.credentials for this URL (a user and tokenEnv)"
		if sent {
			hint = "the credential sent was refused"
		}
		return nil, fmt.Errorf("GET %s: %s: %s", redact.URL(u), resp.Status, hint)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", redact.URL(u), resp.Status)
	case resp.ContentLength > limit:
		return nil, fmt.Errorf("GET %s: %d bytes, more than the %d driftscan reads", redact.URL(u), resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact.URL(u), scrubError(err, secrets))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("GET %s: more than the %d bytes driftscan reads", redact.URL(u), limit)
	}
	return data, nil
}

// redirect sends a redirected request the credential of where it now goes,
// and none when none matches: a redirect to another host, or from https to
// http, carries no credential the config did not bind there.
func (f *chartFetch) redirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	req.Header.Del("Authorization")
	_, _, err := f.authorize(req)
	return err
}

// authorize sets req's basic auth to the credential bound to its URL
// (credential), and says whether it set one.
func (f *chartFetch) authorize(req *http.Request) (sent bool, secrets []string, err error) {
	user, pass, secrets, err := f.credential(req.URL.String())
	if err != nil || pass == "" {
		return false, secrets, err
	}
	req.SetBasicAuth(user, pass)
	return true, secrets, nil
}

// credential is the user and token to send to u: the source's own auth,
// else the credential whose prefix matches u, as for Git (authFor); a
// token only over https.
func (f *chartFetch) credential(u string) (user, pass string, secrets []string, err error) {
	ep, err := transport.NewEndpoint(u)
	if err != nil {
		return "", "", nil, err
	}
	auth, secrets, err := authFor(ep, f.opts.Auth, f.opts.Credentials, f.getenv)
	if err != nil {
		return "", "", secrets, err
	}
	switch a := auth.(type) {
	case nil:
		return "", "", nil, nil
	case *githttp.BasicAuth:
		return a.Username, a.Password, secrets, nil
	}
	return "", "", secrets, errors.New("an SSH key is no credential for a chart repository: give a user and tokenEnv")
}

// chartClient is an HTTP client that trusts the system's certificates and
// ca, and takes the proxy from the environment.
func chartClient(ca []byte) (*http.Client, error) {
	t, err := httpca.Transport(ca)
	if err != nil {
		return nil, fmt.Errorf("git.caFile %w", err)
	}
	return &http.Client{Transport: t}, nil
}
