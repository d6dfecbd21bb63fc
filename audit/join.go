package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/calricon/driftscan/report"
)

// Entry is the managedFields entry that owns a finding's path.
type Entry struct {
	Manager     string
	Operation   string
	Subresource string
	// Time is the entry's time: the second of the manager's newest write
	// that changed the object.
	Time time.Time
}

// Query describes one finding to attribute.
type Query struct {
	Object ObjectRef
	Path   Path
	Type   report.Type
	// Owner is the managedFields entry that owns Path live; nil when none does.
	Owner *Entry
	// Injected: an Added field that no manager owns and that is a new key
	// (a container, an annotation): it was set at admission.
	Injected bool
	// Webhooks are the MutatingWebhookConfigurations that match the object.
	Webhooks []string
	// AppliedAt is the time of the newest managedFields entry of an
	// applier (a manager that stands for Git); zero when there is none.
	AppliedAt time.Time
	// IsApplier says whether a field manager stands for Git.
	IsApplier func(manager string) bool
	// Scale: Path is a workload's spec.replicas, which a request through
	// the scale subresource writes as the Scale's spec.replicas (and the
	// API server records under no manager when no manager owned it).
	Scale bool
}

// Attribute names who made a finding, from the events on its object:
//
//   - a path a manager owns: the request by that field manager, through the
//     same subresource, whose time span holds the managedFields entry's
//     second (the API server stamps the entry while it handles the
//     request, between requestReceivedTimestamp and stageTimestamp); with
//     request bodies, only requests that wrote the path;
//   - a field injected at admission: the request during which a matching
//     webhook's logged patch added it; its user only sent the request;
//   - a removed path (no entry at all), or a changed one nobody owns: the
//     requests after the applier's last write whose bodies remove (or set)
//     the path; without bodies every such request is a candidate.
//
// Several users in the same second make a candidate verdict naming them
// all; nothing found is a none verdict that says what was looked for.
func (ix *Index) Attribute(q Query) *report.Attribution {
	switch {
	case q.Owner != nil:
		return ix.byOwner(q)
	case q.Injected:
		return ix.byWebhook(q)
	default:
		return ix.byBody(q)
	}
}

// managerMatch says how an event's field manager matches an entry's.
type managerMatch int

const (
	noMatch   managerMatch = iota
	weakMatch              // the event has no request URI: only its user agent is known
	sameManager
)

func matchManager(ev *Event, manager string) managerMatch {
	switch {
	case ev.ManagerKnown && ev.Manager == manager:
		return sameManager
	case ev.ManagerKnown:
		return noMatch
	case ev.Manager == manager || strings.HasPrefix(manager, ev.Manager+"-"):
		return weakMatch
	}
	return noMatch
}

// inSecond reports whether the entry's second lies in the event's time span.
func inSecond(ev *Event, sec time.Time) bool {
	return !sec.Before(ev.Received.Truncate(time.Second)) && !sec.After(ev.Completed.Truncate(time.Second))
}

func (ix *Index) byOwner(q Query) *report.Attribution {
	o := q.Owner
	sec := o.Time.Truncate(time.Second)
	var same, inSec, unnamed []*Event
	weak := false
	for _, ev := range ix.Events(q.Object) {
		if ev.Object.Subresource != o.Subresource {
			continue
		}
		m := matchManager(ev, o.Manager)
		if m == noMatch {
			if !ev.ManagerKnown && !o.Time.IsZero() && inSecond(ev, sec) {
				unnamed = append(unnamed, ev)
			}
			continue
		}
		same = append(same, ev)
		if inSecond(ev, sec) {
			inSec = append(inSec, ev)
			weak = weak || m == weakMatch
		}
	}
	what := "field manager " + o.Manager
	if o.Subresource != "" {
		what += " through the " + o.Subresource + " subresource"
	}
	if o.Time.IsZero() {
		return ix.byNewest(q, same, what)
	}
	stamp := sec.UTC().Format(time.RFC3339)
	if len(inSec) == 0 && len(unnamed) > 0 {
		return ix.verdict(unnamed, false, fmt.Sprintf("the audit entries carry no request URI, and the user agent does not name %s either: these requests wrote the object at %s", what, stamp))
	}
	if len(inSec) == 0 {
		return none(fmt.Sprintf("no request by %s on this object at %s in the audit log read (%s)", what, stamp, ix.coverage()))
	}
	touch := filterEvents(inSec, func(ev *Event) bool {
		e := ev.effectOn(q.Path)
		return e == sets || e == unclear
	})
	if len(touch) == 0 {
		// Every request in that second left the field alone: the field is
		// older than the entry's time, which the manager's newest write moved.
		for i := len(same) - 1; i >= 0; i-- {
			ev := same[i]
			if ev.Completed.Truncate(time.Second).Before(sec) && ev.effectOn(q.Path) == sets {
				return ix.verdict([]*Event{ev}, false, fmt.Sprintf("the newest request by %s (%s) did not write this field; this is its newest earlier request that did", what, stamp))
			}
		}
		return ix.verdict(inSec, false, fmt.Sprintf("the requests by %s at %s did not write this field, and no earlier one that did is in the audit log read", what, stamp))
	}
	var reason string
	switch {
	case weak:
		reason = fmt.Sprintf("the audit entries carry no request URI, so %s could only be matched by the user agent", what)
	case len(users(touch)) > 1:
		reason = fmt.Sprintf("%d users wrote this object as %s in the same second (%s): which one changed this field cannot be told", len(users(touch)), what, stamp)
	}
	return ix.verdict(touch, reason == "", reason)
}

// byNewest attributes a path owned by an entry without a time (the API
// server keeps none for writes through the scale subresource, whose
// managedFields it converts from the Scale object): the newest request by
// that manager whose body wrote the path made the live value, since any
// later write of the path by that manager would be newer.
func (ix *Index) byNewest(q Query, same []*Event, what string) *report.Attribution {
	const noTime = "the API server recorded no time for this managedFields entry"
	for i := len(same) - 1; i >= 0; i-- {
		if same[i].effectOn(q.Path) == sets {
			a := ix.verdict(same[i:i+1], true, "")
			a.Reason = noTime + "; this is the newest request by " + what + " whose body wrote this field"
			return a
		}
	}
	if len(same) > 0 {
		return ix.verdict(same[len(same)-1:], false, noTime+", and the audit log has no request body to show which request by "+what+" wrote this field: this is the newest")
	}
	return none(fmt.Sprintf("%s, and no request by %s on this object is in the audit log read (%s)", noTime, what, ix.coverage()))
}

func (ix *Index) byWebhook(q Query) *report.Attribution {
	evs := ix.Events(q.Object)
	var mutated *Event
	var config string
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if ev.Object.Subresource != "" {
			continue
		}
		for _, wm := range ev.Webhooks {
			if len(q.Webhooks) > 0 && !slices.Contains(q.Webhooks, wm.Configuration) {
				continue
			}
			if wm.Patch != nil && patchEffect(wm.Patch, q.Path) == sets {
				a := ix.verdict([]*Event{ev}, true, "")
				a.Requester = true
				a.Reason = fmt.Sprintf("MutatingWebhookConfiguration %s (webhook %s) injected this field at admission of this request: %s only sent the request", wm.Configuration, wm.Webhook, ev.User)
				return a
			}
			if wm.Patch == nil && mutated == nil {
				mutated, config = ev, wm.Configuration
			}
		}
	}
	if mutated != nil {
		a := ix.verdict([]*Event{mutated}, false, "")
		a.Requester = true
		a.Reason = fmt.Sprintf("MutatingWebhookConfiguration %s changed the object at admission of this request, and the audit log has no patch (Metadata level) to show it injected this field: %s only sent the request", config, mutated.User)
		return a
	}
	return none(fmt.Sprintf("no request on this object in the audit log read was changed by a mutating webhook (%s)", ix.coverage()))
}

// presence tracks whether a field is there while requests are replayed.
type presence int

const (
	present presence = iota
	absent
	maybe
)

func (ix *Index) byBody(q Query) *report.Attribution {
	after := q.AppliedAt.Truncate(time.Second)
	var authors []*Event
	sure := false
	state := present // the applier wrote it
	bodiless := 0
	for _, ev := range ix.Events(q.Object) {
		if ev.Object.Subresource != "" && (!q.Scale || ev.Object.Subresource != "scale") || ev.Completed.Before(after) {
			continue
		}
		if q.IsApplier != nil && ev.ManagerKnown && q.IsApplier(ev.Manager) {
			continue
		}
		e := ev.effectOn(q.Path)
		if ev.Body == nil {
			bodiless++
		}
		if q.Type != report.TypeRemoved {
			// A changed value nobody owns: the last request that set it.
			switch e {
			case sets:
				authors, sure = []*Event{ev}, true
			case unclear:
				authors, sure = append(authors, ev), false
			case removes:
				authors, sure = nil, false
			}
			continue
		}
		switch {
		case e == sets:
			authors, sure, state = nil, false, present
		case e == removes && state == present:
			authors, sure, state = []*Event{ev}, true, absent
		case e == removes && state == maybe:
			authors, state = append(authors, ev), absent
		case e == unclear && state != absent:
			authors, sure, state = append(authors, ev), false, maybe
		}
	}
	since := "the applier's last write (" + after.UTC().Format(time.RFC3339) + ")"
	if q.AppliedAt.IsZero() {
		since = "the start of the audit log read"
	}
	verb := "removed"
	if q.Type != report.TypeRemoved {
		verb = "set"
	}
	if len(authors) == 0 {
		return none(fmt.Sprintf("no request since %s %s this field, by its body, in the audit log read (%s)", since, verb, ix.coverage()))
	}
	if sure && len(authors) == 1 {
		return ix.verdict(authors, true, "")
	}
	reason := fmt.Sprintf("%d requests since %s may have %s this field", len(authors), since, verb)
	if bodiless > 0 {
		reason += "; the audit log has no request body (Metadata level) to tell"
	} else {
		reason += "; their bodies do not tell"
	}
	return ix.verdict(authors, false, reason)
}

// patchEffect is the effect of a webhook's JSON patch.
func patchEffect(patch []byte, p Path) effect { return bodyEffect("patch", patch, p) }

// verdict names the users of evs: one user is exact when sure, else a
// candidate; several are candidates, each with their newest event.
func (ix *Index) verdict(evs []*Event, sure bool, reason string) *report.Attribution {
	ix.markMatched(evs...)
	newest := map[string]*Event{}
	var order []string
	for _, ev := range evs {
		if _, ok := newest[ev.User]; !ok {
			order = append(order, ev.User)
		}
		if n := newest[ev.User]; n == nil || !ev.Completed.Before(n.Completed) {
			newest[ev.User] = ev
		}
	}
	if len(order) == 1 {
		a := attributionOf(newest[order[0]])
		a.Confidence = report.ConfidenceExact
		if !sure {
			a.Confidence, a.Reason = report.ConfidenceCandidate, reason
		}
		return a
	}
	a := &report.Attribution{Confidence: report.ConfidenceCandidate, Reason: reason}
	for _, u := range order {
		c := attributionOf(newest[u])
		c.Confidence = report.ConfidenceCandidate
		a.Candidates = append(a.Candidates, *c)
	}
	return a
}

func attributionOf(ev *Event) *report.Attribution {
	a := &report.Attribution{
		User: ev.User, Groups: ev.Groups, ServiceAccount: serviceAccount(ev.User), ImpersonatedBy: ev.ImpersonatedBy,
		UserAgent: ev.UserAgent, SourceIPs: ev.SourceIPs, AuditID: ev.AuditID, Verb: ev.Verb,
		Subresource: ev.Object.Subresource,
		Time:        ev.Completed.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), Source: ev.Source,
	}
	if ev.ManagerKnown {
		a.FieldManager = ev.Manager
	}
	return a
}

func none(reason string) *report.Attribution {
	return &report.Attribution{Confidence: report.ConfidenceNone, Reason: reason}
}

// coverage says what time the audit log read spans.
func (ix *Index) coverage() string {
	if ix.from.IsZero() {
		return "it holds no events"
	}
	return "it covers " + ix.from.UTC().Format(time.RFC3339) + " to " + ix.to.UTC().Format(time.RFC3339)
}

func users(evs []*Event) map[string]bool {
	out := map[string]bool{}
	for _, ev := range evs {
		out[ev.User] = true
	}
	return out
}

func filterEvents(evs []*Event, keep func(*Event) bool) []*Event {
	var out []*Event
	for _, ev := range evs {
		if keep(ev) {
			out = append(out, ev)
		}
	}
	return out
}
