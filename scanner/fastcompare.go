package scanner

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// The typed compare of structured-merge-diff (TypedValue.Compare, after
// typing and validating Git's side) was most of a cold scan's diff: it
// boxes every value it visits, builds a set of every added path (a
// Deployment's dozen defaults, and every field under each) and allocates
// for each map it zips. walkCompare finds what it finds, in the objects'
// own maps and lists, with the same schema: the leaves that differ, the
// topmost paths Git has and live does not, and the added units addedUnits
// would reduce its added set to, in no particular order (a report sorts
// its findings). What both sides hold as one value it passes over where
// withoutSame leaves it out of smd's compare (in maps reached through maps
// from the root), without copying either side.
// Where an object holds anything whose handling is not plain (a value of
// another type than the schema's, a field a struct does not declare, a
// list item without its keys, duplicate items, apiVersion or kind other
// than the kind listed), the walk gives up and the scan types and compares
// the object as before; that compare also says what is wrong.
// TestWalkCompareFindsWhatSMDFinds holds the walk to it over thousands of
// edited objects.
//
// BenchmarkDiffPerObject (a Deployment, normalized and compared): 58 to
// 34 µs and 428 to 187 allocations with the walk of what withoutSame left;
// passing over what is one value instead of copying the rest, 34 to 33
// µs and 187 to 167 allocations; 34 µs and 175 allocations since it stops
// at lists (FuzzWalkCompare found an undeclared field, one value on both
// sides inside a list item, that smd refuses and the walk passed over).

// comparison is what a typed compare found, as changesOf reads it.
type comparison struct {
	// modified are the leaves both sides hold with different values, each
	// with the schema's name for its type (for equivalent).
	modified []typedLeaf
	// removed are the topmost paths Git has and live does not.
	removed []fieldpath.Path
	// added are the units of what live has and Git does not (addedUnits).
	added []unit
}

type typedLeaf struct {
	path     fieldpath.Path
	typeName string
}

// rootType is the schema and type of a kind's objects, as the type
// converter types them.
type rootType struct {
	s  *smdschema.Schema
	tr smdschema.TypeRef
}

// rootTypes caches each kind's rootType; load empties it when it rebuilds
// the converter.
type rootTypes struct {
	mu    sync.Mutex
	types map[schema.GroupVersionKind]rootType
}

// rootType is the schema and type of gvk's objects, false when its
// group/version is typed by deduction or failed.
func (t *typer) rootType(gvk schema.GroupVersionKind) (rootType, bool) {
	if t.conv == nil || !t.loaded[gvk.GroupVersion()] || t.failed[gvk.GroupVersion()] != nil {
		return rootType{}, false
	}
	t.roots.mu.Lock()
	defer t.roots.mu.Unlock()
	if rt, ok := t.roots.types[gvk]; ok {
		return rt, rt.s != nil
	}
	// The converter names its types by kind; an object of the kind and
	// nothing else is typed without a walk worth the name.
	tv, err := t.conv.ObjectToTyped(unstructuredOf(map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind}), typed.AllowDuplicates)
	var rt rootType
	if err == nil {
		rt = rootType{s: tv.Schema(), tr: tv.TypeRef()}
	}
	if t.roots.types == nil {
		t.roots.types = map[schema.GroupVersionKind]rootType{}
	}
	t.roots.types[gvk] = rt
	return rt, rt.s != nil
}

// walkCompare compares git and live, objects of kind gvk (whole, or what
// withoutSame leaves of them), with the schema of rt, passing over what
// they hold as one value, and says false where it gives up.
func walkCompare(rt rootType, gvk schema.GroupVersionKind, git, live map[string]any) (comparison, bool) {
	// The converter types each side by the kind it names.
	apiVersion, kind := gvk.GroupVersion().String(), gvk.Kind
	if git["apiVersion"] != apiVersion || git["kind"] != kind || live["apiVersion"] != apiVersion || live["kind"] != kind {
		return comparison{}, false
	}
	w := compareWalk{s: rt.s}
	ok := w.node(rt.tr, git, live, true, true, false)
	return w.out, ok
}

type compareWalk struct {
	s    *smdschema.Schema
	path fieldpath.Path
	// inList: the path passes through a list item. What both sides hold as
	// one value is passed over only above any list, where withoutSame
	// leaves it out of smd's compare: below, smd validates Git's side of
	// it, and so must the walk.
	inList bool
	names  []string // backs the field names of path, a slab
	paths  pathSlab
	out    comparison
}

// fieldName is a pointer to a copy of name, cut from a slab: the path of
// every field walked needs one.
func (w *compareWalk) fieldName(name string) *string {
	if len(w.names) == cap(w.names) {
		w.names = make([]string, 0, 32)
	}
	w.names = append(w.names, name)
	return &w.names[len(w.names)-1]
}

// kept is the walk's path, copied to be kept.
func (w *compareWalk) kept() fieldpath.Path {
	n := len(w.path)
	if n == 0 {
		return fieldpath.Path{}
	}
	return w.paths.path(w.path[:n-1], w.path[n-1])
}

// atomOf is what tr allows.
func (w *compareWalk) atomOf(tr smdschema.TypeRef) (smdschema.Atom, bool) {
	a, ok := w.s.Resolve(tr)
	return a, ok && (a.Scalar != nil || a.List != nil || a.Map != nil)
}

// deduce is the one kind of value a allows that v is, as
// structured-merge-diff's deduceAtom picks it where a type allows more
// than one (an IntOrString, a field the schema leaves open); false when v
// is none of those a allows, or not a value decoding makes.
func deduce(a smdschema.Atom, v any) (smdschema.Atom, bool) {
	switch v.(type) {
	case string, bool, int64, float64:
		return smdschema.Atom{Scalar: a.Scalar}, a.Scalar != nil
	case []any:
		return smdschema.Atom{List: a.List}, a.List != nil
	case map[string]any:
		return smdschema.Atom{Map: a.Map}, a.Map != nil
	}
	return smdschema.Atom{}, false
}

// node compares the values at the walk's path, of type tr: l is Git's
// (when lok), r live's (when rok). newKey says what the path's last
// element is to the schema (nodeKind.NewKey).
func (w *compareWalk) node(tr smdschema.TypeRef, l, r any, lok, rok, newKey bool) bool {
	a, ok := w.atomOf(tr)
	if !ok {
		return false
	}
	switch {
	case !rok:
		// Git's alone: removed, and nothing under it is walked further,
		// but it must hold what the schema says.
		if !w.check(a, l) {
			return false
		}
		w.out.removed = append(w.out.removed, w.kept())
		return true
	case !lok:
		return w.added(tr, a, r, newKey)
	}
	al, lfits := deduce(a, l)
	ar, rfits := deduce(a, r)
	if !lfits || !rfits {
		return false
	}
	switch {
	case al.Scalar != nil && ar.Scalar != nil:
		if !scalarFits(*a.Scalar, l) || !scalarFits(*a.Scalar, r) {
			return false
		}
		return w.leaf(tr, l, r)
	case al.Map != nil && ar.Map != nil:
		lm, rm := l.(map[string]any), r.(map[string]any)
		if a.Map.ElementRelationship == smdschema.Atomic || (len(lm) == 0 && len(rm) == 0) {
			return w.check(a, l) && w.check(a, r) && w.leaf(tr, l, r)
		}
		return w.mapItems(a.Map, lm, rm)
	case al.List != nil && ar.List != nil:
		ll, rl := l.([]any), r.([]any)
		if a.List.ElementRelationship == smdschema.Atomic || (len(ll) == 0 && len(rl) == 0) {
			return w.check(a, l) && w.check(a, r) && w.leaf(tr, l, r)
		}
		return w.listItems(a.List, ll, rl)
	}
	// A value of one kind on one side, of another on the other.
	return false
}

// leaf compares two values the schema holds as one (a scalar, an atomic
// list or map) as value.Equals does.
func (w *compareWalk) leaf(tr smdschema.TypeRef, l, r any) bool {
	eq, ok := smdEqual(l, r)
	if !ok {
		return false
	}
	if !eq {
		name := ""
		if tr.NamedType != nil {
			name = *tr.NamedType
		}
		w.out.modified = append(w.out.modified, typedLeaf{path: w.kept(), typeName: name})
	}
	return true
}

// fieldType is the type of m's field key and whether key is a new key
// rather than a struct's field (nodeKind.NewKey), as the compare, the
// validation and kindCursor find them; declared is false for a field a
// struct does not declare.
func fieldType(m *smdschema.Map, key string) (tr smdschema.TypeRef, newKey, declared bool) {
	if sf, ok := m.FindField(key); ok {
		return sf.Type, false, true
	}
	return m.ElementType, true, m.ElementType != (smdschema.TypeRef{})
}

func (w *compareWalk) mapItems(m *smdschema.Map, lm, rm map[string]any) bool {
	step := func(key string, l, r any, lok, rok bool) bool {
		tr, newKey, ok := fieldType(m, key)
		if !ok {
			return false
		}
		w.path = append(w.path, fieldpath.PathElement{FieldName: w.fieldName(key)})
		ok = w.node(tr, l, r, lok, rok, newKey)
		w.path = w.path[:len(w.path)-1]
		return ok
	}
	for k, l := range lm {
		r, rok := rm[k]
		if rok && !w.inList && sameValue(l, r) {
			continue // one value: nothing to find in it
		}
		if !step(k, l, r, true, rok) {
			return false
		}
	}
	for k, r := range rm {
		if _, lok := lm[k]; !lok && !step(k, nil, r, false, true) {
			return false
		}
	}
	return true
}

// maxItems bounds the items of a list the walk matches pairwise.
const maxItems = 64

func (w *compareWalk) listItems(list *smdschema.List, ll, rl []any) bool {
	if list.ElementRelationship != smdschema.Associative || len(ll) > maxItems || len(rl) > maxItems {
		return false
	}
	lpe, ok := w.itemElements(list, ll)
	if !ok {
		return false
	}
	rpe, ok := w.itemElements(list, rl)
	if !ok {
		return false
	}
	step := func(pe fieldpath.PathElement, l, r any, lok, rok bool) bool {
		w.path = append(w.path, pe)
		inList := w.inList
		w.inList = true
		ok := w.node(list.ElementType, l, r, lok, rok, true)
		w.path, w.inList = w.path[:len(w.path)-1], inList
		return ok
	}
	matched := make([]bool, len(rl))
	for i, pe := range lpe {
		j := indexOfElement(rpe, pe)
		if j >= 0 {
			matched[j] = true
			if !step(pe, ll[i], rl[j], true, true) {
				return false
			}
		} else if !step(pe, ll[i], nil, true, false) {
			return false
		}
	}
	for j, pe := range rpe {
		if !matched[j] && !step(pe, nil, rl[j], false, true) {
			return false
		}
	}
	return true
}

func indexOfElement(pes []fieldpath.PathElement, pe fieldpath.PathElement) int {
	for i := range pes {
		if pes[i].Equals(pe) {
			return i
		}
	}
	return -1
}

// itemElements are the path elements of an associative list's items, as
// structured-merge-diff makes them (keys, with the schema's defaults for
// keys an item leaves out; or the item itself for a set); false for an
// item it could not make one of, or two items of one element.
func (w *compareWalk) itemElements(list *smdschema.List, items []any) ([]fieldpath.PathElement, bool) {
	pes := make([]fieldpath.PathElement, len(items))
	for i, item := range items {
		pe, ok := w.itemElement(list, item)
		if !ok {
			return nil, false
		}
		for _, seen := range pes[:i] {
			if seen.Equals(pe) {
				return nil, false
			}
		}
		pes[i] = pe
	}
	return pes, true
}

func (w *compareWalk) itemElement(list *smdschema.List, item any) (fieldpath.PathElement, bool) {
	if len(list.Keys) == 0 {
		switch item.(type) {
		case string, bool, int64, float64:
			v := value.NewValueInterface(item)
			return fieldpath.PathElement{Value: &v}, true
		}
		return fieldpath.PathElement{}, false
	}
	m, ok := item.(map[string]any)
	if !ok {
		return fieldpath.PathElement{}, false
	}
	elem, ok := w.s.Resolve(list.ElementType)
	if !ok || elem.Map == nil {
		return fieldpath.PathElement{}, false
	}
	keys := make(value.FieldList, 0, len(list.Keys))
	for _, name := range list.Keys {
		v, ok := m[name]
		if !ok {
			sf, _ := elem.Map.FindField(name)
			if sf.Default == nil {
				continue
			}
			v = sf.Default
		}
		switch v.(type) {
		case string, bool, int64, float64:
		default:
			return fieldpath.PathElement{}, false
		}
		keys = append(keys, value.Field{Name: name, Value: value.NewValueInterface(v)})
	}
	if len(keys) == 0 {
		return fieldpath.PathElement{}, false
	}
	keys.Sort()
	return fieldpath.PathElement{Key: &keys}, true
}

// added records r, live's alone at the walk's path, as addedUnits would:
// the node, unless it is a collection (a map of keys, a list that is not
// atomic), whose items are then reported instead, each by the same rule.
func (w *compareWalk) added(tr smdschema.TypeRef, a smdschema.Atom, r any, newKey bool) bool {
	if !w.check(a, r) {
		return false
	}
	// What the node is, as kindCursor says it: by the type, not the value.
	k := kindOf(tr, a, newKey)
	if !k.Collection {
		w.out.added = append(w.out.added, unit{path: w.kept(), kind: k})
		return true
	}
	switch r := r.(type) {
	case map[string]any:
		if a.Map == nil {
			return false
		}
		for key, v := range r {
			tr, newKey, _ := fieldType(a.Map, key) // check found every field
			ea, _ := w.atomOf(tr)
			w.path = append(w.path, fieldpath.PathElement{FieldName: w.fieldName(key)})
			ok := w.added(tr, ea, v, newKey)
			w.path = w.path[:len(w.path)-1]
			if !ok {
				return false
			}
		}
	case []any:
		if a.List == nil || a.List.ElementRelationship != smdschema.Associative {
			return false
		}
		ea, _ := w.atomOf(a.List.ElementType)
		for _, item := range r {
			pe, _ := w.itemElement(a.List, item) // check made each one
			w.path = append(w.path, pe)
			ok := w.added(a.List.ElementType, ea, item, true)
			w.path = w.path[:len(w.path)-1]
			if !ok {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// check says whether v holds to atom a all the way down as the walk can
// handle it: the validation structured-merge-diff gives Git's side, and
// no item its compare would fail on (an associative list's item without
// keys, or two items of one key).
func (w *compareWalk) check(a smdschema.Atom, v any) bool {
	a, ok := deduce(a, v)
	if !ok {
		return false
	}
	switch {
	case a.Scalar != nil:
		return scalarFits(*a.Scalar, v)
	case a.Map != nil:
		for key, item := range v.(map[string]any) {
			tr, _, ok := fieldType(a.Map, key)
			if !ok {
				return false
			}
			ea, ok := w.atomOf(tr)
			if !ok || !w.check(ea, item) {
				return false
			}
		}
		return true
	default:
		items := v.([]any)
		if a.List.ElementRelationship == smdschema.Associative {
			if len(items) > maxItems {
				return false
			}
			if _, ok := w.itemElements(a.List, items); !ok {
				return false
			}
		} else if a.List.ElementRelationship != smdschema.Atomic {
			return false
		}
		ea, ok := w.atomOf(a.List.ElementType)
		if !ok {
			return false
		}
		for _, item := range items {
			if !w.check(ea, item) {
				return false
			}
		}
		return true
	}
}

// scalarFits says whether v is a scalar of type t, as decoding makes them
// (null is left to structured-merge-diff).
func scalarFits(t smdschema.Scalar, v any) bool {
	switch v.(type) {
	case string:
		return t == smdschema.String || t == smdschema.Untyped
	case bool:
		return t == smdschema.Boolean || t == smdschema.Untyped
	case int64, float64:
		return t == smdschema.Numeric || t == smdschema.Untyped
	}
	return false
}

// smdEqual is value.Equals for decoded values: numbers are one value when
// they are one float64; false ok for a value it does not know.
func smdEqual(a, b any) (eq, ok bool) {
	if !decodedValue(a) || !decodedValue(b) {
		return false, false
	}
	switch a := a.(type) {
	case int64:
		if b, isFloat := b.(float64); isFloat {
			return float64(a) == b, true
		}
	case float64:
		if b, isInt := b.(int64); isInt {
			return a == float64(b), true
		}
	case []any:
		b, isList := b.([]any)
		if !isList || len(a) != len(b) {
			return false, true
		}
		for i := range a {
			if eq, ok := smdEqual(a[i], b[i]); !eq || !ok {
				return false, ok
			}
		}
		return true, true
	case map[string]any:
		b, isMap := b.(map[string]any)
		if !isMap || len(a) != len(b) {
			return false, true
		}
		for k, av := range a {
			bv, found := b[k]
			if !found {
				return false, true
			}
			if eq, ok := smdEqual(av, bv); !eq || !ok {
				return false, ok
			}
		}
		return true, true
	}
	// Two scalars (a is one): one value when of one type and equal.
	return a == b, true
}

// decodedValue says whether v is of a type decoding makes.
func decodedValue(v any) bool {
	switch v.(type) {
	case string, bool, int64, float64, []any, map[string]any:
		return true
	}
	return false
}
