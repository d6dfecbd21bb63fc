package scanner

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/calricon/driftscan/classify"
)

// owned is one managedFields entry with its field set parsed.
type owned struct {
	entry classify.Entry
	set   *fieldpath.Set
}

// ownership parses a live object's managedFields.
// https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management
func ownership(entries []metav1.ManagedFieldsEntry) ([]owned, error) {
	out := make([]owned, 0, len(entries))
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		ce := classify.Entry{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource}
		if e.Time != nil {
			ce.Time = e.Time.Time
		}
		out = append(out, owned{entry: ce, set: set})
	}
	return out, nil
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
