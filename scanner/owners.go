package scanner

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	jsoniter "github.com/json-iterator/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	var failed error // the first entry whose fieldsV1 is no field set
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != ']'; i = skipSpace(raw, i) {
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		o, end, err := readEntry(raw, i, sets)
		switch {
		case err == errNotPlain:
			return ownershipSlow(managedFields, sets)
		case err == errMalformed:
			return nil, nil // after a set that failed too: GetManagedFields gives none
		case err != nil:
			if failed == nil {
				failed = fmt.Errorf("managedFields of %s: %w", o.entry.Manager, err)
			}
		case o.set != nil:
			out = append(out, o)
		}
		i = end
	}
	if failed != nil {
		return nil, failed
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

// errMalformed is a fieldsV1 that the field set's reader could not read
// to its end as JSON: the managedFields are malformed and make no owners.
var errMalformed = errors.New("malformed")

// errNotPlain is a managedFields entry with a key that is not plain ASCII
// (an escape, or one encoding/json folds as Unicode does): ownershipSlow
// reads the list.
var errNotPlain = errors.New("a key that is not plain ASCII")

// readEntry reads the managedFields entry at raw[i] and returns the index
// after it, as encoding/json decodes it into a ManagedFieldsEntry (which
// GetManagedFields does): keys matched regardless of ASCII case, the last
// of a key winning, unknown keys passed over, a null entry an empty one.
// The error is errMalformed when the entry is (not an object, a field of
// the wrong type, a time that is not RFC 3339), as that decoding fails on
// it; errNotPlain for a key readEntry does not read itself; else the
// field set's (end is then valid). Its set is nil when it has no fieldsV1.
func readEntry(raw []byte, i int, sets *fieldSets) (o owned, end int, err error) {
	switch raw[i] {
	case 'n':
		return o, skipValue(raw, i), nil
	case '{':
	default:
		return o, 0, errMalformed
	}
	var at, ignored string
	var fields []byte // the last fieldsV1's JSON, as encoding/json keeps the last
	hasTime, slow, ok := false, false, true
	end = eachField(raw, i, func(key []byte, v int) (int, bool) {
		if !plainASCII(key) {
			slow = true
			return 0, false
		}
		var dst *string
		switch {
		case asciiFold(key, "manager"):
			dst = &o.entry.Manager
		case asciiFold(key, "operation"):
			dst = &o.entry.Operation
		case asciiFold(key, "subresource"):
			dst = &o.entry.Subresource
		case asciiFold(key, "apiVersion"), asciiFold(key, "fieldsType"):
			dst = &ignored
		case asciiFold(key, "time"):
			if hasTime = raw[v] != 'n'; !hasTime {
				return skipValue(raw, v), true // a null time is none
			}
			dst = &at
		case asciiFold(key, "fieldsV1"):
			end := skipValue(raw, v)
			if fields = raw[v:end]; raw[v] == 'n' {
				fields = nil
			}
			return end, true
		default:
			return skipValue(raw, v), true
		}
		return entryString(raw, v, dst)
	}, &ok)
	switch {
	case slow:
		return o, 0, errNotPlain
	case !ok:
		return o, 0, errMalformed
	}
	if hasTime {
		t, perr := time.Parse(time.RFC3339, at)
		if perr != nil {
			return o, 0, errMalformed
		}
		o.entry.Time = t.Local() // as metav1.Time decodes it
	}
	if fields != nil {
		o.set, err = sets.parse(fields)
	}
	return o, end, err
}

// ownershipSlow is ownership through encoding/json and the
// ManagedFieldsEntry type, for managedFields whose keys readEntry does not
// read itself.
func ownershipSlow(managedFields []byte, sets *fieldSets) ([]owned, error) {
	var entries []metav1.ManagedFieldsEntry
	if json.Unmarshal(managedFields, &entries) != nil {
		return nil, nil
	}
	var out []owned
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		set, err := sets.parse(e.FieldsV1.GetRawBytes())
		if err == errMalformed {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		o := owned{entry: classify.Entry{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource}, set: set}
		if e.Time != nil {
			o.entry.Time = e.Time.Time
		}
		out = append(out, o)
	}
	return out, nil
}

// entryString sets *dst to the JSON string at raw[v] as encoding/json
// reads it; a null leaves it. false for any other value.
func entryString(raw []byte, v int, dst *string) (int, bool) {
	if end, ok := headString(raw, v, dst); ok {
		return end, true
	}
	end := skipValue(raw, v)
	if raw[v] != '"' {
		return 0, false
	}
	return end, json.Unmarshal(raw[v:end], dst) == nil // escapes, or not UTF-8
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
