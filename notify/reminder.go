package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// Reminders of a breakglass deadline are kept in the state as objects of
// this group and kind, one per suspension (its name is the deadline), so
// that each is sent once and a new suspension gets its own.
const (
	ReminderGroup = "reminder.driftscan.dev"
	ReminderKind  = "BreakglassDeadline"
)

// The stages of a reminder, its fingerprint in the state.
const (
	reminderSoon    = "deadline soon"
	reminderExpired = "expired"
)

// reminder is one Slack message about an app rather than its drift: a
// suspension's deadline, or an app the scan could not compare.
type reminder struct {
	key    Key
	app    report.App
	owner  string
	target string
	stage  string
	// since is when an unscanned app was first seen failing, or told.
	since time.Time
	// again: the owner was told of this stage before.
	again bool
}

// message is the Slack message of rm.
func (rm reminder) message(mention string, mc messageContext) slackMessage {
	if rm.key.Kind == UnscannedKind {
		return unscannedMessage(rm, mention, mc)
	}
	return reminderMessage(rm, mention, mc)
}

// reminders plans, for each suspended app, the Slack reminder its owner
// has not had yet: once when the deadline is within warnBefore, once when
// it has passed. It also returns the reminders of suspensions that ended,
// to forget.
func (p *planner) reminders(r *report.Report, st *State, warnBefore time.Duration) (send []reminder, forget []Key) {
	if p.cfg.Slack.Mode() == config.SlackOff || warnBefore < 0 {
		return nil, nil
	}
	live := map[Key]bool{}
	scanned := map[string]bool{}
	for _, app := range r.Apps {
		scanned[app.Name] = app.Error == ""
		bg := app.Breakglass
		if bg == nil || bg.Resumed {
			continue
		}
		key := Key{Cluster: p.cluster, App: app.Name, Group: ReminderGroup, Kind: ReminderKind, Name: bg.Until}
		live[key] = true
		stage := reminderStage(bg, p.now, warnBefore)
		if stage == "" {
			continue
		}
		if prev := st.Get(key, ChannelSlack); prev != nil && prev.Fingerprint == stage {
			continue
		}
		owner, known := p.owners[app.Owner]
		if !known {
			continue // the drift plan names an unknown owner already
		}
		if target := p.targetOf(ChannelSlack, owner); target != noTarget {
			send = append(send, reminder{key: key, app: app, owner: app.Owner, target: target, stage: stage})
		}
	}
	for _, e := range st.Objects {
		if e.Group == ReminderGroup && e.Kind == ReminderKind && e.Cluster == p.cluster && scanned[e.App] && !live[e.Key] {
			forget = append(forget, e.Key)
		}
	}
	return send, forget
}

// reminderStage is the reminder a suspension is due at now: expired, its
// deadline within warnBefore, or none ("").
func reminderStage(bg *report.Breakglass, now time.Time, warnBefore time.Duration) string {
	until, err := time.Parse(time.RFC3339, bg.Until)
	switch {
	case err != nil:
		return ""
	case !now.Before(until):
		return reminderExpired
	case until.Sub(now) <= warnBefore:
		return reminderSoon
	}
	return ""
}

// reminderMessage says how long the suspension has left (or since when it
// expired), whether the hotfix is in Git yet, and links its pull request.
func reminderMessage(rm reminder, mention string, mc messageContext) slackMessage {
	bg := rm.app.Breakglass
	until, _ := time.Parse(time.RFC3339, bg.Until)
	header := fmt.Sprintf("Break-glass of %s on %s ends in %s", rm.app.Name, mc.cluster, minutes(until.Sub(mc.now)))
	if rm.stage == reminderExpired {
		header = fmt.Sprintf("Break-glass of %s on %s expired %s ago", rm.app.Name, mc.cluster, minutes(mc.now.Sub(until)))
	}
	intro := fmt.Sprintf("Suspended by %s (%s) until %s.", mrkdwnEscape(bg.By), mrkdwnEscape(oneLine(bg.Reason)), bg.Until)
	if mention != "" {
		intro = mention + " " + intro
	}
	git := "The hotfix is in Git: resuming reverts nothing (`driftscan breakglass resume " + rm.app.Name + "`)."
	if bg.Unbackported > 0 {
		git = fmt.Sprintf("The hotfix is *not in Git yet*: %s would be reverted by the next sync.", plural(bg.Unbackported, "change"))
	}
	pr := "No pull request carries it yet: `driftscan backport --app " + rm.app.Name + " --pr`."
	if p := bg.PullRequest; p != nil {
		pr = fmt.Sprintf("Pull request: %s (%s).", link(p.URL, fmt.Sprintf("#%d %s", p.Number, p.Branch)), p.State)
	} else if bg.Unbackported == 0 {
		pr = ""
	}
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, cut(header, slackMaxHeaderText), false, false)),
		section(intro), section(git),
	}
	if pr != "" {
		blocks = append(blocks, section(pr))
	}
	text := header
	if mention != "" {
		text = mention + " " + text
	}
	return slackMessage{Text: text, Blocks: blocks, Objects: 1}
}

// sendReminders posts each reminder and records it as sent.
func (r *run) sendReminders(ctx context.Context, rems []reminder, forget []Key) {
	for _, k := range forget {
		if !r.o.DryRun {
			r.st.Forget(k, ChannelSlack, r.mc.now)
		}
	}
	if len(rems) == 0 {
		return
	}
	what, ref := r.slackRef()
	sender, ok := r.slackSender(len(rems), "reminder")
	if !ok {
		return
	}
	for i, rm := range rems {
		if r.stopped(ctx, len(rems)-i, "reminder") {
			return
		}
		mention := ""
		if o, ok := r.o.Owners[rm.owner]; ok && o.Slack != nil {
			mention = o.Slack.Mention
		}
		msg := rm.message(mention, r.mc)
		if r.o.DryRun {
			r.dryRun(fmt.Sprintf("slack reminder to %s (%s from %s)", rm.target, what, ref), map[string]any{"channel": rm.target, "text": msg.Text, "blocks": msg.Blocks})
		} else if err := sender.Post(ctx, rm.target, msg.Text, msg.Blocks); err != nil {
			r.fail(fmt.Errorf("remind owner %s of app %q on slack %s: %w", rm.owner, rm.app.Name, rm.target, err))
			continue
		} else if rm.resolves() {
			r.st.Forget(rm.key, ChannelSlack, r.mc.now)
		} else {
			r.st.Record(rm.key, ChannelSlack, rm.delivery(r.mc.now))
		}
		if rm.resolves() {
			r.res.Resolved++
		} else {
			r.res.Sent++
		}
	}
}

// resolves says that rm ends what the state keeps of its key (an app
// scanned again) instead of recording itself.
func (rm reminder) resolves() bool { return rm.stage == unscannedFixed }

// delivery is what the state keeps of rm once it was accepted at now (for
// a first sighting, recorded at now).
func (rm reminder) delivery(now time.Time) Delivery {
	return Delivery{Fingerprint: rm.stage, Owner: rm.owner, Target: rm.target, SentAt: now}
}

// minutes is d to the minute, without the seconds: "20m", "1h5m".
func minutes(d time.Duration) string {
	s := d.Round(time.Minute).String()
	if s == "0s" {
		return "0m"
	}
	return strings.TrimSuffix(s, "0s")
}
