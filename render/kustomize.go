package render

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kustomizeMu serializes kustomize builds: krusty is not safe for
// concurrent use (concurrent map writes in its OpenAPI schema globals,
// https://github.com/kubernetes-sigs/kustomize/issues/3659). Flux's
// kustomize-controller serializes them the same way.
var kustomizeMu sync.Mutex

// renderKustomize builds the kustomization in opts.Dir with krusty, the
// library behind `kustomize build`, and its default options, as
// `kustomize build` has them: a file a kustomization names (a patch, a
// generator's input) must lie under that kustomization's folder, while bases
// and components may be anywhere; exec and container plugins are off; no
// managed-by label is added. Remote bases (a Git URL in resources) would be
// fetched by krusty with the git binary; sources that must render offline
// cannot use them.
//
// Every object is one Manifest with File "." and Line 0. A build error
// returns no manifests.
func renderKustomize(ctx context.Context, opts Options) ([]Manifest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kustomizeMu.Lock()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), opts.Dir)
	kustomizeMu.Unlock()
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
	return out, nil
}
