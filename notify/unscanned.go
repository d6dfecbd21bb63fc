package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// An app the scan could not compare (report.App.Error: its source could
// not be fetched or rendered) is kept in the state as a reminder of this
// kind, one per app, so its owner is told once that drift in it goes
// unseen, and once more when it is scanned again.
const UnscannedKind = "ScanFailed"

// The stages of an unscanned app, the fingerprints of its reminder.
const (
	// unscannedSeen: failing since the delivery's SentAt, not told yet
	// (UnscannedAfter has not passed).
	unscannedSeen = "failing, not told"
	// unscannedTold: failing, and the owner was told at SentAt.
	unscannedTold = "failing"
	// unscannedFixed is the message that it is scanned again; it is never
	// recorded: the reminder is forgotten once it is accepted.
	unscannedFixed = "scanned again"
)

// unscannedPlan is what the state says to do about apps that were not
// scanned: reminders to send, first sightings to record without sending,
// reminders to forget without a message, and owners that cannot be told.
type unscannedPlan struct {
	send   []reminder
	seen   []reminder
	forget []Key
	errs   []error
}

// unscanned plans, for each app of r the scan could not compare, one Slack
// message to its owner once it has failed for after (the first failing run
// only records when it was seen, so a Git host that is down for one run
// tells nobody), again every renew while it fails, and one when a later
// run scans it again. Negative after tells nothing and forgets what there
// was. With allApps, an app the report lacks is forgotten.
func (p *planner) unscanned(r *report.Report, st *State, after time.Duration) unscannedPlan {
	var out unscannedPlan
	if p.cfg.Slack.Mode() == config.SlackOff {
		return out
	}
	inReport := map[string]bool{}
	for _, app := range r.Apps {
		inReport[app.Name] = true
		key := unscannedKey(p.cluster, app.Name)
		prev := st.Get(key, ChannelSlack)
		if app.Error == "" || after < 0 {
			switch {
			case prev == nil:
			case prev.Fingerprint == unscannedTold && app.Error == "" && after >= 0:
				if target, ok := p.unscannedTarget(app, &out, false); ok {
					out.send = append(out.send, reminder{key: key, app: app, owner: app.Owner, target: target, stage: unscannedFixed, since: prev.SentAt})
					continue
				}
				fallthrough
			default:
				out.forget = append(out.forget, key)
			}
			continue
		}
		first := prev == nil
		if first {
			prev = &Delivery{Fingerprint: unscannedSeen, Owner: app.Owner, SentAt: p.now}
		}
		due := false
		switch prev.Fingerprint {
		case unscannedSeen:
			due = !p.now.Before(prev.SentAt.Add(after))
		case unscannedTold:
			due = p.renew > 0 && !p.now.Before(prev.SentAt.Add(p.renew))
		}
		if !due {
			if first {
				out.seen = append(out.seen, reminder{key: key, app: app, owner: app.Owner, stage: unscannedSeen, since: p.now})
			}
			continue
		}
		if target, ok := p.unscannedTarget(app, &out, true); ok {
			out.send = append(out.send, reminder{key: key, app: app, owner: app.Owner, target: target, stage: unscannedTold, since: prev.SentAt, again: prev.Fingerprint == unscannedTold})
		}
	}
	for _, e := range st.Objects {
		if e.Kind == UnscannedKind && e.Group == ReminderGroup && e.Cluster == p.cluster && p.allApps && !inReport[e.App] {
			out.forget = append(out.forget, e.Key)
		}
	}
	return out
}

// unscannedTarget is the Slack channel of app's owner. An owner missing
// from the config is an error when the app is failing (nobody can be told
// that it goes unseen); an owner without Slack is told nothing.
func (p *planner) unscannedTarget(app report.App, out *unscannedPlan, failing bool) (string, bool) {
	owner, known := p.owners[app.Owner]
	if !known {
		switch {
		case !failing:
		case app.Owner == "":
			out.errs = append(out.errs, fmt.Errorf("app %q: could not be scanned, and has no owner to tell", app.Name))
		default:
			out.errs = append(out.errs, fmt.Errorf("app %q: could not be scanned, and its owner %q is not in owners", app.Name, app.Owner))
		}
		return "", false
	}
	target := p.targetOf(ChannelSlack, owner)
	return target, target != noTarget
}

func unscannedKey(cluster, app string) Key {
	return Key{Cluster: cluster, App: app, Group: ReminderGroup, Kind: UnscannedKind, Name: app}
}

// unscannedMessage tells the owner that nothing of the app was compared
// and why, or that it is scanned again.
func unscannedMessage(rm reminder, mention string, mc messageContext) slackMessage {
	app := rm.app
	var header, intro string
	var blocks []slack.Block
	if rm.stage == unscannedFixed {
		header = fmt.Sprintf("Scanned again: %s on %s", app.Name, mc.cluster)
		intro = fmt.Sprintf("App *%s* is compared with the cluster again (it could not be when last told, at %s): %s compared, and its drift is told as usual.",
			mrkdwnEscape(app.Name), rm.since.UTC().Format(time.RFC3339), plural(app.Summary().Objects, "object"))
	} else {
		header = fmt.Sprintf("driftscan cannot scan %s on %s", app.Name, mc.cluster)
		if rm.again {
			header = fmt.Sprintf("driftscan still cannot scan %s on %s", app.Name, mc.cluster)
		}
		intro = fmt.Sprintf("Every scan since %s failed before it compared app *%s* (owner %s) with the cluster, so drift in it goes unseen until this is mended:",
			rm.since.UTC().Format(time.RFC3339), mrkdwnEscape(app.Name), mrkdwnEscape(rm.owner))
		if rm.again {
			intro = fmt.Sprintf("App *%s* (owner %s) is still not compared with the cluster, as told at %s, so drift in it goes unseen until this is mended:",
				mrkdwnEscape(app.Name), mrkdwnEscape(rm.owner), rm.since.UTC().Format(time.RFC3339))
		}
	}
	if mention != "" {
		intro = mention + " " + intro
	}
	blocks = append(blocks,
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, cut(header, slackMaxHeaderText), false, false)),
		section(intro))
	if rm.stage != unscannedFixed {
		// A code block: the error quotes paths, YAML and template text.
		blocks = append(blocks, section("```"+cut(mrkdwnEscape(fence(app.Error)), slackMaxSectionText-6)+"```"))
	}
	if mc.reportURL != "" {
		blocks = append(blocks, section(link(mc.reportURL, "Full report")))
	}
	text := header
	if mention != "" {
		text = mention + " " + text
	}
	return slackMessage{Text: text, Blocks: blocks, Objects: 1}
}

// fence keeps s from ending the code block it is put in.
func fence(s string) string { return strings.ReplaceAll(s, "```", "``'") }
