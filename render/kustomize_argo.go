package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/pkg/util"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
)

// argoKustomization is the folder's kustomization with an Application's
// spec.source.kustomize applied as Argo CD applies it before it builds
// (argo-cd util/kustomize Build): `kustomize edit set nameprefix`,
// `set namesuffix`, `set image`, `set replicas`, `add label` (commonLabels,
// or a labels entry without selectors), `add annotation`, `set namespace`,
// the patches appended to the kustomization's, `add component`, in that
// order and with those commands' rules (kustomize v5.8.1 commands/edit): a
// label or annotation the kustomization already has is an error unless
// forced; an image or replica the kustomization names is replaced; a
// component already listed is not added again; a missing one is an error
// unless ignoreMissingComponents. It returns the kustomization file's path
// and the new text, which krusty reads in its place.
func argoKustomization(b *boundedFS, dir string, ak *config.ArgoKustomize) (string, []byte, error) {
	kfile, k, err := readKustomization(b, dir)
	if err != nil {
		return "", nil, err
	}
	if kfile == "" {
		return "", nil, errors.New("the Application's kustomize overrides need a kustomization file in the folder (kustomize edit: Missing kustomization file)")
	}
	if ak.NamePrefix != "" {
		k.NamePrefix = ak.NamePrefix
	}
	if ak.NameSuffix != "" {
		k.NameSuffix = ak.NameSuffix
	}
	if len(ak.Images) > 0 {
		if err := setImages(&k, ak.Images); err != nil {
			return "", nil, err
		}
	}
	if len(ak.Replicas) > 0 {
		set := map[string]types.Replica{}
		for _, r := range ak.Replicas {
			set[r.Name] = types.Replica{Name: r.Name, Count: r.Count}
		}
		for _, r := range k.Replicas {
			if _, ok := set[r.Name]; !ok {
				set[r.Name] = r
			}
		}
		k.Replicas = sortedValues(set, func(r types.Replica) string { return r.Name })
	}
	if len(ak.CommonLabels) > 0 {
		if err := addLabels(&k, ak); err != nil {
			return "", nil, err
		}
	}
	if len(ak.CommonAnnotations) > 0 {
		if k.CommonAnnotations == nil {
			k.CommonAnnotations = map[string]string{}
		}
		if err := addMetadata(k.CommonAnnotations, ak.CommonAnnotations, ak.ForceCommonAnnotations, "annotation"); err != nil {
			return "", nil, err
		}
	}
	if ak.Namespace != "" {
		k.Namespace = ak.Namespace
	}
	for i, p := range ak.Patches {
		var patch types.Patch
		data, err := json.Marshal(p)
		if err == nil {
			err = json.Unmarshal(data, &patch)
		}
		if err != nil {
			return "", nil, fmt.Errorf("patches[%d]: %w", i, err)
		}
		k.Patches = append(k.Patches, patch)
	}
	for _, c := range ak.Components {
		if !b.Exists(filepath.Join(dir, c)) {
			if ak.IgnoreMissingComponents {
				continue
			}
			return "", nil, fmt.Errorf("component %s: no such folder (kustomize edit add component)", c)
		}
		if !slices.Contains(k.Components, c) {
			k.Components = append(k.Components, c)
		}
	}
	data, err := sigsyaml.Marshal(k)
	return kfile, data, err
}

// setImages is `kustomize edit set image` with args.
func setImages(k *types.Kustomization, args []string) error {
	const keep = "*" // preserves the kustomization's value
	set := map[string]types.Image{}
	for _, arg := range args {
		key, value, keyed := strings.Cut(arg, "=")
		if !keyed {
			key, value = "", arg
		}
		name, tag, digest := util.SplitImageName(value)
		if name == arg {
			return fmt.Errorf("image %q: invalid format of image, use one of the following options: <image>=<newimage>:<newtag>, <image>=<newimage>@<digest>, <image>=<newimage>, <image>:<newtag>, <image>@<digest>", arg)
		}
		img := types.Image{Name: name, NewTag: tag, Digest: digest}
		if key != "" {
			img.Name, img.NewName = key, name
		}
		set[img.Name] = img
	}
	for _, have := range k.Images {
		img, ok := set[have.Name]
		if !ok {
			set[have.Name] = have
			continue
		}
		if img.NewName == keep {
			img.NewName = have.NewName
		}
		if img.NewTag == keep {
			img.NewTag = have.NewTag
		}
		if img.Digest == keep {
			img.Digest = have.Digest
		}
		set[have.Name] = img
	}
	for name, img := range set {
		for _, f := range []*string{&img.NewName, &img.NewTag, &img.Digest} {
			if *f == keep {
				*f = ""
			}
		}
		set[name] = img
	}
	k.Images = sortedValues(set, func(i types.Image) string { return i.Name })
	return nil
}

// addLabels is `kustomize edit add label`, with --force,
// --without-selector and --include-templates as the Application says.
func addLabels(k *types.Kustomization, ak *config.ArgoKustomize) error {
	if !ak.LabelWithoutSelector && ak.LabelIncludeTemplates {
		return errors.New("--without-selector flag must be specified for --include-templates to work")
	}
	if !ak.LabelWithoutSelector {
		// As kustomize edit add label writes them, deprecated or not.
		//lint:ignore SA1019 kustomize edit writes commonLabels
		labels := k.CommonLabels
		if labels == nil {
			labels = map[string]string{}
		}
		//lint:ignore SA1019 kustomize edit writes commonLabels
		k.CommonLabels = labels
		return addMetadata(labels, ak.CommonLabels, ak.ForceCommonLabels, "label")
	}
	i := slices.IndexFunc(k.Labels, func(l types.Label) bool {
		return !l.IncludeSelectors && l.IncludeTemplates == ak.LabelIncludeTemplates
	})
	if i < 0 {
		k.Labels = append(k.Labels, types.Label{Pairs: map[string]string{}, IncludeTemplates: ak.LabelIncludeTemplates})
		i = len(k.Labels) - 1
	}
	if k.Labels[i].Pairs == nil {
		k.Labels[i].Pairs = map[string]string{}
	}
	return addMetadata(k.Labels[i].Pairs, ak.CommonLabels, ak.ForceCommonLabels, "label")
}

// addMetadata adds set to m; a key m has is an error unless force.
func addMetadata(m, set map[string]string, force bool, kind string) error {
	keys := make([]string, 0, len(set))
	for key := range set {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if _, ok := m[key]; ok && !force {
			return fmt.Errorf("%s %s already in kustomization file: use --force to override", kind, key)
		}
		m[key] = set[key]
	}
	return nil
}

// sortedValues are m's values sorted by name.
func sortedValues[V any](m map[string]V, name func(V) string) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return name(out[i]) < name(out[j]) })
	return out
}
