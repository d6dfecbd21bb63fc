package audit

import (
	"encoding/json"
	"strconv"
)

// effect is what a request body does to one path.
type effect int

const (
	untouched effect = iota // the body leaves the path alone
	sets                    // the body writes the path (or overwrites a parent with a value that has it)
	removes                 // the body removes the path (or overwrites a parent with one that lacks it)
	unclear                 // no body, or one whose effect cannot be told without the object it applied to
)

// bodyEffect tells what a request's body does to path p. create and update
// send the whole object: a path the body lacks is removed. patch sends a
// merge, strategic merge or apply patch (an object) or a JSON patch (an
// array); the audit log does not record which, so where they differ (a list
// item the patch lacks: kept by a strategic merge, dropped by a merge
// patch) the effect is unclear.
func bodyEffect(verb string, body []byte, p Path) effect {
	if body == nil {
		return unclear
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return unclear
	}
	return decodedEffect(verb, v, p)
}

// effectOn is bodyEffect of the event's request body, decoded once however
// many findings ask.
func (ev *Event) effectOn(p Path) effect {
	if ev.Body == nil {
		return unclear
	}
	ev.decodeOnce.Do(func() {
		if json.Unmarshal(ev.Body, &ev.decoded) != nil {
			ev.decoded = nil
		}
	})
	if ev.decoded == nil {
		return unclear
	}
	return decodedEffect(ev.Verb, ev.decoded, p)
}

// decodedEffect is bodyEffect of a decoded body.
func decodedEffect(verb string, v any, p Path) effect {
	if ops, ok := v.([]any); ok {
		return jsonPatchEffect(ops, p)
	}
	full := verb == "create" || verb == "update"
	return walk(v, p, full, nil)
}

// walk follows p into v. full says v replaces what it lands on whole (an
// object of create or update, a JSON patch value). list is where v was
// found, for the strategic merge patch directives kept beside a list
// ($setElementOrder, $deleteFromPrimitiveList).
func walk(v any, p Path, full bool, list *listContext) effect {
	if len(p) == 0 {
		if v == nil {
			return removes // a null in a merge patch deletes
		}
		return sets
	}
	if v == nil {
		return removes // a parent set to null
	}
	st := p[0]
	switch st.kind {
	case fieldStep:
		m, ok := v.(map[string]any)
		if !ok {
			return sets // the parent overwritten with something else
		}
		child, has := m[st.Field]
		if has {
			if child == nil {
				return removes
			}
			return walk(child, p[1:], full, &listContext{parent: m, field: st.Field})
		}
		if full || m["$patch"] == "replace" || m["$patch"] == "delete" || !retained(m, st.Field) {
			return removes
		}
		if len(p) > 1 && p[1].kind == valueStep && deletesValue(m, st.Field, p[1].Value) {
			return removes
		}
		return untouched
	case keyStep, indexStep, valueStep:
		items, ok := v.([]any)
		if !ok {
			return sets
		}
		return walkList(items, p, full, list)
	}
	return unclear
}

// listContext is the map a list was found in and its key.
type listContext struct {
	parent map[string]any
	field  string
}

// smp reports whether the list is part of a strategic merge patch: its
// parent carries an order or delete directive for it.
func (l *listContext) smp() bool {
	if l == nil {
		return false
	}
	_, order := l.parent["$setElementOrder/"+l.field]
	_, del := l.parent["$deleteFromPrimitiveList/"+l.field]
	return order || del
}

func walkList(items []any, p Path, full bool, list *listContext) effect {
	st := p[0]
	switch st.kind {
	case keyStep:
		for _, it := range items {
			if st.matchesItem(it) {
				if m, ok := it.(map[string]any); ok && m["$patch"] == "delete" {
					return removes
				}
				return walk(it, p[1:], full, nil)
			}
		}
	case valueStep:
		for _, it := range items {
			if sameJSON(it, st.Value) {
				return walk(it, p[1:], full, nil)
			}
		}
		if list != nil && deletesValue(list.parent, list.field, st.Value) {
			return removes
		}
	case indexStep:
		if st.Index < len(items) {
			return walk(items[st.Index], p[1:], full, nil)
		}
	}
	switch {
	case full:
		return removes
	case replacesList(items):
		return removes
	case list.smp():
		return untouched
	}
	return unclear
}

// deletesValue reports whether a strategic merge patch map deletes v from
// its list field.
func deletesValue(m map[string]any, field string, v any) bool {
	dels, _ := m["$deleteFromPrimitiveList/"+field].([]any)
	for _, d := range dels {
		if sameJSON(d, v) {
			return true
		}
	}
	return false
}

// replacesList reports whether a strategic merge patch list replaces the
// live one whole ({"$patch": "replace"} among its items).
func replacesList(items []any) bool {
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["$patch"] == "replace" {
			return true
		}
	}
	return false
}

// retained reports whether a strategic merge patch's $retainKeys (when
// present) keeps field.
func retained(m map[string]any, field string) bool {
	keys, ok := m["$retainKeys"].([]any)
	if !ok {
		return true
	}
	for _, k := range keys {
		if k == field {
			return true
		}
	}
	return false
}

// jsonPatchEffect applies the operations of a JSON patch (RFC 6902) to p in
// order; the last operation that touches p decides.
func jsonPatchEffect(ops []any, p Path) effect {
	out := untouched
	for _, o := range ops {
		op, ok := o.(map[string]any)
		if !ok {
			return unclear
		}
		name, _ := op["op"].(string)
		ptr, _ := op["path"].(string)
		if e := opEffect(name, pointerTokens(ptr), op["value"], p); e != untouched {
			out = e
		}
	}
	return out
}

// opEffect is the effect of one JSON patch operation on p.
func opEffect(op string, tokens []string, value any, p Path) effect {
	if op == "test" {
		return untouched
	}
	for i, tok := range tokens {
		if i == len(p) {
			// The operation is below p: it writes part of the field.
			if op == "remove" {
				return unclear
			}
			return sets
		}
		st := p[i]
		last := i == len(tokens)-1
		switch st.kind {
		case fieldStep:
			if tok != st.Field {
				return untouched
			}
		case indexStep:
			if tok != strconv.Itoa(st.Index) {
				return untouched
			}
		case keyStep, valueStep:
			// A pointer names list items by position, which the path does
			// not know; an item added whole can still be recognised by its
			// value.
			if tok != "-" && !isIndex(tok) {
				return untouched
			}
			if !last || (op != "add" && op != "replace") {
				return unclear
			}
			if (st.kind == keyStep && st.matchesItem(value)) || (st.kind == valueStep && sameJSON(value, st.Value)) {
				return walk(value, p[i+1:], true, nil)
			}
			if op == "add" {
				return untouched // another item added
			}
			return unclear // an item replaced at a position the path does not know
		}
	}
	// The operation targets p itself or a parent of it.
	switch op {
	case "remove":
		return removes
	case "add", "replace":
		return walk(value, p[len(tokens):], true, nil)
	}
	return unclear // move, copy
}

func isIndex(tok string) bool {
	_, err := strconv.Atoi(tok)
	return err == nil
}
