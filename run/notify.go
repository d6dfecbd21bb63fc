package run

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/lease"
	"github.com/calricon/driftscan/notify"
	"github.com/calricon/driftscan/report"
)

// ErrorPolicy says what a failed notification does to the run.
type ErrorPolicy string

const (
	// FailOnError makes the run exit with report.ExitError.
	FailOnError ErrorPolicy = "fail"
	// WarnOnError only reports the failure.
	WarnOnError ErrorPolicy = "warn"
)

// Notify says how owners are told about the report, when the config has a
// notify section.
type Notify struct {
	// State is where what was sent is remembered between runs
	// (notify.ParseStateRef: configmap:NAMESPACE/NAME or file:PATH);
	// required unless DryRun.
	State string
	// Lease (NAMESPACE/NAME) is held while notifying, so two runs never
	// notify twice; "" means the State ConfigMap's namespace and name
	// (LeaseFor).
	Lease string
	// LeaseDuration is how long the Lease stays taken without a renewal;
	// 0 means lease.DefaultDuration. The run renews it while it notifies
	// and stops sending before it would run out (lease.Keep).
	LeaseDuration time.Duration
	RenotifyAfter time.Duration
	// BreakglassWarnBefore is how long before a suspension's deadline the
	// owner is reminded (notify.Options.BreakglassWarnBefore).
	BreakglassWarnBefore time.Duration
	// UnscannedAfter is how long an app must have failed to be scanned
	// before its owner is told (notify.Options.UnscannedAfter).
	UnscannedAfter time.Duration
	// DryRun writes what would be sent to Options.Out and sends nothing.
	DryRun    bool
	ReportURL string
	Errors    ErrorPolicy
}

// DefaultNotify re-sends open drift daily and fails the run when a
// notification fails.
func DefaultNotify() Notify {
	d := notify.DefaultOptions()
	return Notify{RenotifyAfter: d.RenotifyAfter, BreakglassWarnBefore: d.BreakglassWarnBefore, UnscannedAfter: d.UnscannedAfter, Errors: FailOnError}
}

func (n Notify) validate(cfg *config.Config) error {
	if n.Errors != FailOnError && n.Errors != WarnOnError {
		return fmt.Errorf("notify errors %q: want %s or %s", n.Errors, FailOnError, WarnOnError)
	}
	if cfg.Notify == nil {
		// Nothing to notify: the state and a dry run have nothing to do
		// (the chart passes --state whether or not notify is configured).
		return nil
	}
	if n.State == "" && !n.DryRun {
		return fmt.Errorf("the config has a notify section: give --state configmap:NAMESPACE/NAME or file:PATH (or --dry-run-notify)")
	}
	if n.State != "" {
		if _, err := notify.ParseStateRef(n.State); err != nil {
			return err
		}
	}
	_, err := LeaseFor(n.State, n.Lease, n.DryRun)
	return err
}

// ParseState parses where notify keeps its state (Notify.State):
// configmap:NAMESPACE/NAME or file:PATH.
func ParseState(s string) (notify.StateRef, error) { return notify.ParseStateRef(s) }

// LeaseRef names a Lease; the zero value is none.
type LeaseRef struct{ Namespace, Name string }

// LeaseFor is the Lease a run holds while notifying: lease
// ("NAMESPACE/NAME") when given, else the namespace and name of a
// ConfigMap state; none for a file state or a dry run.
func LeaseFor(state, lease string, dryRun bool) (LeaseRef, error) {
	if dryRun {
		return LeaseRef{}, nil
	}
	if lease != "" {
		ns, name, ok := strings.Cut(lease, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return LeaseRef{}, fmt.Errorf("--lease %q: want NAMESPACE/NAME", lease)
		}
		return LeaseRef{Namespace: ns, Name: name}, nil
	}
	if ref, err := notify.ParseStateRef(state); err == nil && ref.Path == "" {
		return LeaseRef{Namespace: ref.Namespace, Name: ref.Name}, nil
	}
	return LeaseRef{}, nil
}

// notifyOwners tells the owners about r under the Lease and returns the
// errors to report. plan is a sharded run's, else nil.
func notifyOwners(ctx context.Context, client kubernetes.Interface, r *report.Report, cfg *config.Config, o Options, plan *shardPlan) []error {
	if cfg.Notify == nil {
		return nil
	}
	n := o.Notify
	var store notify.Store
	if n.State != "" {
		ref, err := notify.ParseStateRef(n.State)
		if err != nil {
			return []error{err}
		}
		if store, err = ref.Store(client, o.Now); err != nil {
			return []error{err}
		}
		store = shardStore(store, o, plan)
	}
	ref, err := LeaseFor(n.State, n.Lease, n.DryRun)
	if err != nil {
		return []error{err}
	}
	if ref.Name != "" {
		held, release, err := holdLease(ctx, client, ref, o)
		if errors.Is(err, lease.ErrHeld) {
			// Another run is notifying: the report stands, the state is
			// unchanged, and what is still open is notified next run.
			o.Logger.Warn("notifications skipped: another driftscan run holds the lease", "err", err.Error())
			return nil
		}
		if err != nil {
			return []error{err}
		}
		defer release()
		// Sending stops when the Lease is lost or about to run out; what
		// was accepted until then is still saved.
		ctx = held
	}
	res, err := notify.Notify(ctx, r, store, notifyOptions(r, cfg, o))
	o.Logger.Info("notified", "sent", res.Sent, "resolved", res.Resolved, "skipped", res.Skipped, "failed", len(res.Errors))
	if err != nil {
		return append(res.Errors, err)
	}
	return res.Errors
}

// notifyOptions are the notify.Options of the run.
func notifyOptions(r *report.Report, cfg *config.Config, o Options) notify.Options {
	opts := notify.DefaultOptions()
	opts.Config, opts.Owners = *cfg.Notify, cfg.Owners
	opts.Cluster, opts.ReportURL, opts.RenotifyAfter = r.Cluster, o.Notify.ReportURL, o.Notify.RenotifyAfter
	opts.DryRun, opts.Logger, opts.Now = o.Notify.DryRun, o.Logger, o.Now
	opts.BreakglassWarnBefore, opts.UnscannedAfter = o.Notify.BreakglassWarnBefore, o.Notify.UnscannedAfter
	if o.Notify.DryRun {
		opts.DryRunOut = o.Out
	}
	// Only a run that saw every app may resolve those it did not see.
	opts.AllApps = len(o.Apps) == 0 && o.Shard == "" && (o.Discover == nil || o.Discover.Options.Selector == "") && len(r.Errors) == 0
	opts.ObjectOwner = func(app report.App, obj report.Object) string {
		if obj.Owner != "" {
			return obj.Owner
		}
		return app.Owner
	}
	return opts
}

// holdLease takes the Lease and keeps it renewed: it returns the context
// to notify under, which ends when the Lease is lost or about to run out
// (lease.Keep), and the function that stops the renewals and gives the
// Lease back, even after ctx has ended.
func holdLease(ctx context.Context, client kubernetes.Interface, ref LeaseRef, o Options) (held context.Context, release func(), err error) {
	lopts := lease.DefaultOptions()
	lopts.Namespace, lopts.Name, lopts.Now = ref.Namespace, ref.Name, o.Now
	if o.Notify.LeaseDuration > 0 {
		lopts.Duration = o.Notify.LeaseDuration
	}
	l, err := lease.Acquire(ctx, client, lopts)
	if err != nil {
		if errors.Is(err, lease.ErrHeld) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("lease %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	held, stop := l.Keep(ctx)
	return held, func() {
		stop()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := l.Release(rctx); err != nil {
			o.Logger.Warn("releasing the lease", "err", err.Error())
		}
	}, nil
}

// shardStore is store as one shard of a sharded run holds it: it takes over
// from the other shards' states what they told about the apps that moved
// to it (notify.ShardStore). The shards' states are the chart's
// "<name>-<index>" ConfigMaps; a state named otherwise, or in a file, is
// store alone, and an app that moves is notified again.
func shardStore(store notify.Store, o Options, plan *shardPlan) notify.Store {
	cm, ok := store.(*notify.ConfigMapStore)
	if !ok || plan == nil {
		return store
	}
	sh := plan.spec
	base, found := strings.CutSuffix(cm.Name, "-"+strconv.Itoa(sh.Index))
	if !found {
		o.Logger.Info("the state's name does not end in -<shard index>, so the other shards' states are not known: the drift of an app that moves between shards is notified again", "state", cm.Name)
		return store
	}
	ss := &notify.ShardStore{Store: store, Index: sh.Index, Logger: o.Logger, Now: o.Now, ShardOf: func(app string) (int, bool) {
		i, ok := plan.of[app]
		return i, ok
	}}
	for i := range sh.Count {
		if i != sh.Index {
			ss.Siblings = append(ss.Siblings, &notify.ConfigMapStore{Client: cm.Client, Namespace: cm.Namespace, Name: base + "-" + strconv.Itoa(i), Now: cm.Now})
		}
	}
	return ss
}
