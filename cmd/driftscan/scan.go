package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/run"
)

// scanOptions are the flags of `driftscan scan`; Complete and Validate turn
// them into a config.Config and run.Options.
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
	explain    bool
	autoResume bool
	backportPR bool
	qps        float32
	burst      int
	chunkSize  string
	timeout    time.Duration
	renderTime time.Duration
	kustRemote bool
	gitCache   string
	cacheDir   string
	noCache    bool
	gitMaxSize string
	maxIgnores int
	logLevel   string
	logFormat  string
	ownerLabel string
	cluster    string
	shardSpec  string
	shardBy    string
	auditLogs  []string
	discover   discoverFlags
	notify     notifyFlags
	metrics    run.Metrics
	params     string

	// Filled by Complete.
	cfg     *config.Config
	run     run.Options
	fail    report.FailOn
	outTerm bool
	errTerm bool
	// progress is the progress line on a terminal's stderr, nil without one.
	progress *progressLine
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
			return completeValidateRun(cmd.Context(), o)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *scanOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.configPath, "config", "", "scan config file (apiVersion driftscan.dev/v1alpha1, kind ScanConfig)")
	f.StringVar(&o.path, "path", "", "scan one folder of manifests, a kustomization or a chart, without a config file")
	f.StringVarP(&o.namespace, "namespace", "n", "", "with --path: namespace for objects that name none (default: the context's namespace)")
	f.StringArrayVar(&o.apps, "app", nil, "scan only this app (repeatable)")
	o.kubeconfig.bindFlags(f)
	f.StringArrayVarP(&o.outputs, "output", "o", nil, "output FORMAT or FORMAT=FILE, repeatable: "+formatNames()+" (default: table on a terminal, json otherwise)")
	f.StringVar(&o.failOn, "fail-on", "all", "exit 1 only for drift of these classes (comma-separated: webhook,operator,pipeline,human,unknown), 'all' or 'none'; add 'violation' to exit 1 for every contract violation, 'warning' to exit 1 also when the scan lost fidelity (report warnings)")
	f.BoolVar(&o.wide, "wide", false, "show long values whole in the table and ignore the terminal's width")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line")
	f.BoolVar(&o.extra, "extra", false, "also report live objects Git no longer declares that an app's reconciler tracks as the app's (what it would prune)")
	f.BoolVar(&o.explain, "explain-dismissed", false, "list every difference dismissed as no drift (server defaults, zero values, unstable renders, reconciler metadata, built-ins), with the reason; the counts are always in the report's stats")
	f.BoolVar(&o.backportPR, "backport-prs", false, "for apps suspended with `breakglass suspend --backport-pr`: once the hotfix is made, push it to a branch of the app's repository and open its pull request (or update it), with the config's git credentials and the forge token of forge.tokenEnv (a write to Git and the forge)")
	f.BoolVar(&o.autoResume, "auto-resume", false, "resume a breakglass suspension past its deadline when the app has no pipeline or human drift left that Git lacks")
	f.StringVar(&o.params, "contract-params", "", "NAMESPACE/NAME of the contract policies' break-glass ConfigMap: remove from it the suspensions that ended or expired (a write, like --auto-resume; default: leave it alone)")
	f.Float32Var(&o.qps, "qps", 20, "maximum requests per second to the API server")
	f.IntVar(&o.burst, "burst", 40, "maximum burst of requests to the API server")
	f.StringVar(&o.chunkSize, "chunk-size", "auto", "objects per LIST page, or 0 to list whole; auto lists whole from an API server of v1.34 or later (which serves whole lists from its watch cache) and in pages of 500 from an older one")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long from the start, discovery included: what finished is still reported and what was notified saved (the chart sets it below the Job's activeDeadlineSeconds)")
	f.DurationVar(&o.renderTime, "render-timeout", run.DefaultOptions().Scan.RenderTimeout, "give up rendering one app after this long (a chart that loops forever): it is an error in the report and the other apps are scanned; 0 for no bound but --timeout")
	f.BoolVar(&o.kustRemote, "kustomize-remote", false, "let kustomizations fetch remote resources and bases (http(s) URLs, Git repositories) within --render-timeout; by default they render offline and naming one is an app error")
	f.StringVar(&o.gitCache, "git-cache", "", "folder for Git clones and charts from Helm repositories (default: the user cache folder)")
	f.StringVar(&o.cacheDir, "cache-dir", run.DefaultCacheDir(), "folder where a scan keeps what spares the next scan of the same apps most of its work: which objects were in sync, unchanged since, and the parsed manifests (no object's values); see docs/cache.md")
	f.BoolVar(&o.noCache, "no-cache", false, "compare every object and parse every manifest, and keep nothing for the next scan")
	addGitMaxSize(f, &o.gitMaxSize)
	f.IntVar(&o.maxIgnores, "max-ignores-per-app", 0, "flag apps with more ignore rules than this (0: no cap)")
	f.StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	f.StringVar(&o.logFormat, "log-format", "auto", "log format: text, json, or auto (text on a terminal, json otherwise)")
	f.StringVar(&o.ownerLabel, "owner-label", "", "label or annotation on live objects (and, with --from, on reconciler objects) that names the owning team")
	f.StringVar(&o.cluster, "cluster-name", "", "name of the cluster in reports and notifications (default: the kubeconfig context, or the server URL)")
	f.StringVar(&o.shardSpec, "shard", "", "scan only the apps of shard i of N (i/N, as an Indexed Job's JOB_COMPLETION_INDEX); see --shard-by")
	f.StringVar(&o.shardBy, "shard-by", string(run.ShardByNamespace), "how --shard splits the apps: namespace (whole namespaces per shard, so each shard lists only its own) or app (by the hash of each app's name)")
	f.StringArrayVar(&o.auditLogs, "audit-log", nil, "name the user behind each finding from this Kubernetes audit log: a file, a folder of rotated files (gzip too), an EKS or GKE export; - for stdin (repeatable; adds to the config's audit.files)")
	f.StringVar(&o.metrics.Pushgateway, "pushgateway", "", "push Prometheus metrics to this Pushgateway at the end of the run")
	f.StringVar(&o.metrics.File, "metrics-file", "", "write Prometheus metrics to this file (node-exporter's textfile collector format)")
	o.discover.add(f)
	o.notify.add(f)
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

// Complete loads the config and the kubeconfig and builds the run's options.
func (o *scanOptions) Complete() error {
	o.outTerm, o.errTerm = isTerminal(o.streams.Out), isTerminal(o.streams.Err)
	logTo, out := o.streams.Err, o.streams.Out
	if !o.quiet && o.errTerm {
		o.progress = newProgressLine(o.streams.Err)
		logTo, out = o.progress, o.progress.erasingBefore(out)
	}
	logger, err := newLogger(logTo, o.logLevel, o.logFormat, o.errTerm)
	if err != nil {
		return err
	}
	if err := o.checkSources(); err != nil {
		return err
	}
	restCfg, clusterName, ctxNamespace, err := o.kubeconfig.load()
	if err != nil {
		return err
	}
	restCfg.QPS, restCfg.Burst = o.qps, o.burst
	if o.cfg, err = loadConfig(o.configPath, o.path, o.namespace, ctxNamespace); err != nil {
		return err
	}
	// Credentials are bound before discovery adds apps that tenants name.
	if err := o.discover.git.apply(o.cfg); err != nil {
		return err
	}
	if o.cluster != "" {
		clusterName = o.cluster
	}
	o.run = run.DefaultOptions()
	o.run.Logger, o.run.Out = logger, out
	o.run.Scan.RESTConfig, o.run.Scan.Cluster = restCfg, clusterName
	if err := o.completeScan(); err != nil {
		return err
	}
	if o.run.Outputs, err = report.ParseOutputs(o.outputSpecs()); err != nil {
		return err
	}
	o.fail, err = report.ParseFailOn(o.failOn)
	return err
}

// checkSources refuses flags that name no apps, or two sources of them.
func (o *scanOptions) checkSources() error {
	switch {
	case o.configPath != "" && o.path != "":
		return errors.New("--config and --path cannot be used together")
	case o.configPath == "" && o.path == "" && o.discover.from == "":
		return errors.New("give --config FILE, --path DIR or --from argocd|flux")
	}
	return nil
}

// completeScan fills what the flags say about the scan and the run.
func (o *scanOptions) completeScan() error {
	s := &o.run.Scan
	s.Extra, s.MaxIgnoresPerApp, s.OwnerLabel = o.extra, o.maxIgnores, o.ownerLabel
	s.AuditLogs, s.AuditStdin = o.auditLogs, o.streams.In
	s.ExplainDismissed = o.explain
	s.RenderTimeout, s.KustomizeRemote = o.renderTime, o.kustRemote
	var err error
	if s.PageSize, err = parseChunkSize(o.chunkSize); err != nil {
		return err
	}
	if o.gitCache != "" {
		s.GitCacheDir = o.gitCache
	}
	if !o.noCache {
		o.run.CacheDir = o.cacheDir
	}
	if s.GitMaxBytes, err = parseGitMaxSize(o.gitMaxSize); err != nil {
		return err
	}
	if o.run.Discover, err = o.discover.options(o.ownerLabel); err != nil {
		return err
	}
	o.run.Apps, o.run.Shard, o.run.ShardBy, o.run.AutoResume = o.apps, o.shardSpec, run.ShardBy(o.shardBy), o.autoResume
	if o.backportPR {
		o.run.BackportPRs = &run.ScheduledBackport{}
	}
	if o.params != "" {
		ref, err := parseParams(o.params)
		if err != nil {
			return err
		}
		o.run.ContractParams = &ref
	}
	o.run.Notify, o.run.Metrics = o.notify.options(), o.metrics
	o.run.Write.Wide = o.wide
	o.run.Write.Color = report.ColorFor(asFile(o.streams.Out))
	o.run.Write.Width = report.WidthFor(asFile(o.streams.Out))
	return nil
}

// outputSpecs are the -o flags: a table on a terminal, JSON otherwise.
func (o *scanOptions) outputSpecs() []string {
	switch {
	case len(o.outputs) > 0:
		return o.outputs
	case o.outTerm:
		return []string{string(report.FormatTable)}
	}
	return []string{string(report.FormatJSON)}
}

// Validate checks the options against each other and the config.
func (o *scanOptions) Validate() error {
	if o.qps <= 0 || o.burst <= 0 {
		return errors.New("--qps and --burst must be positive")
	}
	if o.renderTime < 0 {
		return errors.New("--render-timeout must not be negative")
	}
	return o.run.Validate(o.cfg)
}

// Run runs the scan within --timeout, discovery included. The exit code is
// 1 for drift of the --fail-on classes and 2 when part of the run failed.
func (o *scanOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if o.progress != nil {
		defer o.progress.done()
		o.run.Scan.Progress = o.progress.update
	}
	res, err := run.Scan(ctx, o.cfg, o.run)
	if err != nil {
		return err
	}
	for _, e := range res.NotifyErrors {
		fmt.Fprintf(o.streams.Err, "notify: %v\n", e)
	}
	if res.MetricsError != nil {
		fmt.Fprintf(o.streams.Err, "error: %v\n", res.MetricsError)
	}
	code := res.ExitCode(o.fail)
	if code == report.ExitOK {
		return nil
	}
	for _, e := range res.Report.Errors {
		fmt.Fprintf(o.streams.Err, "error: %s\n", e)
	}
	return exitError{code: code}
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
	switch {
	case format == "text", format == "auto" && terminal:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case format == "json", format == "auto":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text, json or auto", format)
}

// addGitMaxSize adds --git-max-size, which scan and doctor share: both fetch
// the apps' Git sources.
func addGitMaxSize(f *pflag.FlagSet, v *string) {
	f.StringVar(v, "git-max-size", "1Gi", "largest checked-out Git tree to scan (the sum of its files), as a quantity: 200Mi, 2Gi; 0 for no limit")
}

// parseChunkSize reads --chunk-size as scanner.Options.PageSize takes it:
// auto is 0 (the scan chooses), 0 is negative (whole lists).
func parseChunkSize(v string) (int64, error) {
	if v == "auto" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil || n < 0:
		return 0, fmt.Errorf("--chunk-size %q: want auto, 0 (whole lists) or a number of objects", v)
	case n == 0:
		return -1, nil
	}
	return n, nil
}

// parseGitMaxSize reads --git-max-size.
func parseGitMaxSize(v string) (int64, error) {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, fmt.Errorf("--git-max-size %q: want a size like 500Mi or 2Gi", v)
	}
	return q.Value(), nil
}
