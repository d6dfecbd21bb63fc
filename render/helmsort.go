package render

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// helmSorted is what a render keeps of releaseutil.SortManifests(files,
// nil, releaseutil.InstallOrder): its manifests that are not hooks, in
// install order, or its error. SortManifests reads each document's head
// (apiVersion, kind, metadata's name and annotations) with
// sigs.k8s.io/yaml, through go.yaml.in/yaml/v2 and JSON: a tenth of a
// cold scan's CPU on an estate of charts, for a document the render then
// reads again. helmSorted reads the head from fastDocument's value where
// that gives what sigs.k8s.io/yaml gives (fastHead), and with
// sigs.k8s.io/yaml otherwise, and sorts with one table of the install
// order where lessByKind builds it for every comparison. The files,
// documents, order and errors are SortManifests' (TestHelmSortedIsSortManifests).
func helmSorted(files map[string]string) ([]releaseutil.Manifest, error) {
	var out []releaseutil.Manifest
	for _, p := range slices.Sorted(maps.Keys(files)) {
		content := files[p]
		if strings.HasPrefix(path.Base(p), "_") || strings.TrimSpace(content) == "" {
			continue // partials and empty files
		}
		entries := releaseutil.SplitManifests(content)
		keys := slices.Collect(maps.Keys(entries))
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			doc := entries[k]
			head, err := helmHead(doc)
			if err != nil {
				return nil, fmt.Errorf("YAML parse error on %s: %w", p, err)
			}
			if head.Metadata != nil {
				if _, hook := head.Metadata.Annotations[release.HookAnnotation]; hook {
					continue // a hook, known or not: not part of a render
				}
			}
			out = append(out, releaseutil.Manifest{Name: p, Content: doc, Head: &head})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return installsBefore(out[i].Head.Kind, out[j].Head.Kind)
	})
	return out, nil
}

// installRank is each kind's place in releaseutil.InstallOrder.
var installRank = func() map[string]int {
	rank := make(map[string]int, len(releaseutil.InstallOrder))
	for i, kind := range releaseutil.InstallOrder {
		rank[kind] = i
	}
	return rank
}()

// installsBefore is Helm's lessByKind for InstallOrder: kinds in the order
// by their place in it, the rest after them by name.
func installsBefore(a, b string) bool {
	ra, aok := installRank[a]
	rb, bok := installRank[b]
	switch {
	case !aok && !bok:
		return a < b
	case !aok:
		return false
	case !bok:
		return true
	}
	return ra < rb
}

// helmHead is the head of doc as SortManifests reads it.
func helmHead(doc string) (releaseutil.SimpleHead, error) {
	if h, ok := fastHead(doc); ok {
		return h, nil
	}
	var h releaseutil.SimpleHead
	err := yaml.Unmarshal([]byte(doc), &h)
	return h, err
}

// fastHead is the head of doc from fastDocument's value; false where
// sigs.k8s.io/yaml might read it otherwise: a head field that is not a
// string, or a string go.yaml.in/yaml/v2 may take for another type when
// plain (yamlV2String), and a key encoding/json would take for a head
// field's (it matches names without regard to case).
func fastHead(doc string) (releaseutil.SimpleHead, bool) {
	var h releaseutil.SimpleHead
	m, _, ok := fastDocument([]byte(doc))
	if !ok {
		return h, false
	}
	for k, v := range m {
		var ok bool
		switch k {
		case "apiVersion":
			h.Version, ok = yamlV2String(v)
		case "kind":
			h.Kind, ok = yamlV2String(v)
		case "metadata":
			h.Metadata, ok = fastMetadata(v)
		default:
			ok = !strings.EqualFold(k, "apiVersion") && !strings.EqualFold(k, "kind") && !strings.EqualFold(k, "metadata")
		}
		if !ok {
			return h, false
		}
	}
	return h, true
}

// helmMetadata is the type of releaseutil.SimpleHead's Metadata.
type helmMetadata = struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations"`
}

// fastMetadata is fastHead's reading of metadata.
func fastMetadata(v any) (*helmMetadata, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	md := &helmMetadata{}
	for k, v := range m {
		switch k {
		case "name":
			if md.Name, ok = yamlV2String(v); !ok {
				return nil, false
			}
		case "annotations":
			a, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			md.Annotations = make(map[string]string, len(a))
			for ak, av := range a {
				s, ok := yamlV2String(av)
				if _, special := yamlV2Special[ak]; special || !ok {
					return nil, false // a key y is true to yaml.v2
				}
				md.Annotations[ak] = s
			}
		default:
			if strings.EqualFold(k, "name") || strings.EqualFold(k, "annotations") {
				return nil, false
			}
		}
	}
	return md, true
}

// yamlV2String is v when it is a string go.yaml.in/yaml/v2 reads as a
// string whatever its style. fastDocument's strings are quoted scalars
// (strings to both) or plain ones yaml.v3 resolves as strings; of those,
// yaml.v2 resolves its YAML 1.1 booleans and nulls otherwise
// (resolve.go's resolveMapList). Numbers resolve alike (FuzzFastHead).
func yamlV2String(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	if s == "" {
		return s, true
	}
	if _, special := yamlV2Special[s]; special {
		return "", false
	}
	return s, true
}

// yamlV2Special are the plain scalars go.yaml.in/yaml/v2 reads as other
// than strings where yaml.v3 reads strings (resolve.go's resolveMapList).
var yamlV2Special = map[string]struct{}{
	"y": {}, "Y": {}, "yes": {}, "Yes": {}, "YES": {}, "true": {}, "True": {}, "TRUE": {},
	"on": {}, "On": {}, "ON": {}, "n": {}, "N": {}, "no": {}, "No": {}, "NO": {},
	"false": {}, "False": {}, "FALSE": {}, "off": {}, "Off": {}, "OFF": {},
	"~": {}, "null": {}, "Null": {}, "NULL": {}, "<<": {},
}
