package render

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/kustomize/api/types"
)

// A kustomization's helmCharts are inflated by kustomize's own generator
// (HelmChartInflationGenerator), as `kustomize build --enable-helm` does
// for Argo CD: it works out the chart's folder, merges valuesInline into
// the values file, passes the kustomization's namespace (or an overlay's)
// to the chart, marks the output so that the namespace transformer leaves
// it alone, and then every transformer of the kustomization runs over it.
// All of that is kustomize's code, run unchanged. What it runs as `helm`
// is not the helm binary but this executable again (kustomizeHelm), which
// answers `helm version`, `helm pull` and `helm template` from the build's
// job file:
//   - template renders the chart with the Helm SDK as every chart is
//     rendered here (helmTemplate): the chart must lie inside the
//     repository, or be one the build fetched; the values files kustomize
//     passes are read within MaxManifestBytes; hooks are left out, as Argo
//     CD does not count them as desired state (a patch that names a hook is
//     an error here where kustomize would apply it);
//   - pull fetches nothing: a chart that is not in the repository at the
//     folder kustomize looks in (chartHome/<name>, or
//     chartHome/<name>-<version>/<name> with a repo and a version) was
//     fetched by the build when it read the kustomization (Options.
//     FetchChart, with the scan's credentials, cache and digest checks),
//     and pull only says whether it was;
//   - HELM_CONFIG_HOME and the other variables kustomize sets from the
//     kustomization (helmGlobals.configHome) are ignored: no Helm plugin,
//     repository file or registry login is ever read (Argo CD guards its
//     real helm against the same, GHSA-fw5c-w8rc-j7fx).
//
// The child knows it is one by its name: kustomize runs the link
// <temp>/driftscan-helm-<random>/helm, which points at this executable,
// next to job.json. RunAsHelm, called first in main (and in a test
// binary's TestMain), answers and exits there.

// helmLinkName is the name kustomize runs; the job lies next to it.
const (
	helmLinkName = "helm"
	helmJobName  = "job.json"
	helmErrName  = "error.txt"
)

// helmExecutable is this process's executable, set by RunAsHelm: the
// program kustomize runs as helm. Empty (RunAsHelm was not called) leaves
// helmCharts refused.
var helmExecutable string

// RunAsHelm answers as kustomize's helm and exits when this process was
// started as one by a build (see above); otherwise it records this
// executable as the helm of later builds and returns. Call it first in
// main: until it is called, a kustomization with helmCharts is an error.
func RunAsHelm() {
	if filepath.Base(os.Args[0]) == helmLinkName {
		dir := filepath.Dir(os.Args[0])
		if job, err := readHelmJob(dir); err == nil {
			os.Exit(kustomizeHelm(dir, job, os.Args[1:]))
		}
	}
	if exe, err := os.Executable(); err == nil {
		helmExecutable = exe
	}
}

// ChartRef is a chart a kustomization's helmCharts names from a chart
// repository (repo), as `helm pull --repo` takes it.
type ChartRef struct {
	Repo, Name, Version string
}

// helmJob is what a build tells its helm: job.json.
type helmJob struct {
	// Root is the repository: a chart on disk must lie inside it.
	Root string `json:"root"`
	// Charts are the folders kustomize looks for a chart in that the
	// build fetched, and the fetched chart for each.
	Charts map[string]string `json:"charts,omitempty"`
	// Deadline is when the render gives up (Options.Timeout).
	Deadline time.Time `json:"deadline,omitzero"`
	// KubeVersion and APIVersions are the cluster's, which Argo CD passes
	// to kustomize for its charts (--helm-kube-version, --helm-api-versions)
	// and which then take the place of a chart's own.
	KubeVersion string   `json:"kubeVersion,omitempty"`
	APIVersions []string `json:"apiVersions,omitempty"`
}

func readHelmJob(dir string) (helmJob, error) {
	var job helmJob
	data, err := os.ReadFile(filepath.Join(dir, helmJobName))
	if err != nil {
		return job, err
	}
	return job, json.Unmarshal(data, &job)
}

// buildHelm is a build's side of the helm it runs: the folder of the
// link and the job, made when the first kustomization with helmCharts is
// read, and removed after the build.
type buildHelm struct {
	ctx   context.Context
	fetch func(context.Context, ChartRef) (string, error)
	// discover gives the cluster's API versions, asked for when the
	// first chart is (a build without one never waits on the cluster).
	discover func() []string
	dir      string
	mu       sync.Mutex
	job      helmJob
	made     bool
	// used says a kustomization of the build named helmCharts: the build
	// read chart files krusty did not, so it is not kept (buildcache.go).
	used bool
	// fetchedAny says job.Charts holds a chart: until then every path
	// krusty resolves (fetched) skips the lock.
	fetchedAny atomic.Bool
}

// newBuildHelm is the helm of a build rooted at root, or nil when this
// process cannot answer as one (RunAsHelm was not called).
func newBuildHelm(ctx context.Context, opts Options, root string) *buildHelm {
	if helmExecutable == "" {
		return nil
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	h := &buildHelm{ctx: ctx, fetch: opts.FetchChart, dir: filepath.Join(os.TempDir(), "driftscan-helm-"+hex.EncodeToString(b[:])),
		job: helmJob{Root: root, KubeVersion: opts.KubeVersion, APIVersions: opts.APIVersions}, discover: opts.DiscoverAPIVersions}
	if d, ok := ctx.Deadline(); ok {
		h.job.Deadline = d
	}
	return h
}

// command is what kustomize runs as helm.
func (h *buildHelm) command() string { return filepath.Join(h.dir, helmLinkName) }

// kustomization reads the kustomization k of file p (resolved: r) for its
// helmCharts, fetches each that is not in the repository where kustomize
// looks for it, and writes the job.
func (h *buildHelm) kustomization(p, r string, k *types.Kustomization) error {
	k.FixKustomization() // the deprecated helmChartInflationGenerator (k is the caller's to drop)
	if len(k.HelmCharts) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.used && h.job.APIVersions == nil && h.discover != nil {
		h.job.APIVersions = h.discover()
	}
	h.used = true
	for _, c := range k.HelmCharts {
		for _, dir := range uniq(filepath.Dir(p), filepath.Dir(r)) {
			folder := chartFolder(dir, k.HelmGlobals, c)
			if fi, err := os.Stat(folder); err == nil && fi.IsDir() || c.Repo == "" {
				continue // in the repository (template checks where), or kustomize's own error
			}
			if h.fetch == nil {
				return fmt.Errorf("helmCharts %s: the chart is not in the repository at %s and this render fetches none", c.Name, folder)
			}
			if _, ok := h.job.Charts[folder]; ok {
				continue
			}
			got, err := h.fetch(h.ctx, ChartRef{Repo: c.Repo, Name: c.Name, Version: c.Version})
			if err != nil {
				return fmt.Errorf("helmCharts %s: %w", c.Name, err)
			}
			if h.job.Charts == nil {
				h.job.Charts = map[string]string{}
			}
			h.job.Charts[folder] = got
			h.fetchedAny.Store(true)
		}
	}
	return h.write()
}

// uniq is a and b, or a alone when they are the same.
func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// chartFolder is where kustomize looks for chart c of a kustomization in
// dir (HelmChartInflationGeneratorPlugin.absChartHome, chartExistsLocally).
func chartFolder(dir string, g *types.HelmGlobals, c types.HelmChart) string {
	home := types.HelmDefaultHome
	if g != nil && g.ChartHome != "" {
		home = g.ChartHome
	}
	if !filepath.IsAbs(home) {
		home = filepath.Join(dir, home)
	}
	if c.Version != "" && c.Repo != "" {
		home = filepath.Join(home, c.Name+"-"+c.Version)
	}
	return filepath.Join(home, c.Name)
}

// fetched is where the file or folder p is when it lies in a chart the
// build fetched: kustomize reads the chart's values.yaml where `helm pull`
// would have unpacked it, under the kustomization.
func (h *buildHelm) fetched(p string) (string, bool) {
	if !h.fetchedAny.Load() {
		return "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for folder, got := range h.job.Charts {
		if rel, err := filepath.Rel(folder, p); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return filepath.Join(got, rel), true
		}
	}
	return "", false
}

// write makes the link and writes the job (again, as charts are fetched).
func (h *buildHelm) write() error {
	if !h.made {
		if err := os.Mkdir(h.dir, 0o700); err != nil {
			return fmt.Errorf("helmCharts: %w", err)
		}
		h.made = true
		if err := os.Symlink(helmExecutable, h.command()); err != nil {
			return fmt.Errorf("helmCharts: %w", err)
		}
	}
	data, err := json.Marshal(h.job)
	if err != nil {
		return err
	}
	tmp := filepath.Join(h.dir, helmJobName+".new")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("helmCharts: %w", err)
	}
	return os.Rename(tmp, filepath.Join(h.dir, helmJobName))
}

// failure is what the build's helm last failed with, if it did: kustomize
// words a failed helm as a command line and its environment around it.
func (h *buildHelm) failure() error {
	data, err := os.ReadFile(filepath.Join(h.dir, helmErrName))
	if err != nil || len(data) == 0 {
		return nil
	}
	return errors.New(strings.TrimSpace(string(data)))
}

// close removes the link and the job.
func (h *buildHelm) close() {
	if h.made {
		_ = os.RemoveAll(h.dir)
	}
}
