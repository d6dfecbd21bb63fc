package render

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
)

// kustomizeLock serializes kustomize builds: krusty is not safe for
// concurrent use (concurrent map writes in its OpenAPI schema globals,
// https://github.com/kubernetes-sigs/kustomize/issues/3659). Flux's
// kustomize-controller serializes them the same way. It is a channel so
// that a build waiting for it gives up with its context.
var kustomizeLock = make(chan struct{}, 1)

// renderKustomize builds the kustomization in opts.Dir with krusty, the
// library behind `kustomize build`, and its default options, as
// `kustomize build` has them: a file a kustomization names (a patch, a
// generator's input) must lie under that kustomization's folder; exec and
// container plugins are off; no managed-by label is added. Unlike `kustomize
// build`, krusty sees the disk through boundedFS: only inside opts.Root (a
// base outside the repository is an error), read-only, every file within
// the size and YAML alias limits of the plain renderer, and offline: a
// remote resource or base is an error unless opts.KustomizeRemote is set.
//
// Every object is one Manifest with File "." and Line 0. A build error
// returns no manifests. With opts.Parsed, a build whose reads all read as
// they did for the last build is taken from it (buildcache.go).
func renderKustomize(ctx context.Context, opts Options) ([]Manifest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root := opts.Root
	if root == "" {
		root = opts.Dir
	}
	bounded, err := newBoundedFS(root, opts.KustomizeRemote)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", opts.Dir, err)
	}
	key := buildKey(opts.Dir, bounded.root)
	if !opts.KustomizeRemote {
		if ms, ok := opts.Parsed.built(key, bounded, opts.Lazy); ok {
			return ms, nil
		}
	}
	fsys := &recordingFS{boundedFS: bounded}
	if !opts.KustomizeRemote {
		// Nothing on disk changes while krusty builds (a remote clone,
		// which appears during the build, is not read this way): each
		// path is resolved once, from its folder's resolution.
		bounded.resolved = map[string]resolvedPath{}
		defer func() { bounded.resolved = nil }()
	}
	select {
	case kustomizeLock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("kustomize %s: waiting for another build: %w", opts.Dir, ctx.Err())
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, opts.Dir)
	<-kustomizeLock
	if refused := fsys.Refused(); err != nil && refused != nil {
		// krusty words a refused read as a missing file: say why.
		return nil, fmt.Errorf("kustomize %s: %w", opts.Dir, refused)
	}
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", opts.Dir, err)
	}
	var out []Manifest
	for _, r := range resMap.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize %s: %s: %w", opts.Dir, r.CurId(), err)
		}
		// utiljson keeps integers int64, as unstructured objects need them;
		// the resource's own Map turns them into float64.
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("kustomize %s: %s: %w", opts.Dir, r.CurId(), err)
		}
		out = append(out, Manifest{Object: &unstructured.Unstructured{Object: obj}, File: "."})
	}
	opts.Parsed.storeBuild(key, fsys, out)
	return out, nil
}
