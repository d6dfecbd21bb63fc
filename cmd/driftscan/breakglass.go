package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/run"
)

// breakglassOptions are the flags shared by the breakglass commands.
type breakglassOptions struct {
	streams    streams
	kubeconfig kubeconfig
	from       string
	namespace  string
	argoNS     string
	clusters   []string
	flags      *pflag.FlagSet // the persistent flags, to ask which were given
	gitCache   string
	timeout    time.Duration
	now        func() time.Time
	params     string
	forge      config.Forge
	git        gitFlags

	restCfg *rest.Config
	dynamic dynamic.Interface
	kube    kubernetes.Interface
}

func newBreakglassCommand(s streams) *cobra.Command {
	o := &breakglassOptions{streams: s, now: time.Now}
	cmd := &cobra.Command{
		Use:   "breakglass",
		Short: "Pause GitOps reconciliation of one app with a deadline, and resume it",
		Long: `During an incident, stop Argo CD or Flux from reverting a live hotfix, with a
reason and a deadline, and restore exactly what was paused afterwards. This is
the only part of driftscan that writes to the cluster, and it writes only the
fields it names, as field manager driftscan-breakglass.`,
	}
	f := cmd.PersistentFlags()
	o.flags = f
	o.kubeconfig.bindFlags(f)
	f.StringVar(&o.from, "from", "argocd", "the reconciler: argocd (Application) or flux (Kustomization, else HelmRelease)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the reconciler object (default: --argocd-namespace, or flux-system for flux)")
	f.StringVar(&o.argoNS, "argocd-namespace", "argocd", "with --from argocd: Argo CD's own namespace (argocd-cm, AppProjects, a parent Application), when -n names another (applications in any namespace; without this flag, -n is Argo CD's own when it holds AppProjects)")
	f.StringArrayVar(&o.clusters, "argocd-cluster", nil, argoClusterUsage)
	f.StringVar(&o.gitCache, "git-cache", "", "folder for Git clones, for the scan of the app (default: the user cache folder)")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long (a write that times out says whether it landed)")
	addContractParams(f, &o.params)
	o.git.add(f)
	cmd.AddCommand(o.suspendCommand(), o.resumeCommand(), o.statusCommand())
	return cmd
}

func (o *breakglassOptions) complete(ctx context.Context) error {
	cfg, _, _, err := o.kubeconfig.load()
	if err != nil {
		return err
	}
	o.restCfg = cfg
	if o.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	if o.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if breakglass.DefaultNamespace(o.from) == "" {
		return fmt.Errorf("--from %q: want argocd or flux", o.from)
	}
	if o.namespace == "" {
		o.namespace = o.defaultNamespace()
	} else if o.from == discover.FromArgoCD && !o.flags.Changed("argocd-namespace") && o.controlPlane(ctx, o.namespace) {
		// -n alone names Argo CD's own namespace when it is one (Argo CD
		// installed elsewhere than argocd), else an application namespace
		// of the Argo CD in argocd.
		o.argoNS = o.namespace
	}
	return nil
}

// controlPlane reports whether namespace ns is an Argo CD's own: it holds
// AppProjects (Argo CD creates default at start), which live nowhere
// else. When that cannot be read, it is taken to be, as -n meant before
// applications in any namespace.
func (o *breakglassOptions) controlPlane(ctx context.Context, ns string) bool {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	list, err := o.dynamic.Resource(discover.AppProjects).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
	return err != nil || len(list.Items) > 0
}

// defaultNamespace is the reconciler object's namespace without -n:
// Argo CD's, or flux-system.
func (o *breakglassOptions) defaultNamespace() string {
	if o.from == discover.FromArgoCD {
		return o.argoNS
	}
	return breakglass.DefaultNamespace(o.from)
}

// again is the arguments that name app to another breakglass command: with
// -n when its namespace is not the default.
func (o *breakglassOptions) again(app string) string {
	if o.namespace != o.defaultNamespace() {
		return app + " -n " + o.namespace
	}
	return app
}

// discovery is how the commands find the source of t's app: in t's
// namespace, or for an Application outside Argo CD's (apps in any
// namespace) among every namespace's, with Argo CD's AppProjects and
// argocd-cm.
func (o *breakglassOptions) discovery(opts *discover.Options, t breakglass.Target) {
	opts.From, opts.Namespace, opts.ArgoClusters = o.from, t.Namespace, o.clusters
	if o.from == discover.FromArgoCD && t.Namespace != o.argoNS {
		opts.Namespace, opts.AllNamespaces = o.argoNS, true
	}
}

// begin completes the options, bounds the command by --timeout and finds
// the reconciler object of app.
func (o *breakglassOptions) begin(ctx context.Context, app string) (context.Context, context.CancelFunc, breakglass.Target, error) {
	if err := o.complete(ctx); err != nil {
		return nil, nil, breakglass.Target{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	t, err := breakglass.Find(ctx, o.dynamic, o.from, o.namespace, app)
	if err != nil {
		cancel()
		return nil, nil, breakglass.Target{}, err
	}
	return ctx, cancel, t, nil
}

// unbackported lists the drift of t's app that resuming would revert
// (run.Unbackported).
func (o *breakglassOptions) unbackported(ctx context.Context, t breakglass.Target) ([]string, error) {
	opts := run.DefaultUnbackportedOptions()
	o.discovery(&opts.Discover, t)
	opts.Scan.RESTConfig = o.restCfg
	if o.gitCache != "" {
		opts.Scan.GitCacheDir = o.gitCache
	}
	return run.Unbackported(ctx, o.dynamic, t, opts)
}

func (o *breakglassOptions) printChange(ch breakglass.Change, verb string) {
	prefix := ""
	if ch.DryRun {
		prefix = "(dry run) would have "
	}
	fmt.Fprintf(o.streams.Out, "%s%s %s:\n", prefix, verb, ch.Target)
	for _, f := range ch.Fields {
		fmt.Fprintf(o.streams.Out, "  %s\n", f)
	}
	fmt.Fprintf(o.streams.Out, "  patch (field manager %s): %s\n", breakglass.FieldManager, ch.Patch)
}

// settle waits until the reconciler has taken in the suspension and says
// whether a hand change is safe now (breakglass.Settle).
func (o *breakglassOptions) settle(ctx context.Context, ch breakglass.Change, wait time.Duration) {
	if wait <= 0 || ch.DryRun {
		return
	}
	s := breakglass.Settle(ctx, o.dynamic, ch, wait)
	if s.OK {
		fmt.Fprintf(o.streams.Out, "  %s\n", s.Message)
		return
	}
	fmt.Fprintf(o.streams.Err, "warning: %s\n", s.Message)
}

func (o *breakglassOptions) suspendCommand() *cobra.Command {
	opts := breakglass.DefaultSuspendOptions()
	var wait time.Duration
	cmd := &cobra.Command{
		Use:     "suspend APP --ttl DURATION --reason TEXT",
		Short:   "Pause automated sync of APP until now+ttl",
		Example: `  driftscan breakglass suspend payments --ttl 2h --reason "INC-4211 payment certs"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel, t, err := o.begin(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer cancel()
			if opts.Who, err = breakglass.WhoAmI(ctx, o.kube); err != nil {
				return fmt.Errorf("suspend %s: the audit annotation needs who you are: %w", t, err)
			}
			opts.Now, opts.ArgoNamespace = o.now, o.argoNS
			ch, err := breakglass.Suspend(ctx, o.dynamic, t, opts)
			if err != nil {
				return err
			}
			o.printChange(ch, "suspended")
			if err := o.lift(ctx, t, true, opts.DryRun); err != nil {
				return err
			}
			o.settle(ctx, ch, wait)
			if !ch.DryRun {
				fmt.Fprintf(o.streams.Out, "until %s. Carry the hotfix back to Git, then: driftscan breakglass resume %s\n", opts.Now().Add(opts.TTL).UTC().Format(time.RFC3339), o.again(args[0]))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Reason, "reason", "", "why (an incident or ticket); required")
	f.DurationVar(&opts.TTL, "ttl", 0, "how long to pause; required")
	f.DurationVar(&opts.MaxTTL, "max-ttl", opts.MaxTTL, "the longest --ttl allowed")
	f.BoolVar(&opts.DryRun, "dry-run", false, "show the change without making it")
	f.BoolVar(&opts.BackportPR, "backport-pr", false, "have the scheduled scan (scan --backport-prs, the chart's backportPullRequests) push the hotfix to a branch and open its pull request as soon as it is made")
	f.DurationVar(&wait, "wait", 30*time.Second, "wait up to this long until the reconciler has taken in the suspension, so that no sync it had begun reverts a change made next (0: do not wait)")
	return cmd
}

func (o *breakglassOptions) resumeCommand() *cobra.Command {
	var opts breakglass.ResumeOptions
	cmd := &cobra.Command{
		Use:   "resume APP",
		Short: "Restore exactly what suspend paused; refuses while pipeline or human drift is not in Git",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel, t, err := o.begin(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer cancel()
			var check run.ResumeCheck
			if !opts.Force {
				if check, err = o.checkResume(ctx, t); err != nil {
					return fmt.Errorf("cannot tell whether resuming would revert a hotfix (use --force to resume anyway): %w", err)
				}
				opts.Blocking, opts.OpenPullRequest = check.Blocking, check.OpenPullRequest()
			}
			ch, err := breakglass.Resume(ctx, o.dynamic, t, opts)
			if err != nil {
				return err
			}
			o.printChange(ch, "resumed")
			o.printResumeCheck(check, opts.Force)
			return o.lift(ctx, t, false, opts.DryRun)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "resume even though the next sync will revert live drift or the hotfix's pull request is still open")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show the change without making it")
	cmd.Flags().StringVar((*string)(&o.forge.Kind), "forge", "", "where the hotfix's pull request is: github, gitlab or gitea (default: detected from the app's repository)")
	cmd.Flags().StringVar(&o.forge.APIURL, "forge-api-url", "", "the forge's API URL (default: derived from the app's repository)")
	cmd.Flags().StringVar(&o.forge.TokenEnv, "forge-token-env", "", "environment variable with the forge token, to check the pull request (default "+config.DefaultForgeTokenEnv+")")
	return cmd
}

// checkResume scans the app of t and looks up its pull request.
func (o *breakglassOptions) checkResume(ctx context.Context, t breakglass.Target) (run.ResumeCheck, error) {
	s, err := breakglass.Read(ctx, o.dynamic, t)
	if err != nil {
		return run.ResumeCheck{}, err
	}
	opts := run.DefaultResumeCheckOptions()
	o.discovery(&opts.Discover, t)
	opts.Scan.RESTConfig, opts.Forge = o.restCfg, o.forge
	cfg := config.New()
	if err := o.git.apply(cfg); err != nil {
		return run.ResumeCheck{}, err
	}
	opts.Git = cfg.Git
	if o.gitCache != "" {
		opts.Scan.GitCacheDir = o.gitCache
	}
	return run.CheckResume(ctx, o.dynamic, t, s, opts)
}

// printResumeCheck says that resuming reverts nothing, and why.
func (o *breakglassOptions) printResumeCheck(c run.ResumeCheck, forced bool) {
	if forced {
		return
	}
	if pr := c.PullRequest; pr != nil {
		fmt.Fprintf(o.streams.Out, "pull request #%d %s is %s\n", pr.Number, pr.URL, pr.State)
	}
	if len(c.Blocking) == 0 {
		fmt.Fprintln(o.streams.Out, "Git matches live: resuming reverts nothing")
	}
}

func (o *breakglassOptions) statusCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "status [APP]",
		Short: "Every suspended app: who, why, time left, and the drift the suspension protects",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd.Context()); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			ns := o.namespace
			if all {
				ns = ""
			}
			list, err := breakglass.List(ctx, o.dynamic, ns, breakglass.Application, breakglass.Kustomization, breakglass.HelmRelease)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				list = slices.DeleteFunc(list, func(s breakglass.Suspension) bool { return s.Target.Name != args[0] })
			}
			return o.printStatus(ctx, list)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "suspended apps of every namespace (applications in any namespace)")
	return cmd
}

// printStatus writes a line per suspension, with the drift it protects,
// and fails when one is past its deadline.
func (o *breakglassOptions) printStatus(ctx context.Context, list []breakglass.Suspension) error {
	now := o.now()
	w := tabwriter.NewWriter(o.streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "APP\tBY\tREASON\tSINCE\tLEFT\tPROTECTED DRIFT")
	var expired int
	for _, s := range list {
		left := s.Left(now).Round(time.Minute).String()
		if s.Expired(now) {
			left, expired = "EXPIRED "+(-s.Left(now)).Round(time.Minute).String()+" ago", expired+1
		}
		drift := "-"
		if findings, err := o.unbackported(ctx, s.Target); err != nil {
			drift = "unknown: " + err.Error()
		} else if len(findings) > 0 {
			drift = strings.Join(findings, "; ")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Target, s.By, s.Reason, s.Since.Format(time.RFC3339), left, drift)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if expired > 0 {
		return errors.New("suspensions past their deadline: resume them, or suspend again with a new reason")
	}
	return nil
}
