package notify

import (
	"fmt"
	"slices"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// Change says why an object is told about on a channel.
type Change string

// The changes.
const (
	ChangeNew      Change = "new"
	ChangeChanged  Change = "changed"
	ChangeOpen     Change = "still open" // unchanged, past RenotifyAfter
	ChangeResolved Change = "resolved"
)

// item is one object to tell one channel about.
type item struct {
	key    Key
	app    string
	owner  string
	target string // Slack channel, "webhook", or the PagerDuty routing key's ref
	object report.Object
	// findings are the object's active findings whose class goes to this
	// channel; empty for a resolve.
	findings    []report.Finding
	fingerprint string
	change      Change
	// why says, for a resolve, why the drift is gone.
	why string
	// dedupKey is the PagerDuty incident, kept across changes.
	dedupKey string
}

// plan is what one run tells, per channel, in report order.
type plan struct {
	slack     []item
	pagerduty []item
	// skipped counts objects and channels whose drift was already told.
	skipped int
	errs    []error
}

// planner compares a report with the state.
type planner struct {
	cluster string
	cfg     config.Notify
	owners  config.Owners
	now     time.Time
	renew   time.Duration
	ownerOf func(report.App, report.Object) string
	// allApps resolves what the state holds for apps the report lacks
	// (Options.AllApps).
	allApps bool
}

// Targets of a channel an owner has no route on.
const noTarget = ""

// targetOf is where owner is told on ch, noTarget when nowhere.
func (p *planner) targetOf(ch Channel, owner config.Owner) string {
	switch ch {
	case ChannelSlack:
		switch p.cfg.Slack.Mode() {
		case config.SlackWebhook:
			return "webhook"
		case config.SlackToken:
			if owner.Slack != nil && owner.Slack.Channel != "" {
				return owner.Slack.Channel
			}
		}
	case ChannelPagerDuty:
		if r := owner.PagerDuty; r != nil {
			ref := secretRef{Env: r.RoutingKeyEnv, File: r.RoutingKeyFile}
			if ref.set() {
				return ref.String()
			}
		}
	}
	return noTarget
}

func (p *planner) plan(r *report.Report, st *State) plan {
	var out plan
	seen := map[Key]bool{}
	scanned := map[string]bool{}
	badOwner := map[string]bool{}
	add := func(ch Channel, it item) {
		if ch == ChannelSlack {
			out.slack = append(out.slack, it)
		} else {
			out.pagerduty = append(out.pagerduty, it)
		}
	}
	for _, app := range r.Apps {
		if app.Error != "" {
			// Nothing of it was compared: neither tell nor resolve.
			continue
		}
		scanned[app.Name] = true
		for _, obj := range app.Objects {
			key := KeyOf(p.cluster, app.Name, obj)
			seen[key] = true
			if obj.Status == report.StatusError {
				continue
			}
			ownerName := app.Owner
			if p.ownerOf != nil {
				if o := p.ownerOf(app, obj); o != "" {
					ownerName = o
				}
			}
			owner, known := p.owners[ownerName]
			drift := driftOf(obj)
			for _, ch := range []Channel{ChannelSlack, ChannelPagerDuty} {
				prev := st.Get(key, ch)
				routed := p.routed(ch, drift)
				if len(routed) == 0 {
					if prev != nil {
						add(ch, p.resolve(key, obj, prev, resolvedWhy(obj, len(drift) > 0)))
					}
					continue
				}
				if !known {
					if !badOwner[app.Name+"\x00"+ownerName] {
						badOwner[app.Name+"\x00"+ownerName] = true
						out.errs = append(out.errs, ownerError(app.Name, ownerName))
					}
					break
				}
				target := p.targetOf(ch, owner)
				if target == noTarget {
					continue
				}
				it := item{key: key, app: app.Name, owner: ownerName, target: target, object: obj,
					findings: routed, fingerprint: Fingerprint(routed), dedupKey: dedupKey(key)}
				switch {
				case prev == nil || prev.Target != target:
					it.change = ChangeNew
				case prev.Fingerprint != it.fingerprint:
					it.change = ChangeChanged
				case p.renew > 0 && !p.now.Before(prev.SentAt.Add(p.renew)):
					it.change = ChangeOpen
				default:
					out.skipped++
					continue
				}
				if prev != nil && prev.DedupKey != "" {
					it.dedupKey = prev.DedupKey
				}
				add(ch, it)
			}
		}
	}
	// Objects told about before that the app no longer declares, and with
	// allApps those of apps that are gone.
	inReport := map[string]bool{}
	for _, app := range r.Apps {
		inReport[app.Name] = true
	}
	for _, e := range st.Objects {
		if e.Cluster != p.cluster || seen[e.Key] || e.Group == ReminderGroup {
			continue // reminders are planned by reminders
		}
		why := "no longer in the app's desired state"
		switch {
		case scanned[e.App]:
		case p.allApps && !inReport[e.App]:
			why = "the app is no longer in the config"
		default:
			continue // not scanned this run (an error, or out of its scope)
		}
		obj := report.Object{Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
		for _, ch := range []Channel{ChannelSlack, ChannelPagerDuty} {
			if prev := e.get(ch); prev != nil {
				add(ch, p.resolve(e.Key, obj, prev, why))
			}
		}
	}
	return out
}

func ownerError(app, owner string) error {
	if owner == "" {
		return fmt.Errorf("app %q: has drift to tell but no owner", app)
	}
	return fmt.Errorf("app %q: owner %q is not in owners", app, owner)
}

func (p *planner) resolve(key Key, obj report.Object, prev *Delivery, why string) item {
	dk := prev.DedupKey
	if dk == "" {
		dk = dedupKey(key)
	}
	return item{key: key, app: key.App, owner: prev.Owner, target: prev.Target, object: obj,
		change: ChangeResolved, why: why, dedupKey: dk}
}

// routed keeps the findings whose class goes to ch.
func (p *planner) routed(ch Channel, drift []report.Finding) []report.Finding {
	var out []report.Finding
	for _, f := range drift {
		if p.cfg.Route.Sends(ch == ChannelPagerDuty, f) {
			out = append(out, f)
		}
	}
	return out
}

// Types of the findings that stand for a whole object.
const (
	typeMissing report.Type = "Missing"
	typeExtra   report.Type = "Extra"
)

// driftOf is the object's drift: its active findings, and for a Missing or
// Extra object one finding for the whole object, of class unknown, since
// nothing says who deleted or created it.
func driftOf(o report.Object) []report.Finding {
	drift := slices.Clone(o.ActiveFindings())
	switch o.Status {
	case report.StatusMissing:
		drift = append(drift, report.Finding{Type: typeMissing, Class: report.ClassUnknown})
	case report.StatusExtra:
		drift = append(drift, report.Finding{Type: typeExtra, Class: report.ClassUnknown})
	}
	return drift
}

// resolvedWhy says why an object has no drift left for a channel.
func resolvedWhy(o report.Object, driftLeft bool) string {
	switch {
	case driftLeft:
		return "the drift left is not routed here"
	case len(o.Findings) > 0:
		return "its drift is ignored now"
	}
	return "back in sync"
}

// record makes st what it will be once every notification of the plan is
// accepted, for Store.Check.
func (p plan) record(st *State, now time.Time) {
	for ch, items := range map[Channel][]item{ChannelSlack: p.slack, ChannelPagerDuty: p.pagerduty} {
		for _, it := range items {
			if it.change == ChangeResolved {
				st.Forget(it.key, ch, now)
				continue
			}
			d := Delivery{Fingerprint: it.fingerprint, Owner: it.owner, Target: it.target, SentAt: now}
			if ch == ChannelPagerDuty {
				d.DedupKey = it.dedupKey
			}
			st.Record(it.key, ch, d)
		}
	}
}
