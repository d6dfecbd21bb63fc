package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// run sends one plan and records what was accepted.
type run struct {
	o         Options
	st        *State
	res       *Result
	secrets   *secrets
	http      *http.Client
	mc        messageContext
	scannedAt time.Time
}

func newRun(o Options, st *State, res *Result, r *report.Report, cluster string, now time.Time) *run {
	hc := *o.HTTPClient
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// The client's Timeout bounds each attempt, not the waits between them.
	hc.Transport = &retryTransport{base: base, retry: o.Retry, timeout: hc.Timeout, now: o.Now, sleep: o.Sleep, log: o.Logger}
	hc.Timeout = 0
	debts := map[string]int{}
	for _, d := range r.Debts {
		if d.Kind == report.DebtExpired {
			debts[d.Owner]++
		}
	}
	return &run{
		o:       o,
		st:      st,
		res:     res,
		secrets: &secrets{getenv: o.Getenv, readFile: o.ReadFile},
		http:    &hc,
		mc: messageContext{cluster: cluster, reportURL: o.ReportURL, now: now, expiredDebts: debts,
			pagerDutyValues: o.Config.PagerDuty.IncludeValues},
		scannedAt: r.ScannedAt,
	}
}

// fail records a failed notification, with any secret masked.
func (r *run) fail(err error) {
	r.res.Errors = append(r.res.Errors, r.secrets.scrub(err))
}

// stopped reports whether ctx has ended, and then records what is left.
func (r *run) stopped(ctx context.Context, left int, what string) bool {
	if ctx.Err() == nil {
		return false
	}
	r.res.Errors = append(r.res.Errors, fmt.Errorf("notify stopped, %s left unsent: %w", plural(left, what), context.Cause(ctx)))
	return true
}

// slackRef is where the Slack token or webhook URL is kept.
func (r *run) slackRef() (string, secretRef) {
	s := r.o.Config.Slack
	if s.Mode() == config.SlackWebhook {
		return "slack webhook URL", secretRef{Env: s.WebhookURLEnv, File: s.WebhookURLFile}
	}
	return "slack bot token", secretRef{Env: s.TokenEnv, File: s.TokenFile}
}

// slackSender reads the Slack secret and returns the client that sends n
// messages of the kind noun; nil on a dry run. On an error it records that
// the n were left unsent and returns false.
func (r *run) slackSender(n int, noun string) (*Slack, bool) {
	if r.o.DryRun {
		return nil, true
	}
	what, ref := r.slackRef()
	secret, err := r.secrets.read(what, ref)
	if err != nil {
		r.fail(fmt.Errorf("slack: %w (%s left unsent)", err, plural(n, noun)))
		return nil, false
	}
	return NewSlack(r.o.Config.Slack, secret, r.http), true
}

// sendSlack posts a message per app, owner and channel: one for drift, one
// for drift that is gone.
// With Slack turned off in the config, nothing is sent, and what was told
// before stays in the state.
func (r *run) sendSlack(ctx context.Context, items []item) {
	if len(items) == 0 || r.o.Config.Slack.Mode() == config.SlackOff {
		return
	}
	what, ref := r.slackRef()
	sender, ok := r.slackSender(len(items), "notification")
	if !ok {
		return
	}
	groups := groupSlack(items, r.o.Owners)
	for i, g := range groups {
		if r.stopped(ctx, len(groups)-i, "slack message") {
			return
		}
		resolved := g.items[0].change == ChangeResolved
		msg := driftMessage(g, r.mc)
		if resolved {
			msg = resolvedMessage(g, r.mc)
		}
		if r.o.DryRun {
			r.dryRun(fmt.Sprintf("slack %s to %s (%s from %s)", slackMethod(r.o.Config.Slack), g.target, what, ref),
				map[string]any{"channel": g.target, "text": msg.Text, "blocks": msg.Blocks})
		} else if err := sender.Post(ctx, g.target, msg.Text, msg.Blocks); err != nil {
			r.fail(fmt.Errorf("notify owner %s of app %q on slack %s: %w", g.owner, g.app, g.target, err))
			continue
		}
		if !r.o.DryRun {
			// Every object of the message is told, those left out of a
			// message cut to Slack's limits too: it counted them.
			for _, it := range g.items {
				if resolved {
					r.st.Forget(it.key, ChannelSlack, r.mc.now)
				} else {
					r.st.Record(it.key, ChannelSlack, Delivery{Fingerprint: it.fingerprint, Owner: it.owner, Target: it.target, SentAt: r.mc.now})
				}
			}
		}
		if resolved {
			r.res.Resolved++
		} else {
			r.res.Sent++
		}
		r.o.Logger.LogAttrs(ctx, slog.LevelDebug, "notify: slack message sent",
			slog.String("app", g.app), slog.String("owner", g.owner), slog.String("channel", g.target),
			slog.Int("objects", len(g.items)), slog.Bool("resolved", resolved), slog.Bool("dryRun", r.o.DryRun))
	}
}

func slackMethod(c config.Slack) string {
	if c.Mode() == config.SlackWebhook {
		return "incoming webhook"
	}
	return "chat.postMessage"
}

// groupSlack puts items into messages: per app, owner and channel, drift
// apart from resolves, in that order.
func groupSlack(items []item, owners config.Owners) []slackGroup {
	type gk struct {
		app, owner, target string
		resolved           bool
	}
	index := map[gk]int{}
	var groups []slackGroup
	var keys []gk
	for _, it := range items {
		k := gk{it.app, it.owner, it.target, it.change == ChangeResolved}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			g := slackGroup{app: it.app, owner: it.owner, target: it.target}
			if o, ok := owners[it.owner]; ok && o.Slack != nil {
				g.mention = o.Slack.Mention
			}
			groups = append(groups, g)
			keys = append(keys, k)
		}
		groups[i].items = append(groups[i].items, it)
	}
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		return cmp.Or(cmp.Compare(ka.app, kb.app), cmp.Compare(ka.owner, kb.owner),
			cmp.Compare(ka.target, kb.target), boolCompare(ka.resolved, kb.resolved))
	})
	out := make([]slackGroup, len(groups))
	for i, j := range order {
		out[i] = groups[j]
	}
	return out
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// sendPagerDuty sends an event per object: trigger for drift, resolve for
// drift that is gone.
func (r *run) sendPagerDuty(ctx context.Context, items []item) {
	if len(items) == 0 {
		return
	}
	pd := NewPagerDuty(r.o.Config.PagerDuty, r.http)
	keys := map[string]string{}
	keyErrs := map[string]bool{}
	for i, it := range items {
		if r.stopped(ctx, len(items)-i, "pagerduty event") {
			return
		}
		ref, ok := parseSecretRef(it.target)
		if !ok {
			r.fail(fmt.Errorf("notify owner %s of %s in app %q on pagerduty: routing key place %q is not env:NAME or file:PATH", it.owner, it.key.Ref(), it.app, it.target))
			continue
		}
		key := masked
		if !r.o.DryRun {
			k, cached := keys[it.target]
			if !cached {
				var err error
				if k, err = r.secrets.read("pagerduty routing key of owner "+it.owner, ref); err != nil {
					if !keyErrs[it.target] {
						keyErrs[it.target] = true
						r.fail(fmt.Errorf("pagerduty: %w", err))
					}
					continue
				}
				keys[it.target] = k
			}
			key = k
		}
		resolved := it.change == ChangeResolved
		ev := resolveEvent(it, key)
		if !resolved {
			ev = triggerEvent(it, key, r.o.Config.Severity(it.app, it.key.Namespace), r.mc, r.scannedAt)
		}
		if r.o.DryRun {
			r.dryRun(fmt.Sprintf("pagerduty %s %s (routing key from %s)", ev.Action, ev.DedupKey, ref), ev)
		} else if err := pd.Send(ctx, ev); err != nil {
			r.fail(fmt.Errorf("notify owner %s of %s in app %q on pagerduty: %w", it.owner, it.key.Ref(), it.app, err))
			continue
		} else if resolved {
			r.st.Forget(it.key, ChannelPagerDuty, r.mc.now)
		} else {
			r.st.Record(it.key, ChannelPagerDuty, Delivery{Fingerprint: it.fingerprint, Owner: it.owner, Target: it.target, DedupKey: it.dedupKey, SentAt: r.mc.now})
		}
		if resolved {
			r.res.Resolved++
		} else {
			r.res.Sent++
		}
		r.o.Logger.LogAttrs(ctx, slog.LevelDebug, "notify: pagerduty event sent",
			slog.String("app", it.app), slog.String("owner", it.owner), slog.String("kind", it.key.Kind),
			slog.String("ns", it.key.Namespace), slog.String("name", it.key.Name),
			slog.String("action", ev.Action), slog.String("dedupKey", ev.DedupKey), slog.Bool("dryRun", r.o.DryRun))
	}
}

// dryRun writes what would be sent. Secrets never get here (a dry run reads
// none), and the output is masked again all the same.
func (r *run) dryRun(title string, payload any) {
	data, err := json.MarshalIndent(payload, "", "  ")
	if err == nil {
		_, err = fmt.Fprintf(r.o.DryRunOut, "# %s\n%s\n\n", title, r.secrets.mask(string(data)))
	}
	if err != nil {
		r.fail(fmt.Errorf("dry run: %w", err))
	}
}
