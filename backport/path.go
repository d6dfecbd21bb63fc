package backport

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Path addresses a field in an object: read from a finding's pathElements
// (see PathOf), so field names are whole and list items are named by their
// keys, which hold in Git's object as in live, whatever order each lists
// them in.
type Path []Element

// Element is one step of a Path: exactly one of Field, Key, HasValue and
// IsIndex is set.
type Element struct {
	// Field is a struct field or map key.
	Field string
	// Key selects the item of an associative list whose fields equal these
	// ([name="app"], [containerPort=80,protocol="TCP"]).
	Key []KeyField
	// Value selects the item of a set equal to it ([="x"]).
	Value    any
	HasValue bool
	// Index selects a list item by position ([3]).
	Index   int
	IsIndex bool
}

// KeyField is one field of a list item's key, with a JSON-typed value.
type KeyField struct {
	Name  string
	Value any
}

// String writes the path back in the report's form.
func (p Path) String() string {
	var b strings.Builder
	for _, e := range p {
		b.WriteString(e.String())
	}
	return b.String()
}

// String writes one element the way fieldpath.PathElement.String does.
func (e Element) String() string {
	pe, err := e.pathElement()
	if err != nil {
		return "{{" + err.Error() + "}}"
	}
	return pe.String()
}

func (e Element) pathElement() (fieldpath.PathElement, error) {
	switch {
	case e.Key != nil:
		fields := make(value.FieldList, len(e.Key))
		for i, k := range e.Key {
			fields[i] = value.Field{Name: k.Name, Value: value.NewValueInterface(k.Value)}
		}
		return fieldpath.PathElement{Key: &fields}, nil
	case e.HasValue:
		v := value.NewValueInterface(e.Value)
		return fieldpath.PathElement{Value: &v}, nil
	case e.IsIndex:
		i := e.Index
		return fieldpath.PathElement{Index: &i}, nil
	default:
		name := e.Field
		return fieldpath.PathElement{FieldName: &name}, nil
	}
}

// PathOf reads a finding's pathElements, the steps structured-merge-diff
// serializes in managedFields ("f:spec", `k:{"name":"app"}`, `v:"x"`,
// "i:0"), with its own parser.
func PathOf(elements []string) (Path, error) {
	if len(elements) == 0 {
		return nil, fmt.Errorf("the finding has no pathElements")
	}
	p := make(Path, 0, len(elements))
	for _, s := range elements {
		pe, err := fieldpath.DeserializePathElement(s)
		if err != nil {
			return nil, fmt.Errorf("path element %q: %w", s, err)
		}
		p = append(p, elementOf(pe))
	}
	return p, nil
}

// elementOf turns a structured-merge-diff path element into an Element,
// with the values in the types the objects hold (an integral key is an
// int64, as a port in a decoded manifest is).
func elementOf(pe fieldpath.PathElement) Element {
	switch {
	case pe.FieldName != nil:
		return Element{Field: *pe.FieldName}
	case pe.Key != nil:
		key := make([]KeyField, len(*pe.Key))
		for i, f := range *pe.Key {
			key[i] = KeyField{Name: f.Name, Value: jsonValue(f.Value)}
		}
		return Element{Key: key}
	case pe.Value != nil:
		return Element{Value: jsonValue(*pe.Value), HasValue: true}
	default:
		return Element{Index: *pe.Index, IsIndex: true}
	}
}

// jsonValue is v as a Go value, whole numbers as int64: the JSON parser of
// structured-merge-diff reads every number as a float64.
func jsonValue(v value.Value) any { return wholeInts(v.Unstructured()) }

func wholeInts(v any) any {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
	case map[string]any:
		for k, c := range t {
			t[k] = wholeInts(c)
		}
	case []any:
		for i, c := range t {
			t[i] = wholeInts(c)
		}
	}
	return v
}

func isField(e Element) bool { return e.Key == nil && !e.HasValue && !e.IsIndex }

// child steps from v into e; known is false once the path left obj.
func child(v any, known bool, e Element) (any, bool) {
	if !known {
		return nil, false
	}
	if isField(e) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		c, ok := m[e.Field]
		return c, ok
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	i := findItem(list, e)
	if i < 0 {
		return nil, false
	}
	return list[i], true
}

// findItem returns the index of the list item that e selects, or -1.
func findItem(list []any, e Element) int {
	for i, item := range list {
		if matches(item, i, e) {
			return i
		}
	}
	return -1
}

// matches reports whether item (at index i) is the one e selects. A key
// field protocol="TCP" also matches an item without protocol: the server
// defaults it (the scanner compares ports the same way).
func matches(item any, i int, e Element) bool {
	switch {
	case e.IsIndex:
		return i == e.Index
	case e.HasValue:
		return sameValue(item, e.Value)
	case e.Key != nil:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, k := range e.Key {
			v, present := m[k.Name]
			if !present && k.Name == "protocol" && k.Value == "TCP" {
				continue
			}
			if !present || !sameValue(v, k.Value) {
				return false
			}
		}
		return true
	}
	return false
}

// sameValue compares two JSON-typed values, numbers by value whatever
// their Go type.
func sameValue(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0)
	}
	return 0, false
}

// get returns the value at the resolved path p in v.
func get(v any, p Path) (any, bool) {
	known := true
	for _, e := range p {
		if v, known = child(v, known, e); !known {
			return nil, false
		}
	}
	return v, true
}

// set puts val at the resolved path p in v, creating maps and list items
// on the way, and returns the new v.
func set(v any, p Path, val any) (any, error) {
	if len(p) == 0 {
		return val, nil
	}
	e := p[0]
	if isField(e) {
		m, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				return nil, fmt.Errorf("%s: not a map", e)
			}
			m = map[string]any{}
		}
		c, err := set(m[e.Field], p[1:], val)
		if err != nil {
			return nil, err
		}
		m[e.Field] = c
		return m, nil
	}
	list, ok := v.([]any)
	if !ok && v != nil {
		return nil, fmt.Errorf("%s: not a list", e)
	}
	i := findItem(list, e)
	if i < 0 {
		item, err := newItem(e, p[1:], val)
		if err != nil {
			return nil, err
		}
		return append(list, item), nil
	}
	c, err := set(list[i], p[1:], val)
	if err != nil {
		return nil, err
	}
	list[i] = c
	return list, nil
}

// newItem is the list item that e selects, with val at rest inside it.
func newItem(e Element, rest Path, val any) (any, error) {
	switch {
	case e.IsIndex:
		return nil, fmt.Errorf("%s: no such item", e)
	case e.HasValue:
		if len(rest) > 0 {
			return nil, fmt.Errorf("%s: a set item has no fields", e)
		}
		return e.Value, nil
	}
	item := map[string]any{}
	for _, k := range e.Key {
		item[k.Name] = k.Value
	}
	return set(item, rest, val)
}

// del removes the value at the resolved path p from v and returns whether
// it was there.
func del(v any, p Path) bool {
	if len(p) == 0 {
		return false
	}
	parent, ok := get(v, p[:len(p)-1])
	if !ok {
		return false
	}
	e := p[len(p)-1]
	if isField(e) {
		m, ok := parent.(map[string]any)
		if !ok {
			return false
		}
		_, had := m[e.Field]
		delete(m, e.Field)
		return had
	}
	list, ok := parent.([]any)
	if !ok {
		return false
	}
	i := findItem(list, e)
	if i < 0 {
		return false
	}
	list = append(list[:i:i], list[i+1:]...)
	// The list lives in its parent; write the shorter one back.
	if len(p) == 1 {
		return true
	}
	grand, _ := get(v, p[:len(p)-2])
	_, err := set(grand, p[len(p)-2:len(p)-1], list)
	return err == nil
}
