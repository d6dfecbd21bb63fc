// Package notify tells each app's owner about drift: a Slack message per app
// and a PagerDuty incident per object, once per new or changed drift, and a
// resolve when the drift is gone. What was already sent is kept in a Store
// (a ConfigMap in the cluster or a file in CI) between scans.
//
// The package is a library: it takes a *report.Report, injected clients,
// clock and logger, and returns a Result; it reads no flags and no globals.
// Its configuration types (config.Notify, config.Owners) live in package
// config, with the rest of the ScanConfig schema.
package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// Options configure Notify. Start from DefaultOptions.
type Options struct {
	Config config.Notify
	Owners config.Owners
	// Cluster names the cluster in messages, state keys and dedup keys;
	// default the report's Cluster.
	Cluster string
	// ReportURL links messages and incidents to the run or its report.
	ReportURL string
	// RenotifyAfter re-sends drift that is still open this long after it was
	// last sent; 0 never does.
	RenotifyAfter time.Duration
	// DryRun sends nothing and saves no state: it writes what would be sent
	// to DryRunOut, with the places of secrets instead of their values, and
	// reads no secret. Loading the state still keeps a corrupt one aside.
	DryRun    bool
	DryRunOut io.Writer
	// HTTPClient carries every request to Slack and PagerDuty; Notify wraps
	// its transport with Retry, and its Timeout bounds each attempt.
	HTTPClient *http.Client
	Retry      Retry
	// Getenv and ReadFile read the secrets the config names.
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
	Now      func() time.Time
	// Sleep waits between retries; it returns early with ctx's error.
	Sleep  func(ctx context.Context, d time.Duration) error
	Logger *slog.Logger
	// ObjectOwner, when set, names an object's owner ("" for the app's).
	// The CLI sets it for --owner-label from the live object's labels.
	ObjectOwner func(app report.App, obj report.Object) string
	// AllApps says the report covers every app there is: the config's
	// apps unfiltered (no --app, no --shard, no discovery selector), and
	// no scan-wide error that could have kept one out. Then what the state
	// holds for an app the report lacks is resolved (PagerDuty incidents,
	// Slack) and dropped: the app was removed. Without it such entries are
	// left alone, since the app may only be out of this run's scope.
	AllApps bool
	// BreakglassWarnBefore is how long before a breakglass suspension's
	// deadline its owner is reminded in Slack (once, and once more when it
	// expired); negative sends no reminder.
	BreakglassWarnBefore time.Duration
	// UnscannedAfter is how long an app must have failed to be scanned
	// (report.App.Error: its source could not be fetched or rendered, so
	// none of its drift was seen) before its owner is told in Slack; it is
	// told again every RenotifyAfter while it fails, and once when it is
	// scanned again. Negative tells nothing.
	UnscannedAfter time.Duration
}

// DefaultOptions re-sends open drift daily, retries as DefaultRetry, reads
// secrets from the process environment and files, and logs nothing.
func DefaultOptions() Options {
	return Options{
		RenotifyAfter:        24 * time.Hour,
		BreakglassWarnBefore: 30 * time.Minute,
		UnscannedAfter:       time.Hour,
		DryRunOut:            io.Discard,
		HTTPClient:           &http.Client{Timeout: 30 * time.Second},
		Retry:                DefaultRetry(),
		Getenv:               os.Getenv,
		ReadFile:             os.ReadFile,
		Now:                  time.Now,
		Sleep:                sleepContext,
		Logger:               slog.New(slog.DiscardHandler),
	}
}

// complete fills what o leaves nil from DefaultOptions.
func (o Options) complete() Options {
	d := DefaultOptions()
	if o.DryRunOut == nil {
		o.DryRunOut = d.DryRunOut
	}
	if o.HTTPClient == nil {
		o.HTTPClient = d.HTTPClient
	}
	if o.Retry == (Retry{}) {
		o.Retry = d.Retry
	}
	if o.Getenv == nil {
		o.Getenv = d.Getenv
	}
	if o.ReadFile == nil {
		o.ReadFile = d.ReadFile
	}
	if o.Now == nil {
		o.Now = d.Now
	}
	if o.Sleep == nil {
		o.Sleep = d.Sleep
	}
	if o.Logger == nil {
		o.Logger = d.Logger
	}
	return o
}

// Validate checks the config, the owners and that they fit together; it
// reads no secret.
func (o Options) Validate() error {
	errs := []error{config.ValidateNotify(o.Config, o.Owners)}
	if o.RenotifyAfter < 0 {
		errs = append(errs, fmt.Errorf("renotify after %s: must not be negative", o.RenotifyAfter))
	}
	return errors.Join(errs...)
}

// Result counts what Notify did. Sent and Resolved count accepted Slack
// messages and PagerDuty events (in a dry run, those that would be sent);
// Skipped counts objects and channels whose drift was already told.
type Result struct {
	Sent     int
	Resolved int
	Skipped  int
	// Errors holds one error per failed notification or misrouted app; the
	// state keeps those unsent, so the next run tries again.
	Errors []error
	// Warnings say what needs attention before it fails: a state that
	// takes more than half of what its store holds.
	Warnings []string
}

// Err joins Errors, nil when there are none.
func (r Result) Err() error { return errors.Join(r.Errors...) }

// saveTimeout bounds saving the state once the run's context has ended.
const saveTimeout = 30 * time.Second

// Notify tells each app's owner about drift that is new, changed, still open
// past RenotifyAfter, or resolved since the state was saved, then records in
// the state only the notifications that were accepted and saves it.
//
// A failed notification is in Result.Errors and does not stop the others.
// The error return is for the run as a whole: invalid options, or a state
// that could not be loaded (then nothing is sent) or saved.
func Notify(ctx context.Context, r *report.Report, store Store, opts Options) (Result, error) {
	o := opts.complete()
	if err := o.Validate(); err != nil {
		return Result{}, fmt.Errorf("notify: %w", err)
	}
	var res Result
	if store == nil {
		if !o.DryRun {
			return res, errors.New("notify: a state store is required (--state) except for a dry run")
		}
		store = memoryStore{}
	}
	st, err := store.Load(ctx)
	var corrupt *CorruptStateError
	switch {
	case errors.As(err, &corrupt):
		res.Errors = append(res.Errors, err)
		logCorrupt(o, corrupt)
	case err != nil:
		return res, fmt.Errorf("notify: load state: %w", err)
	}
	cluster := o.Cluster
	if cluster == "" {
		cluster = r.Cluster
	}
	now := o.Now()
	p := &planner{cluster: cluster, cfg: o.Config, owners: o.Owners, now: now, allApps: o.AllApps,
		renew: o.RenotifyAfter, ownerOf: o.ObjectOwner}
	pl := p.plan(r, st)
	res.Skipped = pl.skipped
	res.Errors = append(res.Errors, pl.errs...)
	rems, forget := p.reminders(r, st, o.BreakglassWarnBefore)
	un := p.unscanned(r, st, o.UnscannedAfter)
	rems, forget = append(rems, un.send...), append(forget, un.forget...)
	res.Errors = append(res.Errors, un.errs...)
	if !o.DryRun && len(pl.slack)+len(pl.pagerduty)+len(rems)+len(un.seen) > 0 {
		would := st.clone()
		pl.record(would, now)
		for _, rm := range append(slices.Clone(rems), un.seen...) {
			if rm.resolves() {
				would.Forget(rm.key, ChannelSlack, now)
			} else {
				would.Record(rm.key, ChannelSlack, rm.delivery(now))
			}
		}
		u, err := store.Check(ctx, would)
		if err != nil {
			return res, fmt.Errorf("notify: nothing was sent: the state could not be saved afterwards, and a run that cannot remember what it sent would send it again on every run: %w", err)
		}
		if u.Limit > 0 && u.Bytes > u.Limit/2 {
			w := fmt.Sprintf("the notify state takes %d KiB of the %d KiB its store holds (%d objects); at the limit nothing more is sent: split the apps over shards, each with its own state", u.Bytes>>10, u.Limit>>10, u.Objects)
			res.Warnings = append(res.Warnings, w)
			o.Logger.Warn(w)
		}
	}

	rn := newRun(o, st, &res, r, cluster, now)
	rn.sendSlack(ctx, pl.slack)
	rn.sendPagerDuty(ctx, pl.pagerduty)
	rn.sendReminders(ctx, rems, forget)
	if o.DryRun {
		return res, nil
	}
	for _, rm := range un.seen {
		st.Record(rm.key, ChannelSlack, rm.delivery(now))
	}
	// What was accepted is saved even when ctx has ended (a SIGTERM
	// mid-run), or the next run would send it again.
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if err := store.Save(saveCtx, st); err != nil {
		if errors.As(err, &corrupt) {
			res.Errors = append(res.Errors, err)
			return res, nil
		}
		return res, fmt.Errorf("notify: save state: %w", err)
	}
	return res, nil
}

// memoryStore is the empty state of a dry run without a store: everything
// open is new.
type memoryStore struct{}

func (memoryStore) Load(context.Context) (*State, error)         { return NewState(), nil }
func (memoryStore) Check(context.Context, *State) (Usage, error) { return Usage{}, nil }
func (memoryStore) Save(context.Context, *State) error           { return nil }

// logCorrupt logs, once, what an unreadable state held before it was reset,
// with the values of the secrets the config names masked (a dry run reads
// none, so masks none).
func logCorrupt(o Options, e *CorruptStateError) {
	if e.Content == "" {
		return
	}
	sec := &secrets{getenv: o.Getenv, readFile: o.ReadFile}
	if !o.DryRun {
		for _, ref := range configuredSecrets(o) {
			_, _ = sec.read("", ref) // a missing one has nothing to mask
		}
	}
	o.Logger.Warn("notify: the state was not readable and was reset; this is what it held", "state", e.Ref, "err", e.Err.Error(), "content", sec.mask(e.Content))
}

// configuredSecrets are the places of every secret the config names.
func configuredSecrets(o Options) []secretRef {
	s := o.Config.Slack
	refs := []secretRef{{Env: s.TokenEnv, File: s.TokenFile}, {Env: s.WebhookURLEnv, File: s.WebhookURLFile}}
	for _, owner := range o.Owners {
		if pd := owner.PagerDuty; pd != nil {
			refs = append(refs, secretRef{Env: pd.RoutingKeyEnv, File: pd.RoutingKeyFile})
		}
	}
	return slices.DeleteFunc(refs, func(r secretRef) bool { return !r.set() })
}
