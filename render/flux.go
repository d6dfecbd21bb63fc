package render

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
)

// A Flux Kustomization is built as kustomize-controller builds it
// (fluxcd/pkg/kustomize's Generator, SecureBuild and SubstituteVariables,
// kustomize-controller's build and apply), when discovery gives its
// overrides and variables (config.FluxBuild):
//   - the folder's kustomization (kustomization.yaml, .yml or
//     Kustomization), or one generated for a folder without (every .yaml
//     and .yml file below it that decodes as Kubernetes objects, and each
//     subfolder holding a kustomization, not descended), gets the
//     Kustomization's targetNamespace as its namespace, namePrefix,
//     nameSuffix, patches, components (a missing one left out with
//     ignoreMissingComponents) and images (an image the kustomization
//     already names gets the override's fields, a tag and a digest
//     together); krusty reads that in its place, and builds with no load
//     restriction inside the repository, as Flux does;
//   - with spec.postBuild set and variables given (or substituteStrategy
//     Always), each object but those labelled or annotated
//     kustomize.toolkit.fluxcd.io/substitute: disabled is written as YAML
//     (from its JSON, as kustomize's Resource.AsYAML does: a quoted
//     "${port}" is plain ${port} then, and a number once substituted) and
//     has its ${var}s replaced by Flux's envsubst; a variable that is not
//     set is an error unless it has a default (kustomize-controller's
//     StrictPostBuildSubstitutions, on by default since v1.5);
//   - spec.commonMetadata's labels and annotations are set on every object.
//
// Files source-controller leaves out of every artifact (.git/, CI files,
// .sops.yaml, ...: fluxcd/pkg/sourceignore's defaults) are not in a
// generated kustomization; a GitRepository's spec.ignore and .sourceignore
// files are not read.

// substituteKey disables substitution on an object that carries it as a
// label or annotation with the value "disabled".
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// fluxVarName is what a variable's name must match (fluxcd/pkg/kustomize).
var fluxVarName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// fluxKustomization is the kustomization kustomize-controller builds dir
// with, and the path it reads it at.
func fluxKustomization(b *boundedFS, dir string, fb *config.FluxBuild) (string, []byte, error) {
	kfile, k, err := readKustomization(b, dir)
	if err != nil {
		return "", nil, err
	}
	if kfile == "" {
		kfile = filepath.Join(dir, konfig.DefaultKustomizationFileName())
		resources, err := fluxManifests(b, dir)
		if err != nil {
			return "", nil, err
		}
		if len(resources) == 0 {
			k.Namespace = "_placeholder" // as Flux: an empty kustomization is an error
		}
		k.Resources = resources
	}
	if k.APIVersion == "" {
		k.APIVersion, k.Kind = types.KustomizationVersion, types.KustomizationKind
	}
	if fb.TargetNamespace != "" {
		k.Namespace = fb.TargetNamespace
	}
	if fb.NamePrefix != "" {
		k.NamePrefix = fb.NamePrefix
	}
	if fb.NameSuffix != "" {
		k.NameSuffix = fb.NameSuffix
	}
	for i, p := range fb.Patches {
		patch, err := kustomizePatch(p)
		if err != nil {
			return "", nil, fmt.Errorf("patches[%d]: %w", i, err)
		}
		k.Patches = append(k.Patches, patch)
	}
	for _, c := range fb.Components {
		if isRemoteRef(c) || filepath.IsAbs(c) || filepath.IsAbs(strings.TrimPrefix(strings.ToLower(c), "file://")) {
			return "", nil, fmt.Errorf("component path '%s' must be local and relative", c)
		}
		if fb.IgnoreMissingComponents && !b.Exists(filepath.Join(dir, c)) {
			continue
		}
		k.Components = append(k.Components, c)
	}
	for _, img := range fb.Images {
		i := slices.IndexFunc(k.Images, func(have types.Image) bool { return have.Name == img.Name })
		if i < 0 {
			k.Images = append(k.Images, types.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
			continue
		}
		if img.NewName != "" {
			k.Images[i].NewName = img.NewName
		}
		if img.NewTag != "" || img.Digest != "" {
			k.Images[i].NewTag, k.Images[i].Digest = img.NewTag, img.Digest
		}
	}
	data, err := sigsyaml.Marshal(k)
	return kfile, data, err
}

// readKustomization reads the kustomization file of dir, if it has one:
// its path and what it says ("" and nothing when there is none).
func readKustomization(b *boundedFS, dir string) (string, types.Kustomization, error) {
	var k types.Kustomization
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, name)
		if !b.Exists(p) || b.IsDir(p) {
			continue
		}
		data, err := b.ReadFile(p)
		if err != nil {
			return "", k, err
		}
		if err := sigsyaml.Unmarshal(data, &k); err != nil {
			return "", k, fmt.Errorf("%s: %w", b.rel(p), err)
		}
		return p, k, nil
	}
	return "", k, nil
}

// kustomizePatch is p as kustomize's Patch: its target's fields are
// kustomize's selector's (group, version, kind, name, namespace,
// labelSelector, annotationSelector), as Flux's Selector has them.
func kustomizePatch(p config.FluxPatch) (types.Patch, error) {
	patch := types.Patch{Patch: p.Patch}
	if p.Target == nil {
		return patch, nil
	}
	data, err := json.Marshal(p.Target)
	if err == nil {
		patch.Target = &types.Selector{}
		err = json.Unmarshal(data, patch.Target)
	}
	if err != nil {
		return patch, fmt.Errorf("target: %w", err)
	}
	return patch, nil
}

// fluxManifests are the resources of the kustomization Flux generates for
// dir (fluxcd/pkg/kustomize scanManifests): paths relative to dir.
func fluxManifests(b *boundedFS, dir string) ([]string, error) {
	r, err := b.resolve(dir)
	if err != nil {
		return nil, err
	}
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	var out []string
	err = filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == r {
			return nil
		}
		rel, _ := filepath.Rel(r, p)
		if d.IsDir() {
			for _, name := range konfig.RecognizedKustomizationFileNames() {
				k := filepath.Join(p, name)
				if fi, err := os.Stat(k); err == nil && !fi.IsDir() && !b.ignored(k) {
					out = append(out, "./"+filepath.ToSlash(rel))
					return filepath.SkipDir
				}
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" || b.ignored(p) {
			return nil
		}
		data, err := b.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := rf.SliceFromBytes(data); err != nil {
			return fmt.Errorf("failed to decode Kubernetes YAML from %s: %w", filepath.ToSlash(rel), err)
		}
		out = append(out, "./"+filepath.ToSlash(rel))
		return nil
	})
	return out, err
}

// fluxSubstitutes says whether fb's variables are substituted at all.
func fluxSubstitutes(fb *config.FluxBuild) bool {
	return fb != nil && fb.PostBuild && (len(fb.Vars) > 0 || fb.SubstituteAlways)
}

// fluxVarNames is the error kustomize-controller gives for a variable
// whose name it refuses, or nil; worked out once a build (fluxObject).
func fluxVarNames(fb *config.FluxBuild) error {
	for name := range fb.Vars {
		if !fluxVarName.MatchString(name) {
			return fmt.Errorf("'%s' var name is invalid, must match '%s'", name, fluxVarName)
		}
	}
	return nil
}

// fluxObject is the object of res after kustomize-controller's post-build
// substitution (SubstituteVariables), or nil when it substitutes nothing
// in res; badVars is fluxVarNames', returned for an object it would
// substitute.
func fluxObject(res *resource.Resource, fb *config.FluxBuild, badVars error) (map[string]any, error) {
	if !fluxSubstitutes(fb) || res.GetLabels()[substituteKey] == "disabled" || res.GetAnnotations()[substituteKey] == "disabled" {
		return nil, nil
	}
	if badVars != nil {
		return nil, badVars
	}
	data, err := res.AsYAML()
	if err != nil {
		return nil, err
	}
	out, err := envsubst.Eval(string(data), func(name string) (string, bool) {
		v, ok := fb.Vars[name] // newlines already gone (discovery), as Flux loads them
		return v, ok
	})
	if err != nil {
		return nil, fmt.Errorf("post build failed for '%s': envsubst error: variable substitution failed: %w", res.CurId(), err)
	}
	js, err := sigsyaml.YAMLToJSON([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("post build failed for '%s': YAMLToJSON: %w", res.CurId(), err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// setCommonMetadata sets fb's labels and annotations on obj, as
// kustomize-controller does before it applies (ssa/utils.SetCommonMetadata).
func setCommonMetadata(obj map[string]any, fb *config.FluxBuild) {
	if fb == nil || len(fb.Labels)+len(fb.Annotations) == 0 {
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	setAll(meta, "labels", fb.Labels)
	setAll(meta, "annotations", fb.Annotations)
}

// setAll sets each of set under meta[field].
func setAll(meta map[string]any, field string, set map[string]string) {
	if len(set) == 0 {
		return
	}
	m, _ := meta[field].(map[string]any)
	if m == nil {
		m = map[string]any{}
		meta[field] = m
	}
	for k, v := range set {
		m[k] = v
	}
}
