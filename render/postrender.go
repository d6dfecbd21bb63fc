package render

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	//lint:ignore SA1019 the transformers helm-controller's common renderer runs (internal/postrender), kept as it keeps them
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/calricon/driftscan/config"
)

// postRender runs a HelmRelease's kustomize post-renderers over a chart's
// manifest, in order, as helm-controller does (internal/postrender
// Kustomize.Run): an in-memory kustomization whose one resource is the
// manifest, with the post-renderer's images and patches, built by krusty
// with its default options, its output written as `kustomize build` writes
// it. Then its common metadata (commonMetadata).
func postRender(ctx context.Context, manifest string, h *config.HelmSource) (string, error) {
	for i, pr := range h.PostRenderers {
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
	if len(h.CommonLabels)+len(h.CommonAnnotations) > 0 {
		return commonMetadata(manifest, h.CommonLabels, h.CommonAnnotations)
	}
	return manifest, nil
}

// originLabels are the labels helm-controller sets on every object of a
// release after its common metadata: a common label with one of their
// keys never reaches the cluster (and the scan does not compare them).
var originLabels = []string{"helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace"}

// commonMetadata sets a HelmRelease's spec.commonMetadata on every
// object's metadata, over what the chart set, with the kustomize
// transformers helm-controller's CommonRenderer runs (internal/postrender,
// v1.6.4): labels on metadata.labels alone, not on selectors or templates.
func commonMetadata(manifest string, labels, annotations map[string]string) (string, error) {
	rm, err := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory()).NewResMapFromBytes([]byte(manifest))
	if err != nil {
		return "", fmt.Errorf("commonMetadata: %w", err)
	}
	if len(labels) > 0 {
		labels = maps.Clone(labels)
		for _, k := range originLabels {
			delete(labels, k)
		}
		lt := &builtins.LabelTransformerPlugin{Labels: labels, FieldSpecs: []types.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}}
		if err := lt.Transform(rm); err != nil {
			return "", fmt.Errorf("commonMetadata labels: %w", err)
		}
	}
	if len(annotations) > 0 {
		at := &builtins.AnnotationsTransformerPlugin{Annotations: annotations, FieldSpecs: []types.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}}}
		if err := at.Transform(rm); err != nil {
			return "", fmt.Errorf("commonMetadata annotations: %w", err)
		}
	}
	out, err := rm.AsYaml()
	if err != nil {
		return "", fmt.Errorf("commonMetadata: %w", err)
	}
	return string(out), nil
}
