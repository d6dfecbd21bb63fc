package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/redact"
)

// Options say where Git sources are cached and how they are read. Start
// from DefaultOptions.
type Options struct {
	// Cache holds the Git clones (GitOptions.Cache).
	Cache *Cache
	// MaxBytes bounds the size of a checked-out Git tree (GitOptions.MaxBytes,
	// the --git-max-size flag); 0 is no bound.
	MaxBytes int64
	// Git is the config's git section: the credentials bound to hosts and
	// URL prefixes (GitOptions.Credentials) and the CA file for https Git
	// servers, relative to the config's folder.
	Git config.Git
	// Getenv reads the credentials a source names; nil means os.Getenv.
	Getenv func(string) string
	// WorkTree, when set, is a local clone of the apps' Git repositories:
	// a Git source resolves to its path in WorkTree and nothing is fetched.
	// Backport writes there.
	WorkTree string
}

// DefaultOptions caches Git clones in the user's cache folder
// (DefaultCacheDir) and reads credentials from the process environment.
func DefaultOptions() Options {
	return Options{Cache: NewCache(DefaultCacheDir()), Getenv: os.Getenv}
}

// DefaultCacheDir is driftscan/git under the user's cache folder, or under
// the temporary folder when the user has none.
func DefaultCacheDir() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "driftscan", "git")
}

// Location is where an app's source is on disk.
type Location struct {
	// Dir is the folder to render.
	Dir string
	// Root is the folder the render must not read outside of (render's
	// Options.Root): the checkout of a Git source, the work tree, or for a
	// local folder localRoot: the Git work tree or config file's folder
	// holding it, else the source folder itself.
	Root string
	// Commit is the full SHA of a fetched Git source; "" for a local folder
	// and for a source read from Options.WorkTree.
	Commit string
	// Version is the version of a chart fetched from a Helm chart
	// repository (a Source with Chart set), or the revision of an OCI
	// artifact (<tag>@sha256:<hex>); "" for every other source.
	Version string
	// Helm is how to render with Helm: the source's own settings, except
	// for a chart from a repository, whose values files (the config's,
	// relative to its folder) are read already, into Values, and left out.
	Helm *config.HelmSource
	// Values are values documents to merge after Helm's values files
	// (render.Options.ExtraValues).
	Values [][]byte
}

// fetchGit fetches repo at rev with FetchGit, with the options' cache,
// credentials (auth first) and bound, and ca.
func (o Options) fetchGit(ctx context.Context, repo, rev string, auth config.GitAuth, ca []byte, submodules bool) (Checkout, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return FetchGit(ctx, GitOptions{
		Repo: repo, Revision: rev, Auth: auth, Credentials: o.Git.Credentials, CABundle: ca,
		Cache: o.Cache, Getenv: getenv, MaxBytes: o.MaxBytes, Submodules: submodules,
	})
}

// Revision is what was fetched: the commit of a Git source, the version of
// a chart from a Helm repository, "" for a local folder.
func (l Location) Revision() string {
	if l.Commit != "" {
		return l.Commit
	}
	return l.Version
}

// Resolve says where src, a source of the config file in folder configDir,
// lives: a local Path is relative to configDir (unless absolute); a Repo is
// fetched at its Revision (FetchGit) and Path is relative to the
// repository's root. The folder must exist; an error says which and wraps
// what failed (a FetchGit error names the repository and revision).
func Resolve(ctx context.Context, configDir string, src config.Source, opts Options) (Location, error) {
	if src.Chart != "" {
		return resolveChart(ctx, configDir, src, opts)
	}
	if src.OCIArtifact() {
		return resolveArtifact(ctx, configDir, src, opts)
	}
	var loc Location
	if src.Repo != "" && !config.InRepo(src.Path) {
		return Location{}, fmt.Errorf("source path %q leaves the repository", src.Path)
	}
	switch {
	case src.Repo == "":
		loc.Dir = src.Path
		if !filepath.IsAbs(loc.Dir) {
			loc.Dir = filepath.Join(configDir, loc.Dir)
		}
		loc.Root = localRoot(configDir, loc.Dir, opts.Cache)
	case opts.WorkTree != "":
		loc.Dir = filepath.Join(opts.WorkTree, filepath.FromSlash(src.Path))
		loc.Root = opts.WorkTree
	default:
		ca, err := CABundle(configDir, opts.Git)
		if err != nil {
			return Location{}, err
		}
		var fetched int
		root, co, err := opts.fetchComposed(ctx, src, ca, 0, &fetched)
		if err != nil {
			return Location{}, err
		}
		loc = Location{Dir: filepath.Join(root, filepath.FromSlash(src.Path)), Root: root, Commit: co.Commit}
	}
	if _, err := os.Stat(loc.Dir); err != nil {
		return Location{}, fmt.Errorf("source folder: %w", err)
	}
	loc.Helm = src.Helm
	return loc, nil
}

// resolveChart fetches a chart from a Helm chart repository (FetchChart):
// the unpacked chart is both the folder and the root, for nothing outside
// the chart belongs to it.
func resolveChart(ctx context.Context, configDir string, src config.Source, opts Options) (Location, error) {
	if opts.WorkTree != "" {
		return Location{}, fmt.Errorf("chart %s comes from the Helm repository %s, not from Git: there is no file in the work tree to change", src.Chart, SafeURL(src.Repo))
	}
	ca, err := CABundle(configDir, opts.Git)
	if err != nil {
		return Location{}, err
	}
	c, err := FetchChart(ctx, opts.chartOptions(src.Repo, src.Chart, src.Revision, src.Auth, ca, src.PlainHTTP))
	if err != nil {
		return Location{}, err
	}
	loc := Location{Dir: c.Dir, Root: c.Dir, Version: c.Version, Helm: src.Helm}
	h := src.Helm
	if h == nil || len(h.ValuesFiles)+len(h.ChartValues) == 0 {
		return loc, nil
	}
	for _, v := range h.ChartValues {
		data, err := chartValues(ctx, c.Dir, v, opts, ca)
		if errors.Is(err, fs.ErrNotExist) && h.IgnoreMissingValuesFiles {
			continue
		}
		if err != nil {
			return Location{}, err
		}
		loc.Values = append(loc.Values, data)
	}
	if len(h.ValuesFiles) > 0 {
		own, err := configValues(configDir, h.ValuesFiles, opts.Cache)
		if err != nil {
			return Location{}, err
		}
		loc.Values = append(loc.Values, own...)
	}
	rest := *h
	rest.ValuesFiles, rest.ChartValues = nil, nil
	loc.Helm = &rest
	return loc, nil
}

// resolveArtifact fetches an OCI artifact (FetchArtifact): its unpacked
// files are the root, and Path is relative to it, as in a Git checkout.
func resolveArtifact(ctx context.Context, configDir string, src config.Source, opts Options) (Location, error) {
	if opts.WorkTree != "" {
		return Location{}, fmt.Errorf("the source is the OCI artifact %s, not Git: there is no file in the work tree to change", SafeURL(src.Repo))
	}
	if !config.InRepo(src.Path) {
		return Location{}, fmt.Errorf("source path %q leaves the artifact", src.Path)
	}
	ca, err := CABundle(configDir, opts.Git)
	if err != nil {
		return Location{}, err
	}
	a, err := FetchArtifact(ctx, ArtifactOptions{Repo: src.Repo, Reference: src.Revision, Layer: src.Layer, Flux: src.FluxArtifact,
		MaxBytes: opts.MaxBytes, Auth: src.Auth, Credentials: opts.Git.Credentials, CABundle: ca, PlainHTTP: src.PlainHTTP,
		Cache: opts.Cache, Getenv: opts.Getenv})
	if err != nil {
		return Location{}, err
	}
	loc := Location{Dir: filepath.Join(a.Dir, filepath.FromSlash(src.Path)), Root: a.Dir, Version: a.Revision, Helm: src.Helm}
	if _, err := os.Stat(loc.Dir); err != nil {
		return Location{}, fmt.Errorf("source folder %s in the artifact %s: %w", src.Path, a.Revision, err)
	}
	return loc, nil
}

// chartValues reads one of a discovered chart's values files: from the
// unpacked chart, or from the Git repository it names, fetched as a source
// is (FetchGit), and read through an os.Root there.
func chartValues(ctx context.Context, chartDir string, v config.ValuesFile, opts Options, ca []byte) ([]byte, error) {
	dir, where := chartDir, "the chart"
	if v.Repo != "" {
		co, err := opts.fetchGit(ctx, v.Repo, v.Revision, config.GitAuth{}, ca, false)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", v.Path, err)
		}
		dir, where = co.Dir, SafeURL(v.Repo)
	}
	if !config.InRepo(v.Path) || v.Path == "" {
		return nil, fmt.Errorf("values file %s leaves %s: refused", v.Path, where)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	data, err := root.ReadFile(filepath.FromSlash(v.Path))
	if err != nil {
		return nil, fmt.Errorf("values file %s in %s: %w", v.Path, where, err)
	}
	return data, nil
}

// configValues reads the values files of a chart from a repository: they
// are the config author's, as `helm install -f` reads them, relative to the
// config file's folder, and read through an os.Root at its localRoot (the
// Git work tree or the folder), so that none leaves it.
func configValues(configDir string, files []string, cache *Cache) ([][]byte, error) {
	dir := configDir
	if dir == "" {
		dir = "."
	}
	top := localRoot(configDir, dir, cache)
	root, err := os.OpenRoot(top)
	if err != nil {
		return nil, fmt.Errorf("values files: %w", err)
	}
	defer root.Close()
	absTop, err := filepath.Abs(top)
	if err != nil {
		return nil, fmt.Errorf("values files: %w", err)
	}
	out := make([][]byte, 0, len(files))
	for _, f := range files {
		p := filepath.FromSlash(f)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		absP, err1 := filepath.Abs(p)
		rel, err := filepath.Rel(absTop, absP)
		if err1 != nil || err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("values file %s leaves %s: refused", f, top)
		}
		data, err := root.ReadFile(rel)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", f, err)
		}
		out = append(out, data)
	}
	return out, nil
}

// localRoot is the Root of a local source folder dir: the outermost of the
// Git work tree that holds it (a .git folder or file in dir or a parent:
// `driftscan scan --path overlays/prod` in a checkout reads its bases from
// the rest of the checkout) and configDir when it holds dir; dir itself when
// neither does.
func localRoot(configDir, dir string, cache *Cache) string {
	root := dir
	if configDir != "" && within(configDir, dir) {
		root = configDir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return root
	}
	for d := abs; ; d = filepath.Dir(d) {
		if cache.holdsGit(d) {
			if absRoot, err := filepath.Abs(root); err == nil && within(d, absRoot) {
				root = d
				if !filepath.IsAbs(dir) {
					// Relative like dir, for render.Options.
					if rel, err := filepath.Rel(abs, d); err == nil {
						root = filepath.Join(dir, rel)
					}
				}
			}
			return root
		}
		if filepath.Dir(d) == d {
			return root
		}
	}
}

// holdsGit says whether folder d holds a .git (a folder, or a file as a
// worktree's), asking the file system once a run when cache is not nil.
func (c *Cache) holdsGit(d string) bool {
	lstat := func() bool {
		_, err := os.Lstat(filepath.Join(d, ".git"))
		return err == nil
	}
	if c == nil {
		return lstat()
	}
	has, ok := c.gitDirs.Load(d)
	if !ok {
		has, _ = c.gitDirs.LoadOrStore(d, lstat())
	}
	return has.(bool)
}

// within reports whether p is dir or below it, lexically.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// SafeURL is repo without its credentials (redact.URL), as a report, an
// error or a log line may show it.
func SafeURL(repo string) string { return redact.URL(repo) }

// CABundle reads git.caFile, relative to configDir; nil when it names none.
func CABundle(configDir string, git config.Git) ([]byte, error) {
	f := git.CAFile
	if f == "" {
		return nil, nil
	}
	if !filepath.IsAbs(f) {
		f = filepath.Join(configDir, f)
	}
	ca, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("git.caFile: %w", err)
	}
	return ca, nil
}

// chartOptions are the ChartOptions of the scan's fetches for chart name
// at version from repo.
func (o Options) chartOptions(repo, name, version string, auth config.GitAuth, ca []byte, plainHTTP bool) ChartOptions {
	return ChartOptions{Repo: repo, Chart: name, Version: version, Auth: auth, Credentials: o.Git.Credentials,
		CABundle: ca, Cache: o.Cache, Getenv: o.Getenv, PlainHTTP: plainHTTP}
}

// KustomizeChart fetches a chart a kustomization's helmCharts names from a
// chart repository (or an oci:// registry), as kustomize's `helm pull`
// would, with the scan's credentials (git.credentials, by URL), CA bundle
// and cache, and returns its unpacked folder. configDir is the config
// file's folder, for a relative CA bundle.
func KustomizeChart(ctx context.Context, configDir, repo, name, version string, opts Options) (string, error) {
	ca, err := CABundle(configDir, opts.Git)
	if err != nil {
		return "", err
	}
	c, err := FetchChart(ctx, opts.chartOptions(repo, name, version, config.GitAuth{}, ca, false))
	if err != nil {
		return "", err
	}
	return c.Dir, nil
}
