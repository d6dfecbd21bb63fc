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
		var i int
		if cur, i, ok = step(cur, pe); !ok {
			return nil, false
		}
		if b == nil {
			continue
		}
		b.WriteByte('/')
		if i < 0 {
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(*pe.FieldName, "~", "~0"), "/", "~1"))
		} else {
			b.WriteString(strconv.Itoa(i))
		}
	}
	return cur, true
}

// step follows one path element from cur: a map's member (i is -1) or a
// list's item i.
func step(cur any, pe fieldpath.PathElement) (next any, i int, ok bool) {
	if pe.FieldName != nil {
		m, isMap := cur.(map[string]any)
		if !isMap {
			return nil, -1, false
		}
		next, ok = m[*pe.FieldName]
		return next, -1, ok
	}
	list, isList := cur.([]any)
	if !isList {
		return nil, -1, false
	}
	if i = findItem(list, pe); i < 0 {
		return nil, -1, false
	}
	return list[i], i, true
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
// nothing is pruned as PruneEmpty prunes it. nulls is where git held a
// null (see nullMark), nil when nowhere.
func pruneEmptyAgainst(git, live map[string]any) (pruned, nulls map[string]any) {
	for k, child := range git {
		switch c := child.(type) {
		case map[string]any:
			l, _ := live[k].(map[string]any)
			kept, n := pruneEmptyAgainst(c, l)
			nulls = markNull(nulls, k, n)
			if len(kept) == 0 && len(l) == 0 {
				delete(git, k)
			}
		case []any:
			l, _ := live[k].([]any)
			kept, n := pruneItemsAgainst(c, l)
			nulls = markNull(nulls, k, n)
			if len(kept) == 0 {
				if len(l) > 0 {
					nulls = markNull(nulls, k, emptyMark{})
				}
				delete(git, k)
			}
		case nil:
			nulls = markNull(nulls, k, nullMark{})
			delete(git, k)
		}
	}
	return git, nulls
}

// pruneItemsAgainst is pruneEmptyAgainst for a list's items.
func pruneItemsAgainst(git, live []any) (pruned, nulls []any) {
	byName := itemsByName(live)
	for i, item := range git {
		switch it := item.(type) {
		case map[string]any:
			name, _ := it["name"].(string)
			_, n := pruneEmptyAgainst(it, byName[name])
			nulls = markItem(nulls, git, i, n)
		case []any:
			_, n := pruneItemsAgainst(it, nil)
			nulls = markItem(nulls, git, i, n)
		}
	}
	return git, nulls
}

// pruneNulls removes nulls, recursively, in place, and keeps empty lists
// and maps. nulls is where v held a null (see nullMark), nil when nowhere.
func pruneNulls(v any) (pruned, nulls any) {
	switch t := v.(type) {
	case map[string]any:
		var marks map[string]any
		for k, child := range t {
			if child == nil {
				marks = markNull(marks, k, nullMark{})
				delete(t, k)
				continue
			}
			var n any
			t[k], n = pruneNulls(child)
			marks = markNull(marks, k, n)
		}
		if marks != nil {
			return v, marks
		}
	case []any:
		var marks []any
		for i, child := range t {
			var n any
			t[i], n = pruneNulls(child)
			marks = markItem(marks, t, i, n)
		}
		if marks != nil {
			return v, marks
		}
	}
	return v, nil
}

// Where Git's object held nulls is kept as the object's skeleton: the maps
// and lists that lead to a null, a null itself as nullMark, and a list's
// items in their places, each with its scalar members (the keys a keyed
// path element matches) and nil for an item that held no null. lookup
// follows a field path in it as in the object (underNull).
//
// A null is what the applier sent: Helm renders `replicas: {{
// .Values.replicas }}` with the value unset as `replicas: null`, a
// server-side applier sends it and owns the field, and the API server
// fills in its default, recorded as the applier's (seen with the real
// helm-controller). Pruned, Git's object no longer says so, and the field
// would read as one Git stopped declaring.
type nullMark struct{}

// emptyMark, in the same skeleton, is an empty list Git declares (`rules:
// []`) where live holds a non-empty one: pruned, as an empty list is one
// value with an absent one (the API server stores neither), but the applier
// sends it at every sync. For an atomic list (a ClusterRole's rules) that
// empties whatever another manager wrote there (see emptyAt).
type emptyMark struct{}

// holdsNull reports whether n, a member's marks, records a null (or an
// empty list, emptyMark).
func holdsNull(n any) bool {
	switch t := n.(type) {
	case nullMark, emptyMark:
		return true
	case map[string]any:
		return t != nil
	case []any:
		return t != nil
	}
	return false
}

// markNull records in marks (made on first need) that member k held a
// null, n being the member's marks.
func markNull(marks map[string]any, k string, n any) map[string]any {
	if !holdsNull(n) {
		return marks
	}
	if marks == nil {
		marks = map[string]any{}
	}
	marks[k] = n
	return marks
}

// markItem records in marks (made on first need, one place per item of
// items) that item i held a null, n being the item's marks.
func markItem(marks, items []any, i int, n any) []any {
	if !holdsNull(n) {
		return marks
	}
	if marks == nil {
		marks = make([]any, len(items))
	}
	if m, ok := n.(map[string]any); ok {
		item, _ := items[i].(map[string]any)
		for k, v := range item {
			switch v.(type) {
			case map[string]any, []any:
			default:
				m[k] = v
			}
		}
	}
	marks[i] = n
	return marks
}

// underNull reports whether path is at or under a null of Git's object,
// nulls being where it held them.
func underNull(nulls map[string]any, path fieldpath.Path) bool {
	null, _ := marksAt(nulls, path)
	return null
}

// marksAt follows path in marks (see nullMark): whether it is at or under
// a null of Git's object, and whether it is where Git declared an empty
// list that live fills (see emptyMark).
func marksAt(marks map[string]any, path fieldpath.Path) (underNull, emptyList bool) {
	if marks == nil || len(path) == 0 {
		return false, false
	}
	var cur any = marks
	for _, pe := range path {
		var ok bool
		if cur, _, ok = step(cur, pe); !ok {
			return false, false
		}
		if _, null := cur.(nullMark); null {
			return true, false
		}
	}
	_, empty := cur.(emptyMark)
	return false, empty
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
