package scanner

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/calricon/driftscan/classify"
)

// owned is one managedFields entry with its field set parsed.
type owned struct {
	entry classify.Entry
	set   *fieldpath.Set
}

// ownership parses the managedFields of a live object as decoded from its
// page (obj is its content), the way unstructured's GetManagedFields and
// fieldpath's Set.FromJSON would, without their JSON round trip: each
// entry's fieldsV1 is read from the decoded map, not encoded again and
// parsed anew. Malformed entries make no owners, as GetManagedFields
// returns none; an entry without fieldsV1 owns nothing.
// https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management
func ownership(obj map[string]any) ([]owned, error) {
	md, _ := obj["metadata"].(map[string]any)
	items, _ := md["managedFields"].([]any)
	out := make([]owned, 0, len(items))
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, nil
		}
		e, ok := entryOf(m)
		if !ok {
			return nil, nil
		}
		fields, present := m["fieldsV1"]
		if !present || fields == nil {
			continue
		}
		set, err := fieldSet(fields)
		if err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		out = append(out, owned{entry: e, set: set})
	}
	return out, nil
}

// entryOf reads what classify needs of one managedFields entry; false when
// a field has the wrong type.
func entryOf(m map[string]any) (classify.Entry, bool) {
	var e classify.Entry
	var ok [4]bool
	e.Manager, ok[0] = stringField(m, "manager")
	e.Operation, ok[1] = stringField(m, "operation")
	e.Subresource, ok[2] = stringField(m, "subresource")
	var at string
	at, ok[3] = stringField(m, "time")
	if ok != [4]bool{true, true, true, true} {
		return e, false
	}
	if at != "" {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return e, false
		}
		e.Time = t.Local() // as metav1.Time decodes it
	}
	return e, true
}

// stringField is m[key] as a string, "" when absent or null; false when it
// is something else.
func stringField(m map[string]any, key string) (string, bool) {
	switch v := m[key].(type) {
	case nil:
		return "", true
	case string:
		return v, true
	}
	return "", false
}

// fieldSet is fieldpath's readIterV1 on a decoded fieldsV1 node: each key
// is a path element, "." marks the node itself as a member, and a node with
// no children is a member.
func fieldSet(node any) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	if node == nil {
		return s, nil
	}
	m, ok := node.(map[string]any)
	if !ok {
		return nil, errWantObject
	}
	return s, fillSet(s, m)
}

var errWantObject = errors.New("fieldsV1: want an object")

// fillSet adds the paths of the fieldsV1 node m to s.
func fillSet(s *fieldpath.Set, m map[string]any) error {
	for key, v := range m {
		if key == "." {
			continue
		}
		var pe fieldpath.PathElement
		if strings.HasPrefix(key, "f:") {
			name := key[2:] // DeserializePathElement's answer, without its copy of key
			pe.FieldName = &name
		} else {
			var err error
			pe, err = fieldpath.DeserializePathElement(key)
			if errors.Is(err, fieldpath.ErrUnknownPathElementType) {
				continue // as upstream: a newer kind of element is dropped
			}
			if err != nil {
				return fmt.Errorf("parsing key as path element: %w", err)
			}
		}
		member := true
		switch sub := v.(type) {
		case nil:
		case map[string]any:
			if hasChildren(sub) {
				if err := fillSet(s.Children.Descend(pe), sub); err != nil {
					return err
				}
				_, member = sub["."]
			}
		default:
			return errWantObject
		}
		if member {
			s.Members.Insert(pe)
		}
	}
	return nil
}

// hasChildren reports whether the fieldsV1 node m has a key other than
// "." that fillSet does not drop: a malformed one is an error there.
func hasChildren(m map[string]any) bool {
	for key := range m {
		if key == "." {
			continue
		}
		unknown := len(key) >= 2 && key[1] == ':' && strings.IndexByte("fkvi", key[0]) < 0
		if !unknown {
			return true
		}
	}
	return false
}

// ownerOf returns the entry that owns path: the one whose set has it, else
// one that owns a field under it (a struct node is owned through its
// leaves). When several own pieces of it, the newest wins. nil when none.
func ownerOf(owners []owned, path fieldpath.Path) *classify.Entry {
	var best *classify.Entry
	pick := func(e classify.Entry) {
		if best == nil || e.Time.After(best.Time) {
			e := e
			best = &e
		}
	}
	for _, o := range owners {
		if o.set.Has(path) {
			pick(o.entry)
		}
	}
	if best != nil {
		return best
	}
	for _, o := range owners {
		if sub := descend(o.set, path); sub != nil && !sub.Empty() {
			pick(o.entry)
		}
	}
	return best
}

// descend returns the part of s under path.
func descend(s *fieldpath.Set, path fieldpath.Path) *fieldpath.Set {
	for _, pe := range path {
		child, ok := s.Children.Get(pe)
		if !ok {
			return nil
		}
		s = child
	}
	return s
}
