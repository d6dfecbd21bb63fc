// Package run is one `driftscan scan` from start to finish, as a library
// call in the style of helm's pkg/action: it discovers apps, scans them,
// marks the apps paused by breakglass (and with AutoResume resumes the
// expired suspensions that are safe to resume), judges every finding
// against the live-change contracts, writes the report, tells the
// owners under a Lease, and writes or pushes metrics. The CLI builds Options
// from its flags and calls Scan; everything it needs to print is in the
// Result.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
	"github.com/calricon/driftscan/shard"
	"github.com/calricon/driftscan/source"
)

// ShardBy is how a sharded run splits the apps (shard.By).
type ShardBy = shard.By

// The ways to split the apps between shards.
const (
	ShardByNamespace = shard.ByNamespace
	ShardByApp       = shard.ByApp
)

// Progress is how far the scan is (scanner.Progress), for a progress line.
type Progress = scanner.Progress

// Options configure one run. Start from DefaultOptions.
type Options struct {
	// Scan configures the scan. Its RESTConfig reaches the cluster for every
	// request of the run; its Now and Logger are replaced by the run's.
	Scan scanner.Options
	// Discover, when set, adds apps from the cluster's reconciler objects
	// before the scan (see Discover).
	Discover *Discover
	// Apps, when set, keeps only the apps of these names; Shard ("i/N"),
	// when set, only the apps of shard i of N (package shard).
	Apps  []string
	Shard string
	// ShardBy is how apps are split between shards: ShardByNamespace
	// (also when "") or ShardByApp.
	ShardBy ShardBy
	// AutoResume resumes an expired breakglass suspension when its app has
	// no pipeline or human drift left that the next sync would revert.
	AutoResume bool
	// BackportPRs, when set, carries the hotfixes of apps suspended with
	// --backport-pr back to Git as pull requests (a push and forge API
	// calls, see ScheduledBackport).
	BackportPRs *ScheduledBackport
	// ContractParams, when set, is the contract policies' break-glass
	// ConfigMap: the run removes from it the suspensions that ended or
	// expired (a write, like AutoResume).
	ContractParams *contract.ParamsRef
	// CacheDir, when set, is where scans keep what spares the next scan of
	// the same apps on the same cluster most of its work (a folder per
	// cluster, config and selection of apps: scanner.Options.CacheDir).
	CacheDir string
	// Outputs are written once the report is complete, before anyone is
	// notified: to a file atomically, else to Out. Write says how; its
	// Color applies only to a table written to Out.
	Outputs []report.Output
	Write   report.WriteOptions
	Out     io.Writer
	// Notify says how owners are told, when the config has a notify
	// section; Metrics where metrics go.
	Notify  Notify
	Metrics Metrics
	// Now is the clock of the whole run: the scan, breakglass deadlines,
	// notifications and metrics.
	Now    func() time.Time
	Logger *slog.Logger
}

// scanOptions are scanner.DefaultOptions with what the scanner reaches
// through run: Argo CD's parameter files merged as discover reads them.
func scanOptions() scanner.Options {
	o := scanner.DefaultOptions()
	o.ArgoSourceFiles = discover.ArgoSourceFiles
	return o
}

// DefaultOptions returns a scan with scanner.DefaultOptions that writes
// JSON to io.Discard, notifies as DefaultNotify, and writes no metrics.
func DefaultOptions() Options {
	return Options{
		Scan:    scanOptions(),
		Outputs: []report.Output{{Format: report.FormatJSON}},
		Write:   report.DefaultWriteOptions(),
		Out:     io.Discard,
		Notify:  DefaultNotify(),
		Now:     time.Now,
		Logger:  slog.New(slog.DiscardHandler),
	}
}

// Validate checks the options against the config they will run: the state
// and Lease that a notify section needs, and the shard spec.
func (o Options) Validate(cfg *config.Config) error {
	if o.Shard != "" {
		if _, err := parseShard(o.Shard); err != nil {
			return err
		}
		if _, err := shard.ParseBy(string(o.ShardBy)); err != nil {
			return err
		}
	}
	// A missing credential is one error here rather than one per app.
	if err := source.CheckCredentials(cfg.Git.Credentials, o.Scan.Getenv); err != nil {
		return err
	}
	return o.Notify.validate(cfg)
}

// Result is what a run did.
type Result struct {
	// Report is the final report, as written to the outputs.
	Report *report.Report
	// Skipped says, per reconciler object, why discovery found no app in it.
	Skipped []discover.Skip
	// NotifyErrors are the notifications that failed; they fail the run
	// only with Notify.Errors FailOnError.
	NotifyErrors []error
	// MetricsError is why the metrics could not be written or pushed.
	MetricsError error
	// failed is set when NotifyErrors fail the run.
	failed bool
}

// ExitCode is the process exit code of the run: report.ExitError when
// notifications (with FailOnError) or metrics failed, else the report's
// code for the classes of failOn.
func (r Result) ExitCode(failOn report.FailOn) int {
	if r.failed || r.MetricsError != nil {
		return report.ExitError
	}
	return r.Report.ExitCodeFor(failOn)
}

// Scan runs cfg, which it changes: discovered apps and rules are added to
// it, and only the selected apps are kept. It returns an error when the
// run cannot start or the report cannot be written; a failure of one app or
// object is in the report, and a failure to notify or write metrics is in
// the Result.
func Scan(ctx context.Context, cfg *config.Config, opts Options) (Result, error) {
	opts = opts.complete()
	c, err := newClients(opts)
	if err != nil {
		return Result{}, err
	}
	var res Result
	found, err := discoverApps(ctx, c.dynamic, cfg, opts)
	if err != nil {
		return Result{}, err
	}
	res.Skipped = found.Skipped
	for _, s := range found.Skipped {
		opts.Logger.Info("skipped", "object", s.Object, "reason", s.Reason)
	}
	plan, err := selectApps(cfg, opts, found.Skipped)
	if err != nil {
		return Result{}, err
	}
	opts.Scan.CacheDir = scanCacheDir(opts.CacheDir, cfg, opts)
	r, err := scanner.Scan(ctx, cfg, opts.Scan)
	if err != nil {
		return Result{}, err
	}
	if opts.CacheDir != "" {
		pruneCacheDirs(opts.CacheDir, opts.Scan.CacheDir, opts.Now(), opts.Logger)
	}
	attachDiscoveryErrors(r, found.Errors, len(opts.Apps) > 0)
	attachDiscoveryWarnings(r, found.Warnings, len(opts.Apps) > 0)
	if err := suspensions(ctx, c.dynamic, r, opts); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	if err := backportPRs(ctx, r, cfg, opts); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	if err := contracts(ctx, c, r, cfg, opts); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	r.Finalize()
	res.Report = r
	if err := writeOutputs(r, opts); err != nil {
		return res, err
	}
	res.NotifyErrors = notifyOwners(ctx, c.kube, r, cfg, opts, plan)
	res.failed = len(res.NotifyErrors) > 0 && opts.Notify.Errors == FailOnError
	res.MetricsError = writeMetrics(ctx, r, opts)
	return res, nil
}

// complete fills what o leaves nil and gives the scan the run's clock and
// logger.
func (o Options) complete() Options {
	d := DefaultOptions()
	if o.Now == nil {
		o.Now = d.Now
	}
	if o.Logger == nil {
		o.Logger = d.Logger
	}
	if o.Out == nil {
		o.Out = d.Out
	}
	o.Scan.Now, o.Scan.Logger = o.Now, o.Logger
	return o
}

// clients are the run's clients besides the scan's own.
type clients struct {
	dynamic dynamic.Interface
	kube    kubernetes.Interface
}

func newClients(o Options) (clients, error) {
	if o.Scan.RESTConfig == nil {
		return clients{}, errors.New("run: no RESTConfig")
	}
	dyn, err := dynamic.NewForConfig(o.Scan.RESTConfig)
	if err != nil {
		return clients{}, fmt.Errorf("dynamic client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(o.Scan.RESTConfig)
	if err != nil {
		return clients{}, fmt.Errorf("kubernetes client: %w", err)
	}
	return clients{dynamic: dyn, kube: kube}, nil
}
