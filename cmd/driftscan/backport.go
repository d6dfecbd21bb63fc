package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/backport"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
	"github.com/calricon/driftscan/source"
)

// backportOptions are the flags of `driftscan backport`; Complete and
// Validate turn them into a scan of one app and backport.Options.
type backportOptions struct {
	streams    streams
	kubeconfig kubeconfig

	configPath string
	path       string
	namespace  string
	repo       string
	branch     string
	reason     string
	output     string
	gitCache   string
	timeout    time.Duration
	now        func() time.Time

	// Filled by Complete.
	app     string
	cfg     *config.Config
	scan    scanner.Options
	restCfg *rest.Config
	opts    backport.Options
}

func newBackportCommand(s streams) *cobra.Command {
	o := &backportOptions{streams: s, now: time.Now}
	cmd := &cobra.Command{
		Use:   "backport APP --repo PATH (--config FILE | --path DIR)",
		Short: "Carry an app's live hotfixes back to Git, as one commit on a new branch",
		Long: `Scan APP, then for each pipeline or human finding write the live value into
the app's source in the Git working tree at --repo, so that Git matches the
fixed cluster: on a new branch, as one commit whose message lists each field,
its old and new value, who changed it and --reason. Nothing is pushed, and a
working tree with uncommitted changes is refused.

Plain YAML is edited in place (comments, order and formatting kept); a
kustomize overlay gets a strategic-merge patch next to its kustomization; a
Helm chart gets the value that renders the field, when one value maps to it
one to one, and a suggested patch file otherwise. Secret data is never
written.

Exit codes: 0 everything carried back (or nothing to do), 1 some findings
could not be carried back (listed with the reason), 2 an error; nothing was
written.`,
		Example: `  # During incident INC-4211, after a hotfix with kubectl
  driftscan backport web --config scan.yaml --repo . --reason "INC-4211 payment certs"

  # One folder, and a description for the pull request
  driftscan backport web --path deploy/web -n shop --repo . -o markdown`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.app = args[0]
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
	f.StringVar(&o.repo, "repo", "", "the Git working tree to write to (required)")
	f.StringVar(&o.branch, "branch", "", "the branch to create (default hotfix/APP-UTCTIMESTAMP)")
	f.StringVar(&o.reason, "reason", "", "why the cluster was changed (an incident, a ticket), for the commit message")
	f.StringVarP(&o.output, "output", "o", string(backport.FormatText), "output: text, or markdown (a pull request description)")
	f.StringVar(&o.configPath, "config", "", "scan config file that defines APP")
	f.StringVar(&o.path, "path", "", "APP's source folder (plain YAML, a kustomization or a chart), without a config file")
	f.StringVarP(&o.namespace, "namespace", "n", "", "with --path: namespace for objects that name none (default: the context's namespace)")
	f.StringVar(&o.kubeconfig.Path, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	f.StringVar(&o.kubeconfig.Context, "context", "", "kubeconfig context to use (default: the current context)")
	f.StringVar(&o.gitCache, "git-cache", "", "folder for Git clones, for apps whose source is a remote repository (default: the user cache folder)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	return cmd
}

// Complete loads the config and the kubeconfig and finds APP's source
// folder in the working tree.
func (o *backportOptions) Complete(ctx context.Context) error {
	switch {
	case o.configPath != "" && o.path != "":
		return errors.New("--config and --path cannot be used together")
	case o.configPath == "" && o.path == "":
		return errors.New("give --config FILE or --path DIR")
	case o.repo == "":
		return errors.New("--repo PATH is required: the Git working tree to write to")
	}
	restCfg, clusterName, ctxNamespace, err := o.kubeconfig.load()
	if err != nil {
		return err
	}
	restCfg.UserAgent = "driftscan/" + version
	o.restCfg = restCfg
	if o.configPath != "" {
		if o.cfg, err = config.Load(o.configPath); err != nil {
			return err
		}
	} else {
		if o.cfg, err = pathConfig(o.path, o.namespace, ctxNamespace); err != nil {
			return err
		}
		o.cfg.Apps[0].Name = o.app
	}
	i := slices.IndexFunc(o.cfg.Apps, func(a config.App) bool { return a.Name == o.app })
	if i < 0 {
		return fmt.Errorf("app %s: not in the config %s", o.app, o.configPath)
	}
	app := o.cfg.Apps[i]
	o.cfg.Apps = []config.App{app}

	o.scan = scanner.DefaultOptions()
	o.scan.RESTConfig = restCfg
	o.scan.Cluster = clusterName
	o.scan.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.gitCache != "" {
		o.scan.GitCacheDir = o.gitCache
	}

	// The scan reads the remote; backport writes the same path in the local
	// working tree, which must be a clone of it.
	loc, err := source.Resolve(ctx, o.cfg.Dir, app.Source, source.Options{WorkTree: o.repo})
	if err != nil {
		return fmt.Errorf("app %s: %w", o.app, err)
	}
	o.opts = backport.DefaultOptions()
	o.opts.Repo, o.opts.SourceDir = o.repo, loc.Dir
	o.opts.Namespace, o.opts.Helm, o.opts.Kustomize = app.Namespace, app.Source.Helm, app.Source.Kustomize
	o.opts.Branch, o.opts.Reason, o.opts.Now = o.branch, o.reason, o.now
	return nil
}

// Validate checks the flags against each other.
func (o *backportOptions) Validate() error {
	switch backport.Format(o.output) {
	case backport.FormatText, backport.FormatMarkdown:
		return nil
	}
	return fmt.Errorf("--output %q: want text or markdown", o.output)
}

// Run scans the app and carries its pipeline and human drift back to Git.
func (o *backportOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r, err := scanner.Scan(ctx, o.cfg, o.scan)
	if err != nil {
		return err
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("scan of app %s: %s", o.app, r.Errors[0])
	}
	app := r.Apps[0]
	for _, obj := range app.Objects {
		if obj.Status == report.Error {
			fmt.Fprintf(o.streams.Err, "warning: %s was not compared, so its drift is not carried back: %s\n", obj.Ref(), obj.Error)
		}
	}
	o.opts.KubeVersion, o.opts.APIVersions = capabilities(o.restCfg)
	res, err := backport.Run(ctx, app, o.opts)
	if err != nil {
		return err
	}
	if err := res.Write(o.streams.Out, backport.Format(o.output)); err != nil {
		return err
	}
	if res.Remaining() {
		return exitError{code: report.ExitDrift}
	}
	return nil
}

// capabilities are the cluster's version and group/versions, for Helm, as
// the scan gives them to the chart.
func capabilities(cfg *rest.Config) (string, []string) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", nil
	}
	var kubeVersion string
	if v, err := dc.ServerVersion(); err == nil {
		kubeVersion = v.GitVersion
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return kubeVersion, nil
	}
	var out []string
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			out = append(out, v.GroupVersion)
		}
	}
	slices.Sort(out)
	return kubeVersion, out
}
