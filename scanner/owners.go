package scanner

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	jsoniter "github.com/json-iterator/go"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/calricon/driftscan/classify"
)

// owned is one managedFields entry with its field set parsed.
type owned struct {
	entry classify.Entry
	set   *fieldpath.Set
}

// ownership parses a live object's managedFields, the JSON decodeLive
// kept of them, as unstructured's GetManagedFields and fieldpath's
// Set.FromJSON would, without their round trips: GetManagedFields encodes
// every entry again to decode it into a ManagedFieldsEntry, and FromJSON
// takes a fresh 4 KiB buffer for each. Malformed entries make no owners,
// as GetManagedFields returns none; an entry without fieldsV1 owns
// nothing. Field sets come from sets when it has parsed the same fieldsV1
// before (sets may be nil: every set is parsed).
// https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management
func ownership(managedFields []byte, sets *fieldSets) ([]owned, error) {
	// managedFields is valid JSON (the page's reader checked the item), so
	// decode.go's readers step through it: jsoniter's Skip of each
	// fieldsV1 read every key in it as a new string, 79,000 of them in a
	// cold 20k scan, only to find where it ends.
	raw := managedFields
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, nil
	}
	var out []owned
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != ']'; i = skipSpace(raw, i) {
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		o, end, ok, err := readEntry(raw, i, sets)
		if err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", o.entry.Manager, err)
		}
		if !ok {
			return nil, nil
		}
		if o.set != nil {
			out = append(out, o)
		}
		i = end
	}
	return out, nil
}

// fieldSets keeps the field sets a scan has parsed, by their fieldsV1
// JSON, and hands one out again for the same JSON: objects of one shape
// that one manager wrote (the Deployments of a chart, the status every
// controller writes) hold the same fieldsV1, and parsing it was 7% of a
// cold scan's CPU. The sets it hands out are shared and never changed.
// It keeps at most fieldSetsRoom bytes of fieldsV1, then parses the rest
// anew, so an estate of all-different objects costs it a bounded heap.
type fieldSets struct {
	mu   sync.RWMutex
	sets map[string]*fieldpath.Set
	room int
}

// fieldSetsRoom is how many bytes of fieldsV1 a scan keeps parsed: some
// thousands of entries, a few MiB of heap with their sets.
const fieldSetsRoom = 2 << 20

func newFieldSets() *fieldSets {
	return &fieldSets{sets: map[string]*fieldpath.Set{}, room: fieldSetsRoom}
}

// parse returns the field set of the fieldsV1 JSON raw.
func (fs *fieldSets) parse(raw []byte) (*fieldpath.Set, error) {
	if fs != nil {
		fs.mu.RLock()
		set, ok := fs.sets[string(raw)]
		fs.mu.RUnlock()
		if ok {
			return set, nil
		}
	}
	iter := liveJSON.BorrowIterator(raw)
	defer liveJSON.ReturnIterator(iter)
	set := &fieldpath.Set{}
	if err := readFieldSet(iter, set); err != nil {
		return nil, err
	}
	if iter.Error != nil && iter.Error != io.EOF {
		return nil, errMalformed
	}
	if fs != nil {
		fs.mu.Lock()
		if _, ok := fs.sets[string(raw)]; !ok && fs.room >= len(raw) {
			fs.sets[string(raw)] = set
			fs.room -= len(raw)
		}
		fs.mu.Unlock()
	}
	return set, nil
}

// errMalformed is a fieldsV1 that is not JSON, which Skip let through:
// the managedFields are malformed and make no owners.
var errMalformed = errors.New("malformed")

// readEntry reads the managedFields entry at raw[i] and returns the index
// after it: false when it is malformed (not an object, a field of the
// wrong type, a time that is not RFC 3339), as GetManagedFields' decoding
// fails on it; its set is nil when it has no fieldsV1.
func readEntry(raw []byte, i int, sets *fieldSets) (o owned, end int, ok bool, err error) {
	if raw[i] != '{' {
		return o, 0, false, nil
	}
	var at string
	ok = true
	end = eachField(raw, i, func(key []byte, v int) (int, bool) {
		var dst *string
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(jsonKey(key)) // "manag\u0065r" is manager
		}
		switch string(key) {
		case "manager":
			dst = &o.entry.Manager
		case "operation":
			dst = &o.entry.Operation
		case "subresource":
			dst = &o.entry.Subresource
		case "time":
			dst = &at
		case "fieldsV1":
			end := skipValue(raw, v)
			if raw[v] == 'n' {
				return end, true
			}
			o.set, err = sets.parse(raw[v:end])
			if err == errMalformed {
				err, ok = nil, false
			}
			return end, err == nil && ok
		default:
			return skipValue(raw, v), true
		}
		end, fine := entryString(raw, v, dst)
		ok = fine
		return end, fine
	}, &ok)
	if err != nil || !ok {
		return o, 0, ok, err
	}
	if at != "" {
		t, perr := time.Parse(time.RFC3339, at)
		if perr != nil {
			return o, 0, false, nil
		}
		o.entry.Time = t.Local() // as metav1.Time decodes it
	}
	return o, end, true, nil
}

// entryString sets *dst to the JSON string at raw[v], escapes read as
// JSON reads them; a null leaves it. false for any other value.
func entryString(raw []byte, v int, dst *string) (int, bool) {
	if end, ok := headString(raw, v, dst); ok {
		return end, true
	}
	end := skipValue(raw, v)
	if raw[v] != '"' {
		return 0, false
	}
	return end, json.Unmarshal(raw[v:end], dst) == nil
}

var errWantObject = errors.New("fieldsV1: want an object")

// readFieldSet is fieldpath's readIterV1, reading a fieldsV1 node into s:
// each key is a path element, "." marks the node itself as a member of
// its parent, and a node with no children is a member. It reports whether
// the node is a member.
func readFieldSet(iter *jsoniter.Iterator, s *fieldpath.Set) error {
	_, err := readFieldNode(iter, s)
	return err
}

func readFieldNode(iter *jsoniter.Iterator, s *fieldpath.Set) (member bool, err error) {
	switch iter.WhatIsNext() {
	case jsoniter.NilValue:
		iter.Skip()
		return true, nil
	case jsoniter.ObjectValue:
	default:
		iter.Skip()
		return false, errWantObject
	}
	children := false
	iter.ReadMapCB(func(iter *jsoniter.Iterator, key string) bool {
		if key == "." {
			member = true
			iter.Skip()
			return true
		}
		var pe fieldpath.PathElement
		if strings.HasPrefix(key, "f:") {
			name := key[2:] // DeserializePathElement's answer, without its copy of key
			pe.FieldName = &name
		} else {
			pe, err = fieldpath.DeserializePathElement(key)
			if errors.Is(err, fieldpath.ErrUnknownPathElementType) {
				err = nil
				iter.Skip() // as upstream: a newer kind of element is dropped
				return true
			}
			if err != nil {
				err = fmt.Errorf("parsing key as path element: %w", err)
				return false
			}
		}
		sub := &fieldpath.Set{}
		var subMember bool
		if subMember, err = readFieldNode(iter, sub); err != nil {
			return false
		}
		if subMember {
			s.Members.Insert(pe)
			children = true
		}
		if !sub.Empty() {
			*s.Children.Descend(pe) = *sub
			children = true
		}
		return true
	})
	if err != nil {
		return false, err
	}
	// A node without children is a member of its parent.
	return member || !children, nil
}

// ownerOf returns the entry that owns path: the one whose set has it, else
// one that owns a field under it (a struct node is owned through its
// leaves). When several own pieces of it, the newest wins. nil when none.
//
// Most changes a scan meets are defaults nobody owns, so each set is
// walked once for both questions (owns): a cold 1,000-object scan spent a
// fifth of its compare asking them in two walks.
func ownerOf(owners []owned, path fieldpath.Path) *classify.Entry {
	var has, below *classify.Entry // the newest of each kind of owner
	for i := range owners {
		h, b := owns(owners[i].set, path)
		e := &owners[i].entry
		switch {
		case h && (has == nil || e.Time.After(has.Time)):
			has = e
		case !h && b && (below == nil || e.Time.After(below.Time)):
			below = e
		}
	}
	best := cmp.Or(has, below)
	if best == nil {
		return nil
	}
	e := *best // the caller's to keep
	return &e
}

// owns reports whether s has path (Set.Has) and whether it has anything
// under it (descend), in one walk to path's parent.
func owns(s *fieldpath.Set, path fieldpath.Path) (has, below bool) {
	if len(path) == 0 {
		return false, !s.Empty()
	}
	parent := descend(s, path[:len(path)-1])
	if parent == nil {
		return false, false
	}
	last := path[len(path)-1]
	if sub, ok := parent.Children.Get(last); ok {
		below = !sub.Empty()
	}
	return parent.Members.Has(last), below
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
