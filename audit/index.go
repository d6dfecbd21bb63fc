package audit

import (
	"sort"
	"sync"
	"time"

	"github.com/calricon/driftscan/report"
)

// Index holds the audit events that can explain a finding, by object, in
// time order, and what reading them met. It is safe for concurrent use once
// Read has returned it.
type Index struct {
	events   map[ObjectRef][]*Event
	ids      map[string]bool
	read     int64
	kept     int64
	from, to time.Time
	warnings []string

	mu      sync.Mutex
	matched map[string]bool
}

func newIndex() *Index {
	return &Index{events: map[ObjectRef][]*Event{}, ids: map[string]bool{}, matched: map[string]bool{}}
}

// Events returns the kept events on an object (any subresource), oldest first.
func (ix *Index) Events(o ObjectRef) []*Event { return ix.events[o.object()] }

// Warnings say which input could not be read in full, and why.
func (ix *Index) Warnings() []string { return ix.warnings }

// Stats counts the events read, kept and named by an attribution so far.
func (ix *Index) Stats() report.AuditStats {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	s := report.AuditStats{Read: ix.read, Kept: ix.kept, Matched: int64(len(ix.matched))}
	if !ix.from.IsZero() {
		s.From = ix.from.UTC().Format(time.RFC3339)
		s.To = ix.to.UTC().Format(time.RFC3339)
	}
	return s
}

// saw counts one audit event read at time t.
func (ix *Index) saw(t time.Time) {
	ix.read++
	if t.IsZero() {
		return
	}
	if ix.from.IsZero() || t.Before(ix.from) {
		ix.from = t
	}
	if t.After(ix.to) {
		ix.to = t
	}
}

// add keeps ev unless keep rejects its object or an event with its audit ID
// is kept already (the same request read from a file and an export).
func (ix *Index) add(ev *Event, keep func(ObjectRef) bool, maxBody int) {
	if keep != nil && !keep(ev.Object.object()) {
		return
	}
	if ev.AuditID != "" {
		if ix.ids[ev.AuditID] {
			return
		}
		ix.ids[ev.AuditID] = true
	}
	if maxBody > 0 && len(ev.Body) > maxBody {
		ev.Body = nil
	}
	k := ev.Object.object()
	ix.events[k] = append(ix.events[k], ev)
	ix.kept++
}

// sort puts each object's events in the order they completed.
func (ix *Index) sort() {
	for _, evs := range ix.events {
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].Completed.Before(evs[j].Completed) })
	}
}

// markMatched records that an attribution names ev.
func (ix *Index) markMatched(evs ...*Event) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, ev := range evs {
		ix.matched[ev.AuditID+"\x00"+ev.Source] = true
	}
}
