package render

import (
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/calricon/driftscan/config"
)

// postRender runs a HelmRelease's kustomize post-renderers over a chart's
// manifest, in order, as helm-controller does (internal/postrender
// Kustomize.Run): an in-memory kustomization whose one resource is the
// manifest, with the post-renderer's images and patches, built by krusty
// with its default options, its output written as `kustomize build` writes
// it.
func postRender(ctx context.Context, manifest string, prs []config.PostRenderer) (string, error) {
	for i, pr := range prs {
		fs := filesys.MakeFsInMemory()
		k := types.Kustomization{Resources: []string{"helm-output.yaml"}}
		k.APIVersion, k.Kind = types.KustomizationVersion, types.KustomizationKind
		for _, img := range pr.Images {
			k.Images = append(k.Images, types.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
		}
		for _, p := range pr.Patches {
			patch, err := kustomizePatch(p)
			if err != nil {
				return "", fmt.Errorf("postRenderers[%d]: patch %w", i, err)
			}
			k.Patches = append(k.Patches, patch)
		}
		data, err := json.Marshal(k)
		if err != nil {
			return "", err
		}
		if err := fs.WriteFile("helm-output.yaml", []byte(manifest)); err != nil {
			return "", err
		}
		if err := fs.WriteFile("kustomization.yaml", data); err != nil {
			return "", err
		}
		select {
		case kustomizeLock <- struct{}{}:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		kopts := krusty.MakeDefaultOptions()
		kopts.LoadRestrictions = types.LoadRestrictionsNone // as helm-controller builds it
		resMap, err := krusty.MakeKustomizer(kopts).Run(fs, ".")
		<-kustomizeLock
		if err != nil {
			return "", fmt.Errorf("postRenderers[%d]: kustomize: %w", i, err)
		}
		out, err := resMap.AsYaml()
		if err != nil {
			return "", fmt.Errorf("postRenderers[%d]: %w", i, err)
		}
		manifest = string(out)
	}
	return manifest, nil
}
