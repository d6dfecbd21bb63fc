package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/notify"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

// notifyFlags are the flags that tell owners about drift.
type notifyFlags struct {
	state         string
	renotifyAfter time.Duration
	dryRun        bool
	reportURL     string
	errors        string
}

func (n *notifyFlags) add(f *pflag.FlagSet) {
	f.StringVar(&n.state, "state", "", "where to remember what was notified: configmap:NAMESPACE/NAME or file:PATH (required with a notify section)")
	f.DurationVar(&n.renotifyAfter, "renotify-after", 24*time.Hour, "notify again about drift still open after this long (0: never)")
	f.BoolVar(&n.dryRun, "dry-run-notify", false, "print what would be sent to Slack and PagerDuty instead of sending it; the state is not changed")
	f.StringVar(&n.reportURL, "report-url", "", "link to this run or its report, shown in notifications")
	f.StringVar(&n.errors, "notify-errors", "fail", "when a notification fails: fail (exit 2) or warn")
}

func (n *notifyFlags) validate(cfg *scanner.Config) error {
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
	return nil
}

// run notifies the owners about r and returns the errors to report, which
// fail the scan unless --notify-errors=warn.
func (n *notifyFlags) run(ctx context.Context, r *report.Report, cfg *scanner.Config, restCfg *rest.Config, out io.Writer, logger *slog.Logger) []error {
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
	var store notify.Store
	if n.state != "" {
		ref, err := notify.ParseStateRef(n.state)
		if err != nil {
			return []error{err}
		}
		var client kubernetes.Interface
		if ref.Path == "" {
			if client, err = kubernetes.NewForConfig(restCfg); err != nil {
				return []error{err}
			}
		}
		if store, err = ref.Store(client, nil); err != nil {
			return []error{err}
		}
	}
	res, err := notify.Notify(ctx, r, store, opts)
	logger.Info("notified", "sent", res.Sent, "resolved", res.Resolved, "skipped", res.Skipped, "failed", len(res.Errors))
	errs := res.Errors
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}
