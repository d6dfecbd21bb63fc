// Package render turns an app's source folder into the objects it declares,
// in process and without a cluster: a Helm chart with the Helm SDK, a
// kustomization with krusty, or plain YAML and JSON manifests. It also holds
// the YAML helpers backport edits files with, so both read YAML alike.
package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/calricon/driftscan/config"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Manifest is one desired object rendered from an app's source.
type Manifest struct {
	Object *unstructured.Unstructured
	// File is the manifest's path relative to the source folder. Objects that
	// Helm or Kustomize rendered point at the source folder itself (".").
	File string
	// Line is the 1-based line where the object's YAML document starts in
	// File; 0 for rendered output.
	Line int
	// Digest names the object as it was parsed, when it was parsed through
	// a ParseCache (Options.Parsed): the cache's key of the bytes it came
	// from (their SHA-256 and how they were parsed) and its place among
	// their objects. The parse is a function of those bytes and of the
	// build, so two objects of one build with the same Digest were parsed
	// alike, and a caller that keeps what it found by Digest need not hash
	// the object itself. "" without a cache, and for what a kustomization
	// builds.
	Digest string
	// lazy stands for Object while it is nil: the parse cache gave the
	// object undecoded (Options.Lazy). See Ident and Load.
	lazy *undecoded
	// settled: see Settled.
	settled bool
}

// Ident is what names a manifest's object, and what a scan reads of it
// before it loads the rest: the values the object's getters give
// (Unstructured.GetName and the others), so "" for a field that is
// missing or not a string, and Annotations nil when a value of them is
// not a string. Of the labels it holds only those kustomize-controller
// reads as marks of how to apply the object (FluxMarkPrefix), each whose
// value is a string; nil when there are none.
type Ident struct {
	APIVersion, Kind              string
	Namespace, Name, GenerateName string
	Annotations                   map[string]string
	FluxLabels                    map[string]string
}

// FluxMarkPrefix is the prefix of the labels and annotations by which Git
// tells Flux's kustomize-controller how to apply an object
// (kustomize.toolkit.fluxcd.io/ssa, /reconcile).
const FluxMarkPrefix = "kustomize.toolkit.fluxcd.io/"

// identOf is the Ident of obj.
func identOf(obj *unstructured.Unstructured) Ident {
	return Ident{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
		GenerateName: obj.GetGenerateName(), Annotations: obj.GetAnnotations(), FluxLabels: fluxLabels(obj)}
}

// fluxLabels is obj's labels under FluxMarkPrefix whose values are
// strings, nil when there are none: read in place, with no copy of the
// labels an object has most of the time.
func fluxLabels(obj *unstructured.Unstructured) map[string]string {
	md, _ := obj.Object["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	var out map[string]string
	for k, v := range labels {
		if s, ok := v.(string); ok && strings.HasPrefix(k, FluxMarkPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = s
		}
	}
	return out
}

// Settled says that the object came from a chart whose every render
// gives the same output (rendercache.go): its text names no function whose
// result changes between renders and calls no tpl, or the parse cache held
// its output, kept once two renders agreed. A caller that renders charts
// twice to find what changes between renders need not render it again.
func (m Manifest) Settled() bool { return m.settled }

// Ident returns what names the object (see Ident). While Object is nil
// (Options.Lazy) the parse cache read it from the object's bytes without
// decoding the rest.
func (m Manifest) Ident() Ident {
	switch {
	case m.Object != nil:
		return identOf(m.Object)
	case m.lazy != nil:
		return m.lazy.ident
	}
	return Ident{}
}

// Load returns the whole object: Object, or, when the parse cache gave it
// undecoded (Options.Lazy), the object decoded from the cache's bytes
// (once; every copy of m then gives that object). The cache checked every
// byte of the object when it read its Ident, so an error here is a
// defect; it says that the object's bytes in the cache do not decode.
func (m Manifest) Load() (*unstructured.Unstructured, error) {
	if m.Object != nil || m.lazy == nil {
		return m.Object, nil
	}
	u := m.lazy
	u.once.Do(func() { u.obj, u.err = u.decode() })
	if u.err != nil {
		return nil, fmt.Errorf("%s line %d: the scan cache's copy does not decode: %w", m.File, m.Line, u.err)
	}
	return u.obj, nil
}

// Options say how to render one source folder.
type Options struct {
	// Dir is the absolute source folder.
	Dir string
	// Root is the folder no file may be read outside of, Dir or one of its
	// parents: the repository checkout (source.Location.Root). Every file
	// is read through an os.Root there, so a symlink or a values file that
	// leaves it is an error. Empty means Dir.
	Root string
	// Namespace is the release namespace for Helm and the namespace Helm and
	// Kustomize see; the scanner gives namespaced objects that name none this
	// namespace afterwards (it knows which kinds are namespaced).
	Namespace string
	// Helm renders Dir as a chart; Kustomize as a kustomization. When both
	// are nil the renderer is detected: Chart.yaml means Helm,
	// kustomization.yaml (or .yml, or Kustomization) means Kustomize, else
	// every YAML/JSON file under Dir.
	Helm      *config.HelmSource
	Kustomize *config.KustomizeSource
	// Directory, when set, narrows the plain manifests read (renderYAML)
	// as an Argo CD directory source does (config.DirectorySource).
	Directory *config.DirectorySource
	// ReleaseName is the release of a chart that was detected (Helm nil,
	// a Chart.yaml in Dir); default the folder's name.
	ReleaseName string
	// KustomizeRemote lets a kustomization name remote resources and bases
	// (URLs, Git repositories), which krusty then fetches within Timeout;
	// by default a kustomization renders offline and naming one is an error.
	KustomizeRemote bool
	// KustomizeWithoutHelm refuses a kustomization's helmCharts, as Flux's
	// kustomize-controller does; by default they are inflated as
	// `kustomize build --enable-helm` does (kustomize_helm.go).
	KustomizeWithoutHelm bool
	// KustomizeLoadAnywhere builds with kustomize's LoadRestrictionsNone
	// (Argo CD's --load-restrictor LoadRestrictionsNone): files outside a
	// kustomization's folder, inside the repository (Root), may be read.
	KustomizeLoadAnywhere bool
	// FetchChart fetches a chart a kustomization's helmCharts names from a
	// chart repository and is not in the repository, and returns its
	// unpacked folder; nil refuses such charts.
	FetchChart func(context.Context, ChartRef) (string, error)
	// Timeout bounds the render; zero is no bound but ctx's. See Manifests.
	Timeout time.Duration
	// ExtraValues are Helm values documents merged after Helm.ValuesFiles,
	// as more values files would be (backport's probes).
	ExtraValues [][]byte
	// KubeVersion is the cluster's version (for example v1.37.2), given to
	// Helm as .Capabilities.KubeVersion.
	KubeVersion string
	// APIVersions are the group/versions the cluster serves, given to Helm
	// as .Capabilities.APIVersions.
	APIVersions []string
	// DiscoverAPIVersions, when set and APIVersions is nil, gives them. It
	// is called when a chart is rendered and not otherwise, so a render of
	// plain files or a kustomization never waits on the cluster's discovery.
	DiscoverAPIVersions func() []string
	// Lookup, when set, is Helm's lookup for a chart whose applier renders
	// it against the cluster (Helm.Lookup): the object's content, an empty
	// map when it does not exist, or an error that fails the render, as
	// Helm's own. Nil, lookup gives an empty map, as `helm template` does.
	// A chart that calls it is neither taken from nor kept in Parsed: its
	// output follows the cluster.
	Lookup func(apiVersion, kind, namespace, name string) (map[string]any, error)
	// Parsed, when set, holds what earlier renders parsed: a plain manifest
	// file, or a document of a chart's output, whose bytes it has seen is
	// read from it instead of being parsed again (see ParseCache); so is a
	// chart's whole output when its inputs are unchanged (rendercache.go),
	// and a kustomization's build when what it read is (buildcache.go).
	// Charts given values from Secrets (Helm.Secret) do not use it. Nil
	// parses everything.
	Parsed *ParseCache
	// Lazy lets the manifests read from Parsed (plain files, and the
	// outputs of charts and kustomizations it holds whole) come
	// undecoded: Object nil, Ident read from their bytes, and Load the
	// whole object, decoded when it is first asked for. A warm scan
	// compares few of the objects it renders (the verdict cache says the
	// rest are in sync) and so decodes few.
	Lazy bool
}

// Manifests renders a source folder into manifests. Errors that concern one
// file or document (malformed YAML, an object with no kind or name) are
// joined into the returned error, which names the file and line; the
// manifests from every other file are still returned. A render error of a
// whole Helm chart or kustomization returns no manifests.
//
// A render returns by opts.Timeout and when ctx ends, whether the renderer
// finished or not: a chart whose templates loop forever, or a kustomization
// waiting on a remote base, is an error ("did not finish within 2m0s") and
// the renderer is left to run on in a goroutine whose result is discarded
// (Go cannot stop it; its memory is what the renderers' own bounds allow).
//
// See renderHelm, renderKustomize and renderYAML for what each renderer
// keeps and leaves out.
func Manifests(ctx context.Context, opts Options) ([]Manifest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opts.Timeout, fmt.Errorf("%w: did not finish within %s", ErrRenderTimeout, opts.Timeout))
		defer cancel()
	}
	type result struct {
		ms  []Manifest
		err error
	}
	// Buffered: an abandoned render still has somewhere to put its result.
	done := make(chan result, 1)
	go func() {
		ms, err := manifests(ctx, opts)
		done <- result{ms, err}
	}()
	select {
	case r := <-done:
		return r.ms, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("render %s: %w", opts.Dir, context.Cause(ctx))
	}
}

// ErrRenderTimeout is the error of a render that ran past Options.Timeout.
var ErrRenderTimeout = errors.New("render abandoned")

func manifests(ctx context.Context, opts Options) ([]Manifest, error) {
	switch {
	case opts.Helm != nil && opts.Kustomize != nil:
		return nil, errors.New("source has both helm and kustomize")
	case opts.Helm != nil:
		return renderHelm(ctx, opts)
	case opts.Kustomize != nil:
		return renderKustomize(ctx, opts)
	default:
		// A folder holding a Chart.yaml is a chart, one holding a
		// kustomization a kustomization (renderYAML reads its entries).
		return renderYAML(ctx, opts)
	}
}

// exists reports whether path names a regular file.
func exists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
