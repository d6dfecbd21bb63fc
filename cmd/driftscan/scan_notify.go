package main

import (
	"time"

	"github.com/calricon/driftscan/run"
	"github.com/spf13/pflag"
)

// notifyFlags are the flags that tell owners about drift.
type notifyFlags struct {
	state         string
	renotifyAfter time.Duration
	dryRun        bool
	reportURL     string
	errors        string
	lease         string
	warnBefore    time.Duration
	unscanned     time.Duration
}

func (n *notifyFlags) add(f *pflag.FlagSet) {
	f.StringVar(&n.state, "state", "", "where to remember what was notified: configmap:NAMESPACE/NAME or file:PATH (required with a notify section)")
	f.DurationVar(&n.renotifyAfter, "renotify-after", 24*time.Hour, "notify again about drift still open after this long (0: never)")
	f.DurationVar(&n.warnBefore, "breakglass-warn-before", 30*time.Minute, "remind the owner in Slack this long before a breakglass suspension's deadline, and again when it expired, each once, with its pull request and whether the hotfix is in Git (negative: never)")
	f.DurationVar(&n.unscanned, "unscanned-after", time.Hour, "tell an app's owner in Slack once the scan has failed to compare it (its source could not be fetched or rendered) for this long, again after --renotify-after while it fails, and once when it is scanned again (0: on the first failing run; negative: never)")
	f.BoolVar(&n.dryRun, "dry-run-notify", false, "print what would be sent to Slack and PagerDuty instead of sending it; the state is not changed")
	f.StringVar(&n.reportURL, "report-url", "", "link to this run or its report, shown in notifications")
	f.StringVar(&n.errors, "notify-errors", "fail", "when a notification fails: fail (exit 2) or warn")
	f.StringVar(&n.lease, "lease", "", "a Lease (NAMESPACE/NAME) held while notifying, so two runs never notify twice (default: the state ConfigMap's namespace and name)")
}

// options are the run's notify options.
func (n *notifyFlags) options() run.Notify {
	return run.Notify{State: n.state, Lease: n.lease, RenotifyAfter: n.renotifyAfter, BreakglassWarnBefore: n.warnBefore,
		UnscannedAfter: n.unscanned,
		DryRun:         n.dryRun, ReportURL: n.reportURL, Errors: run.ErrorPolicy(n.errors)}
}
