package backport

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Path is a finding's path, parsed from the form the report writes
// (fieldpath.Path.String(), for example
// .spec.template.spec.containers[name="app"].image).
//
// That form joins field names with dots without escaping them, so a map key
// holding dots (.metadata.annotations.sidecar.istio.io/status) parses into
// several Field elements; Resolve joins them again against an object.
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

// ParsePath parses a finding's path. Field names are split at every dot;
// see Resolve. The parse is checked by writing the path back with
// structured-merge-diff's own formatter.
func ParsePath(s string) (Path, error) {
	var p Path
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			j := i + 1
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("path %q: empty field name at %d", s, i)
			}
			p = append(p, Element{Field: s[i+1 : j]})
			i = j
		case '[':
			e, n, err := parseBracket(s[i:])
			if err != nil {
				return nil, fmt.Errorf("path %q: %w", s, err)
			}
			p = append(p, e)
			i += n
		default:
			return nil, fmt.Errorf("path %q: want '.' or '[' at %d", s, i)
		}
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("path %q is empty", s)
	}
	if got := p.String(); got != s {
		return nil, fmt.Errorf("path %q reads back as %q", s, got)
	}
	return p, nil
}

// parseBracket parses one [...] element at the start of s and returns it
// and its length.
func parseBracket(s string) (Element, int, error) {
	i := 1
	if strings.HasPrefix(s, "[=") {
		v, n, err := parseLiteral(s[2:])
		if err != nil {
			return Element{}, 0, err
		}
		i = 2 + n
		if i >= len(s) || s[i] != ']' {
			return Element{}, 0, fmt.Errorf("unterminated set item %q", s)
		}
		return Element{Value: v, HasValue: true}, i + 1, nil
	}
	if j := strings.IndexByte(s, ']'); j > 1 && isDigits(s[1:j]) {
		n, err := strconv.Atoi(s[1:j])
		if err != nil {
			return Element{}, 0, err
		}
		return Element{Index: n, IsIndex: true}, j + 1, nil
	}
	var key []KeyField
	for {
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 {
			return Element{}, 0, fmt.Errorf("bad key in %q", s)
		}
		name := s[i : i+eq]
		v, n, err := parseLiteral(s[i+eq+1:])
		if err != nil {
			return Element{}, 0, err
		}
		key = append(key, KeyField{Name: name, Value: v})
		i += eq + 1 + n
		if i >= len(s) {
			return Element{}, 0, fmt.Errorf("unterminated key %q", s)
		}
		if s[i] == ']' {
			return Element{Key: key}, i + 1, nil
		}
		if s[i] != ',' {
			return Element{}, 0, fmt.Errorf("want ',' or ']' in %q at %d", s, i)
		}
		i++
	}
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// parseLiteral parses a value as value.ToString writes it: a Go-quoted
// string, a number, true, false or null.
func parseLiteral(s string) (any, int, error) {
	if strings.HasPrefix(s, `"`) {
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '"':
				str, err := strconv.Unquote(s[:j+1])
				return str, j + 1, err
			}
		}
		return nil, 0, fmt.Errorf("unterminated string in %q", s)
	}
	j := 0
	for j < len(s) && s[j] != ',' && s[j] != ']' {
		j++
	}
	lit := s[:j]
	switch lit {
	case "true":
		return true, j, nil
	case "false":
		return false, j, nil
	case "null":
		return nil, j, nil
	}
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return n, j, nil
	}
	if f, err := strconv.ParseFloat(lit, 64); err == nil {
		return f, j, nil
	}
	return nil, 0, fmt.Errorf("bad value %q", lit)
}

// stringMaps are the fields whose values are maps with free-form keys,
// where a key may hold dots: what follows them in a path is one key.
var stringMaps = map[string]bool{"annotations": true, "labels": true, "matchLabels": true, "nodeSelector": true}

// topStringMaps are such maps at the top of an object (ConfigMap and
// Secret data).
var topStringMaps = map[string]bool{"data": true, "stringData": true, "binaryData": true}

// Resolve joins the dotted field names of p into map keys. Under the maps
// whose keys are free-form (annotations, labels, matchLabels, nodeSelector,
// a Service's spec.selector, and top-level data, stringData and
// binaryData), everything up to the next list element is one key: their
// values are strings. Elsewhere, at each map of obj, the longest run of
// names that is a key there is taken, and where obj has none (an Added
// field) each name is one field: API fields hold no dots.
func Resolve(p Path, obj any, kind string) Path {
	var out Path
	cur, known := obj, true
	for i := 0; i < len(p); {
		e := p[i]
		if e.Field == "" || e.Key != nil || e.HasValue || e.IsIndex {
			out = append(out, e)
			cur, known = child(cur, known, e)
			i++
			continue
		}
		j := i
		for j < len(p) && isField(p[j]) {
			j++
		}
		run := p[i:j]
		n := 0
		if freeKeys(out, kind) {
			n = len(run)
		} else if m, ok := cur.(map[string]any); ok && known {
			for k := len(run); k >= 1; k-- {
				if _, has := m[joinFields(run[:k])]; has {
					n = k
					break
				}
			}
		}
		if n == 0 {
			n = 1
		}
		f := Element{Field: joinFields(run[:n])}
		out = append(out, f)
		cur, known = child(cur, known, f)
		i += n
	}
	return out
}

func isField(e Element) bool { return e.Key == nil && !e.HasValue && !e.IsIndex }

func joinFields(run Path) string {
	names := make([]string, len(run))
	for i, e := range run {
		names[i] = e.Field
	}
	return strings.Join(names, ".")
}

// freeKeys reports whether the map at path p has free-form keys.
func freeKeys(p Path, kind string) bool {
	if len(p) == 0 {
		return false
	}
	last := p[len(p)-1]
	if !isField(last) {
		return false
	}
	switch {
	case stringMaps[last.Field]:
		return true
	case len(p) == 1 && topStringMaps[last.Field]:
		return true
	case kind == "Service" && len(p) == 2 && p[0].Field == "spec" && last.Field == "selector":
		return true
	}
	return false
}

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
