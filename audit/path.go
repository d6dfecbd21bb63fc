package audit

import (
	"encoding/json"
	"strings"
)

// Path is a field path into an object, step by step: the structure of a
// structured-merge-diff path without depending on that library.
type Path []Step

// Step is one element of a Path. Exactly one of its forms is set.
type Step struct {
	// Field is a struct field or a map key.
	Field string
	// Key selects a list item by its key fields, such as name: "app".
	Key map[string]any
	// Value selects an item of a set (a list of scalars).
	Value any
	// Index selects a list item by position (atomic lists).
	Index int

	kind stepKind
}

type stepKind int

const (
	fieldStep stepKind = iota
	keyStep
	valueStep
	indexStep
)

// FieldStep, KeyStep, ValueStep and IndexStep build the steps of a Path.
func FieldStep(name string) Step         { return Step{Field: name, kind: fieldStep} }
func KeyStep(key map[string]any) Step    { return Step{Key: key, kind: keyStep} }
func ValueStep(v any) Step               { return Step{Value: v, kind: valueStep} }
func IndexStep(i int) Step               { return Step{Index: i, kind: indexStep} }
func (s Step) matchesItem(item any) bool { return s.kind == keyStep && keyMatches(s.Key, item) }

// keyMatches reports whether a list item has every key field of key.
func keyMatches(key map[string]any, item any) bool {
	m, ok := item.(map[string]any)
	if !ok || len(key) == 0 {
		return false
	}
	for k, v := range key {
		if !sameJSON(m[k], v) {
			return false
		}
	}
	return true
}

// sameJSON compares two values as JSON, so that int64(80) from a path and
// float64(80) from a decoded body are equal.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// pointerTokens splits an RFC 6901 JSON pointer.
func pointerTokens(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return parts
}
