package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
	"github.com/calricon/driftscan/shard"
)

// scanOptions are the flags of `driftscan scan`; Complete and Validate turn
// them into a config.Config and scanner.Options.
type scanOptions struct {
	streams    streams
	kubeconfig kubeconfig

	configPath string
	path       string
	namespace  string
	apps       []string
	outputs    []string
	failOn     string
	wide       bool
	quiet      bool
	extra      bool
	autoResume bool
	qps        float32
	burst      int
	timeout    time.Duration
	gitCache   string
	gitMaxSize string
	maxIgnores int
	logLevel   string
	logFormat  string
	ownerLabel string
	cluster    string
	shardSpec  string
	discover   discoverFlags
	notify     notifyFlags
	metrics    metricsFlags

	// Filled by Complete.
	cfg     *config.Config
	scan    scanner.Options
	outs    []report.Output
	fail    report.FailOn
	logger  *slog.Logger
	outTerm bool
	errTerm bool
	restCfg *rest.Config
	shard   *shard.Spec
	// deadline is --timeout from the start: discovery and the scan share it.
	deadline time.Time
}

func newScanCommand(s streams) *cobra.Command {
	o := &scanOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "scan (--config FILE | --path DIR)",
		Short: "Compare Git with the live cluster and report drift field by field",
		Long: `Render each app's desired state from Git, read the cluster once per kind and
namespace, compare field by field and name who made each difference.

The scan only gets and lists; it never writes to the cluster.`,
		Example: `  # Scan the apps of a config file, a table on the terminal
  driftscan scan --config scan.yaml

  # One folder, in CI: JSON and SARIF files, fail only on unsanctioned drift
  driftscan scan --path deploy/ --namespace shop -o json=drift.json -o sarif=drift.sarif --fail-on human,unknown`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(cmd.Context()); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "scan config file (apiVersion driftscan.dev/v1alpha1, kind ScanConfig)")
	f.StringVar(&o.path, "path", "", "scan one folder of manifests, a kustomization or a chart, without a config file")
	f.StringVarP(&o.namespace, "namespace", "n", "", "with --path: namespace for objects that name none (default: the context's namespace)")
	f.StringArrayVar(&o.apps, "app", nil, "scan only this app (repeatable)")
	f.StringVar(&o.kubeconfig.Path, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	f.StringVar(&o.kubeconfig.Context, "context", "", "kubeconfig context to use (default: the current context)")
	f.StringArrayVarP(&o.outputs, "output", "o", nil, "output FORMAT or FORMAT=FILE, repeatable: "+formatNames()+" (default: table on a terminal, json otherwise)")
	f.StringVar(&o.failOn, "fail-on", "all", "exit 1 only for drift of these classes (comma-separated: webhook,operator,pipeline,human,unknown), 'all' or 'none'; add 'warning' to exit 1 also when the scan lost fidelity (report warnings)")
	f.BoolVar(&o.wide, "wide", false, "show long values whole in the table")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line")
	f.BoolVar(&o.extra, "extra", false, "also report live objects with an app's tracking label that are not in Git")
	f.BoolVar(&o.autoResume, "auto-resume", false, "resume a breakglass suspension past its deadline when the app has no pipeline or human drift left that Git lacks")
	f.Float32Var(&o.qps, "qps", 20, "maximum requests per second to the API server")
	f.IntVar(&o.burst, "burst", 40, "maximum burst of requests to the API server")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long from the start, discovery included: what finished is still reported and what was notified saved (the chart sets it below the Job's activeDeadlineSeconds)")
	f.StringVar(&o.gitCache, "git-cache", "", "folder for Git clones (default: the user cache folder)")
	addGitMaxSize(f, &o.gitMaxSize)
	f.IntVar(&o.maxIgnores, "max-ignores-per-app", 0, "flag apps with more ignore rules than this (0: no cap)")
	f.StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	f.StringVar(&o.logFormat, "log-format", "auto", "log format: text, json, or auto (text on a terminal, json otherwise)")
	f.StringVar(&o.ownerLabel, "owner-label", "", "label or annotation on live objects (and, with --from, on reconciler objects) that names the owning team")
	f.StringVar(&o.cluster, "cluster-name", "", "name of the cluster in reports and notifications (default: the kubeconfig context, or the server URL)")
	f.StringVar(&o.shardSpec, "shard", "", "scan only the apps whose name hashes to shard i of N (i/N, as an Indexed Job's JOB_COMPLETION_INDEX)")
	o.discover.add(f)
	o.notify.add(f)
	o.metrics.add(f)
	return cmd
}

func formatNames() string {
	names := make([]string, len(report.Formats))
	for i, f := range report.Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Complete loads the config and the kubeconfig and fills in defaults.
func (o *scanOptions) Complete(ctx context.Context) error {
	o.deadline = time.Now().Add(o.timeout)
	o.outTerm, o.errTerm = isTerminal(o.streams.Out), isTerminal(o.streams.Err)
	logger, err := newLogger(o.streams.Err, o.logLevel, o.logFormat, o.errTerm)
	if err != nil {
		return err
	}
	o.logger = logger

	switch {
	case o.configPath != "" && o.path != "":
		return errors.New("--config and --path cannot be used together")
	case o.configPath == "" && o.path == "" && o.discover.from == "":
		return errors.New("give --config FILE, --path DIR or --from argocd|flux")
	}
	restCfg, clusterName, ctxNamespace, err := o.kubeconfig.load()
	if err != nil {
		return err
	}
	restCfg.QPS, restCfg.Burst = o.qps, o.burst
	restCfg.UserAgent = "driftscan/" + version
	o.restCfg = restCfg
	if o.cluster != "" {
		clusterName = o.cluster
	}

	switch {
	case o.configPath != "":
		if o.cfg, err = config.Load(o.configPath); err != nil {
			return err
		}
	case o.path != "":
		if o.cfg, err = pathConfig(o.path, o.namespace, ctxNamespace); err != nil {
			return err
		}
	default:
		o.cfg = &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Appliers: config.DefaultAppliers}
	}
	if o.discover.from != "" || o.discover.importArgo {
		ctx, cancel := context.WithDeadline(ctx, o.deadline)
		defer cancel()
		skipped, err := o.discover.apply(ctx, restCfg, o.ownerLabel, o.cfg)
		if err != nil {
			return err
		}
		for _, s := range skipped {
			o.logger.Info("skipped", "reason", s)
		}
	}
	if o.shardSpec != "" {
		sh, err := shard.ParseSpec(o.shardSpec)
		if err != nil {
			return fmt.Errorf("--shard: %w", err)
		}
		o.shard = &sh
		var kept []config.App
		for _, a := range o.cfg.Apps {
			if sh.Owns(a.Name) {
				kept = append(kept, a)
			}
		}
		o.cfg.Apps = kept
	}
	if len(o.apps) > 0 {
		if err := o.selectApps(); err != nil {
			return err
		}
	}

	o.scan = scanner.DefaultOptions()
	o.scan.RESTConfig = restCfg
	o.scan.Cluster = clusterName
	o.scan.Extra = o.extra
	o.scan.MaxIgnoresPerApp = o.maxIgnores
	o.scan.Logger = o.logger
	o.scan.OwnerLabel = o.ownerLabel
	if o.gitCache != "" {
		o.scan.GitCacheDir = o.gitCache
	}
	if o.scan.GitMaxBytes, err = parseGitMaxSize(o.gitMaxSize); err != nil {
		return err
	}

	specs := o.outputs
	if len(specs) == 0 {
		if o.outTerm {
			specs = []string{string(report.FormatTable)}
		} else {
			specs = []string{string(report.FormatJSON)}
		}
	}
	if o.outs, err = report.ParseOutputs(specs); err != nil {
		return err
	}
	o.fail, err = report.ParseFailOn(o.failOn)
	return err
}

// pathConfig is the config of `--path DIR`: one app named after the folder.
func pathConfig(dir, namespace, ctxNamespace string) (*config.Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("--path: %w", err)
	}
	if namespace == "" {
		namespace = ctxNamespace
	}
	cfg := &config.Config{
		APIVersion: config.APIVersion, Kind: config.Kind,
		Appliers: config.DefaultAppliers, Dir: abs,
		Apps: []config.App{{Name: filepath.Base(abs), Namespace: namespace, Source: config.Source{Path: "."}}},
	}
	return cfg, nil
}

// selectApps keeps only the apps named by --app.
func (o *scanOptions) selectApps() error {
	want := map[string]bool{}
	for _, a := range o.apps {
		want[a] = true
	}
	var kept []config.App
	for _, a := range o.cfg.Apps {
		if want[a.Name] {
			kept = append(kept, a)
			delete(want, a.Name)
		}
	}
	for a := range want {
		return fmt.Errorf("--app %s: no such app in the config", a)
	}
	o.cfg.Apps = kept
	return nil
}

// Validate checks the options against each other.
func (o *scanOptions) Validate() error {
	if len(o.cfg.Apps) == 0 && o.shard == nil {
		return errors.New("no apps to scan")
	}
	if err := o.notify.validate(o.cfg); err != nil {
		return err
	}
	if o.qps <= 0 || o.burst <= 0 {
		return errors.New("--qps and --burst must be positive")
	}
	return nil
}

// Run scans and writes every requested output. The exit code is 1 for drift
// of the --fail-on classes and 2 when part of the scan failed.
func (o *scanOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithDeadline(ctx, o.deadline)
	defer cancel()
	if !o.quiet && o.outTerm && o.errTerm {
		p := newProgressLine(o.streams.Err)
		defer p.done()
		o.scan.Progress = p.update
	}
	r, err := scanner.Scan(ctx, o.cfg, o.scan)
	if err != nil {
		return err
	}
	o.attachDiscoveryErrors(r)
	if err := o.checkSuspensions(ctx, r); err != nil {
		r.Errors = append(r.Errors, err.Error())
		r.Finalize()
	}
	if err := o.write(r); err != nil {
		return err
	}
	var failed []error
	if errs := o.notify.run(ctx, r, o.cfg, o.restCfg, o.streams.Out, o.logger); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintf(o.streams.Err, "notify: %v\n", e)
		}
		if o.notify.errors == "fail" {
			failed = append(failed, errs...)
		}
	}
	if err := o.metrics.run(ctx, r, o.shard); err != nil {
		fmt.Fprintf(o.streams.Err, "error: %v\n", err)
		failed = append(failed, err)
	}
	code := r.ExitCodeFor(o.fail)
	if len(failed) > 0 {
		code = report.ExitError
	}
	if code != report.ExitOK {
		for _, e := range r.Errors {
			fmt.Fprintf(o.streams.Err, "error: %s\n", e)
		}
		return exitError{code: code}
	}
	return nil
}

// attachDiscoveryErrors puts what discovery could not reproduce on the app
// it concerns, or on the scan, so it shows in the report and the exit code.
func (o *scanOptions) attachDiscoveryErrors(r *report.Report) {
	if len(o.discover.discoveryErrors) == 0 {
		return
	}
	apps := map[string]*report.App{}
	for i := range r.Apps {
		apps[r.Apps[i].Name] = &r.Apps[i]
	}
	for _, e := range o.discover.discoveryErrors {
		if a, ok := apps[e.App]; ok && e.App != "" {
			if a.Error != "" {
				a.Error += "; "
			}
			a.Error += e.Error()
			continue
		}
		r.Errors = append(r.Errors, e.Error())
	}
	r.Finalize()
}

// write writes the report in every requested format: files atomically, the
// rest to stdout.
func (o *scanOptions) write(r *report.Report) error {
	opts := report.DefaultWriteOptions()
	opts.Wide = o.wide
	var errs []error
	for _, out := range o.outs {
		wo := opts
		if out.File == "" {
			wo.Color = out.Format == report.FormatTable && report.ColorFor(asFile(o.streams.Out))
			if err := report.Write(o.streams.Out, out.Format, r, wo); err != nil {
				errs = append(errs, fmt.Errorf("write %s: %w", out.Format, err))
			}
			continue
		}
		err := report.WriteFileAtomic(out.File, func(w io.Writer) error { return report.Write(w, out.Format, r, wo) })
		if err != nil {
			errs = append(errs, fmt.Errorf("write %s to %s: %w", out.Format, out.File, err))
		}
	}
	return errors.Join(errs...)
}

func asFile(w io.Writer) *os.File {
	if f, ok := w.(*os.File); ok {
		return f
	}
	return nil
}

// newLogger builds the slog logger: text on a terminal, JSON in a cluster.
func newLogger(w io.Writer, level, format string, terminal bool) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "auto":
		if terminal {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text, json or auto", format)
}

// checkSuspensions marks apps paused by breakglass, reports the suspensions
// past their deadline as drift, and with --auto-resume resumes those whose
// app has no drift left that the next sync would revert.
func (o *scanOptions) checkSuspensions(ctx context.Context, r *report.Report) error {
	gitops := false
	for _, a := range r.Apps {
		gitops = gitops || a.GitOps != nil
	}
	if !gitops {
		return nil
	}
	client, err := dynamic.NewForConfig(o.restCfg)
	if err != nil {
		return err
	}
	// Only where the apps' reconciler objects live: with the chart's
	// rbac.scope: namespaces a cluster-wide LIST is forbidden.
	list, warnings, err := breakglass.ListForApps(ctx, client, r.Apps)
	r.Warnings = append(r.Warnings, warnings...)
	if err != nil {
		return fmt.Errorf("breakglass suspensions: %w", err)
	}
	expired := breakglass.Annotate(r, list, time.Now())
	if !o.autoResume {
		return nil
	}
	var errs []error
	for i := range r.Apps {
		app := &r.Apps[i]
		s, ok := expired[app.Name]
		if !ok {
			continue
		}
		if blocking := breakglass.Blocking(*app); len(blocking) > 0 {
			o.logger.Warn("not resuming an expired suspension: the next sync would revert drift", "app", app.Name, "findings", len(blocking))
			continue
		}
		if _, err := breakglass.Resume(ctx, client, s.Target, breakglass.ResumeOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("auto-resume %s: %w", app.Name, err))
			continue
		}
		app.Breakglass.Resumed = true
		kept := app.Objects[:0]
		for _, obj := range app.Objects {
			if obj.Kind+"/"+obj.Namespace+"/"+obj.Name != s.Target.String() || obj.Status != report.Drifted {
				kept = append(kept, obj)
			}
		}
		app.Objects = kept
	}
	r.Finalize()
	return errors.Join(errs...)
}

// addGitMaxSize adds --git-max-size, which scan and doctor share: both fetch
// the apps' Git sources.
func addGitMaxSize(f *pflag.FlagSet, v *string) {
	f.StringVar(v, "git-max-size", "1Gi", "largest checked-out Git tree to scan (the sum of its files), as a quantity: 200Mi, 2Gi; 0 for no limit")
}

// parseGitMaxSize reads --git-max-size.
func parseGitMaxSize(v string) (int64, error) {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, fmt.Errorf("--git-max-size %q: want a size like 500Mi or 2Gi", v)
	}
	return q.Value(), nil
}
