package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/lease"
	"github.com/calricon/driftscan/notify"
	"github.com/calricon/driftscan/report"
)

// notifyFlags are the flags that tell owners about drift.
type notifyFlags struct {
	state         string
	renotifyAfter time.Duration
	dryRun        bool
	reportURL     string
	errors        string
	lease         string
}

func (n *notifyFlags) add(f *pflag.FlagSet) {
	f.StringVar(&n.state, "state", "", "where to remember what was notified: configmap:NAMESPACE/NAME or file:PATH (required with a notify section)")
	f.DurationVar(&n.renotifyAfter, "renotify-after", 24*time.Hour, "notify again about drift still open after this long (0: never)")
	f.BoolVar(&n.dryRun, "dry-run-notify", false, "print what would be sent to Slack and PagerDuty instead of sending it; the state is not changed")
	f.StringVar(&n.reportURL, "report-url", "", "link to this run or its report, shown in notifications")
	f.StringVar(&n.errors, "notify-errors", "fail", "when a notification fails: fail (exit 2) or warn")
	f.StringVar(&n.lease, "lease", "", "a Lease (NAMESPACE/NAME) held while notifying, so two runs never notify twice (default: the state ConfigMap's namespace and name)")
}

func (n *notifyFlags) validate(cfg *config.Config) error {
	if n.errors != "fail" && n.errors != "warn" {
		return fmt.Errorf("--notify-errors %q: want fail or warn", n.errors)
	}
	if cfg.Notify == nil {
		// Nothing to notify: --state and --dry-run-notify have nothing to do
		// (the chart passes --state whether or not notify is configured).
		return nil
	}
	if n.state == "" && !n.dryRun {
		return fmt.Errorf("the config has a notify section: give --state configmap:NAMESPACE/NAME or file:PATH (or --dry-run-notify)")
	}
	if n.state != "" {
		if _, err := notify.ParseStateRef(n.state); err != nil {
			return err
		}
	}
	if _, _, err := n.leaseRef(); err != nil {
		return err
	}
	return nil
}

// leaseRef is the Lease to hold while notifying: --lease, else the state
// ConfigMap's namespace and name; none for a file state or a dry run.
func (n *notifyFlags) leaseRef() (ns, name string, err error) {
	if n.dryRun {
		return "", "", nil
	}
	if n.lease != "" {
		ns, name, ok := strings.Cut(n.lease, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return "", "", fmt.Errorf("--lease %q: want NAMESPACE/NAME", n.lease)
		}
		return ns, name, nil
	}
	if ref, err := notify.ParseStateRef(n.state); err == nil && ref.Path == "" {
		return ref.Namespace, ref.Name, nil
	}
	return "", "", nil
}

// run notifies the owners about r and returns the errors to report, which
// fail the scan unless --notify-errors=warn.
func (n *notifyFlags) run(ctx context.Context, r *report.Report, cfg *config.Config, restCfg *rest.Config, out io.Writer, logger *slog.Logger) []error {
	if cfg.Notify == nil {
		return nil
	}
	opts := notify.DefaultOptions()
	opts.Config, opts.Owners = *cfg.Notify, cfg.Owners
	opts.Cluster, opts.ReportURL, opts.RenotifyAfter = r.Cluster, n.reportURL, n.renotifyAfter
	opts.DryRun, opts.Logger = n.dryRun, logger
	if n.dryRun {
		opts.DryRunOut = out
	}
	opts.ObjectOwner = func(app report.App, o report.Object) string {
		if o.Owner != "" {
			return o.Owner
		}
		return app.Owner
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return []error{err}
	}
	var store notify.Store
	if n.state != "" {
		ref, err := notify.ParseStateRef(n.state)
		if err != nil {
			return []error{err}
		}
		if store, err = ref.Store(client, nil); err != nil {
			return []error{err}
		}
	}
	if ns, name, _ := n.leaseRef(); name != "" {
		lopts := lease.DefaultOptions()
		lopts.Namespace, lopts.Name = ns, name
		l, err := lease.Acquire(ctx, client, lopts)
		switch {
		case errors.Is(err, lease.ErrHeld):
			// Another run is notifying: the report stands, the state is
			// unchanged, and what is still open is notified next run.
			logger.Warn("notifications skipped: another driftscan run holds the lease", "err", err.Error())
			return nil
		case err != nil:
			return []error{fmt.Errorf("lease %s/%s: %w", ns, name, err)}
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := l.Release(rctx); err != nil {
				logger.Warn("releasing the lease", "err", err.Error())
			}
		}()
	}
	res, err := notify.Notify(ctx, r, store, opts)
	logger.Info("notified", "sent", res.Sent, "resolved", res.Resolved, "skipped", res.Skipped, "failed", len(res.Errors))
	errs := res.Errors
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}
