package scanner

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/calricon/driftscan/report"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

func unstructuredOf(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

// lookup returns the value at path in obj.
func lookup(obj map[string]any, path fieldpath.Path) (v any, ok bool) {
	return walk(obj, path, nil)
}

// pointer is the RFC 6901 pointer of path in obj (list items by index, as
// Argo CD's jsonPointers write them), "" when obj has no value there. It
// is asked only of what is reported: most changes a scan meets are
// defaults it dismisses, and their pointers are never read.
func pointer(obj map[string]any, path fieldpath.Path) string {
	var b strings.Builder
	if _, ok := walk(obj, path, &b); !ok {
		return ""
	}
	return b.String()
}

// walk follows path in obj, and writes its pointer to b unless b is nil.
func walk(obj map[string]any, path fieldpath.Path, b *strings.Builder) (v any, ok bool) {
	var cur any = obj
	for _, pe := range path {
		switch {
		case pe.FieldName != nil:
			m, isMap := cur.(map[string]any)
			if !isMap {
				return nil, false
			}
			cur, ok = m[*pe.FieldName]
			if !ok {
				return nil, false
			}
			if b != nil {
				b.WriteByte('/')
				b.WriteString(strings.ReplaceAll(strings.ReplaceAll(*pe.FieldName, "~", "~0"), "/", "~1"))
			}
		default:
			list, isList := cur.([]any)
			if !isList {
				return nil, false
			}
			i := findItem(list, pe)
			if i < 0 {
				return nil, false
			}
			cur = list[i]
			if b != nil {
				b.WriteByte('/')
				b.WriteString(strconv.Itoa(i))
			}
		}
	}
	return cur, true
}

// findItem finds a list item by a keyed, set or index path element.
func findItem(list []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index < len(list) {
			return *pe.Index
		}
	case pe.Key != nil:
	items:
		for i, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			for _, f := range *pe.Key {
				if !value.Equals(value.NewValueInterface(m[f.Name]), f.Value) {
					// Keys the server defaults (a port's protocol) may be
					// absent on one side.
					if _, present := m[f.Name]; present || f.Name != "protocol" || value.ToString(f.Value) != `"TCP"` {
						continue items
					}
				}
			}
			return i
		}
	case pe.Value != nil:
		for i, item := range list {
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return i
			}
		}
	}
	return -1
}

// text renders a value for the report (report.ValueText): "" when absent,
// and the empty string as `""`, so that a value emptied or filled in reads
// apart from one removed or added in every format the text reaches.
func text(v any, present bool) string {
	switch {
	case !present:
		return ""
	case v == "":
		return `""`
	}
	return report.ValueText(v)
}

const quantityType = "io.k8s.apimachinery.pkg.api.resource.Quantity"

// equivalent reports whether Git's value and the live one are the same value
// written in two forms: quantities compared canonically ("0.5" and "500m"),
// int-or-string and numbers by their text ("80" and 80, 1 and 1.0).
func equivalent(git, live any, typeName string) bool {
	if reflect.DeepEqual(git, live) {
		return true
	}
	if typeName == quantityType {
		gq, err1 := resource.ParseQuantity(report.ValueText(git))
		lq, err2 := resource.ParseQuantity(report.ValueText(live))
		return err1 == nil && err2 == nil && gq.Cmp(lq) == 0
	}
	if isScalar(git) && isScalar(live) {
		return report.ValueText(git) == report.ValueText(live)
	}
	return false
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, bool, int, int32, int64, float32, float64:
		return true
	}
	return false
}

// empty reports whether v is null or an empty list or map: Git writing
// `volumes: []` or `annotations: {}` declares nothing.
func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// PruneEmpty removes nulls and empty lists and maps, recursively, in place:
// what the scan compares. Git writing `volumes: []` declares nothing. It
// is pruneEmptyAgainst with no live object to keep an empty map for.
func PruneEmpty(v any) any {
	switch t := v.(type) {
	case map[string]any:
		pruneEmptyAgainst(t, nil)
	case []any:
		pruneItemsAgainst(t, nil)
	}
	return v
}

// pruneEmptyAgainst is PruneEmpty for Git's object git, in place, except
// that an empty map (once pruned) stays where live's counterpart is a
// non-empty map. The applier that sent `strategy: {}` owns the map, not
// what the server defaulted in it: compared member by member, the
// defaults are dismissed as defaults and a member someone set (a policy
// webhook's runAsNonRoot in a container's `securityContext: {}`) is
// theirs, where the whole map would read as the applier's and as drift.
// A list's items are matched to live's by name, where both lists' items
// have distinct names (containers, volumes, env); an item matched to
// nothing is pruned as PruneEmpty prunes it.
func pruneEmptyAgainst(git, live map[string]any) map[string]any {
	for k, child := range git {
		switch c := child.(type) {
		case map[string]any:
			l, _ := live[k].(map[string]any)
			if len(pruneEmptyAgainst(c, l)) == 0 && len(l) == 0 {
				delete(git, k)
			}
		case []any:
			l, _ := live[k].([]any)
			if len(pruneItemsAgainst(c, l)) == 0 {
				delete(git, k)
			}
		case nil:
			delete(git, k)
		}
	}
	return git
}

// pruneItemsAgainst is pruneEmptyAgainst for a list's items.
func pruneItemsAgainst(git, live []any) []any {
	byName := itemsByName(live)
	for _, item := range git {
		switch it := item.(type) {
		case map[string]any:
			name, _ := it["name"].(string)
			pruneEmptyAgainst(it, byName[name])
		case []any:
			pruneItemsAgainst(it, nil)
		}
	}
	return git
}

// itemsByName indexes a list's items by their name, or is nil when an
// item is not a map with a string name or two share one.
func itemsByName(items []any) map[string]map[string]any {
	if len(items) == 0 {
		return nil
	}
	out := make(map[string]map[string]any, len(items))
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil
		}
		name, ok := m["name"].(string)
		if _, twice := out[name]; !ok || twice {
			return nil
		}
		out[name] = m
	}
	return out
}

// pruneNulls removes nulls, recursively, in place, and keeps empty lists
// and maps.
func pruneNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if child == nil {
				delete(t, k)
				continue
			}
			t[k] = pruneNulls(child)
		}
	case []any:
		for i, child := range t {
			t[i] = pruneNulls(child)
		}
	}
	return v
}
