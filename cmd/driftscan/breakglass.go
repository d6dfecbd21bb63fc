package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/scanner"
)

// breakglassOptions are the flags shared by the breakglass commands.
type breakglassOptions struct {
	streams    streams
	kubeconfig kubeconfig
	from       string
	namespace  string
	gitCache   string
	timeout    time.Duration
	now        func() time.Time

	restCfg *rest.Config
	dynamic dynamic.Interface
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
	f.StringVar(&o.kubeconfig.Path, "kubeconfig", "", "path to the kubeconfig file")
	f.StringVar(&o.kubeconfig.Context, "context", "", "kubeconfig context to use")
	f.StringVar(&o.from, "from", "argocd", "the reconciler: argocd (Application) or flux (Kustomization, else HelmRelease)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the reconciler object (default: argocd, or flux-system for flux)")
	f.StringVar(&o.gitCache, "git-cache", "", "folder for Git clones, for the scan of the app (default: the user cache folder)")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long (a write that times out says whether it landed)")
	cmd.AddCommand(o.suspendCommand(), o.resumeCommand(), o.statusCommand())
	return cmd
}

func (o *breakglassOptions) complete() error {
	cfg, _, _, err := o.kubeconfig.load()
	if err != nil {
		return err
	}
	o.restCfg = cfg
	if o.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	switch o.from {
	case discover.FromArgoCD:
		if o.namespace == "" {
			o.namespace = "argocd"
		}
	case discover.FromFlux:
		if o.namespace == "" {
			o.namespace = "flux-system"
		}
	default:
		return fmt.Errorf("--from %q: want argocd or flux", o.from)
	}
	return nil
}

// begin completes the options, bounds the command by --timeout and finds
// the reconciler object of app.
func (o *breakglassOptions) begin(ctx context.Context, app string) (context.Context, context.CancelFunc, breakglass.Target, error) {
	if err := o.complete(); err != nil {
		return nil, nil, breakglass.Target{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	t, err := o.target(ctx, app)
	if err != nil {
		cancel()
		return nil, nil, breakglass.Target{}, err
	}
	return ctx, cancel, t, nil
}

// target finds the reconciler object of app.
func (o *breakglassOptions) target(ctx context.Context, app string) (breakglass.Target, error) {
	candidates := []schema.GroupVersionResource{breakglass.Application}
	if o.from == discover.FromFlux {
		candidates = []schema.GroupVersionResource{breakglass.Kustomization, breakglass.HelmRelease}
	}
	for _, gvr := range candidates {
		_, err := o.dynamic.Resource(gvr).Namespace(o.namespace).Get(ctx, app, metav1.GetOptions{})
		if err == nil {
			return breakglass.Target{Resource: gvr, Namespace: o.namespace, Name: app}, nil
		}
	}
	return breakglass.Target{}, fmt.Errorf("app %s: no %s named %s in namespace %s", app, map[string]string{"argocd": "Application", "flux": "Kustomization or HelmRelease"}[o.from], app, o.namespace)
}

// whoAmI asks the API server who the kubeconfig identity is.
func (o *breakglassOptions) whoAmI(ctx context.Context) string {
	cs, err := kubernetes.NewForConfig(o.restCfg)
	if err != nil {
		return "unknown"
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return "unknown"
	}
	return r.Status.UserInfo.Username
}

// unbackported scans app and returns its pipeline and human findings that
// are not ignored: the next sync would revert them.
func (o *breakglassOptions) unbackported(ctx context.Context, app string) ([]string, error) {
	dopts := discover.DefaultOptions()
	dopts.From, dopts.Namespace, dopts.ServerURL = o.from, o.namespace, o.restCfg.Host
	res, err := discover.Discover(ctx, o.dynamic, dopts)
	if err != nil {
		return nil, err
	}
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Appliers: config.DefaultAppliers}
	for _, a := range res.Apps {
		if a.Name == app || strings.HasPrefix(a.Name, app+"-") {
			cfg.Apps = append(cfg.Apps, a)
		}
	}
	for _, r := range res.Ignore {
		if r.App == app {
			cfg.Ignore = append(cfg.Ignore, r)
		}
	}
	if len(cfg.Apps) == 0 {
		return nil, fmt.Errorf("app %s: discovery found no source to scan", app)
	}
	sopts := scanner.DefaultOptions()
	sopts.RESTConfig = o.restCfg
	if o.gitCache != "" {
		sopts.GitCacheDir = o.gitCache
	}
	r, err := scanner.Scan(ctx, cfg, sopts)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range r.Apps {
		if a.Error != "" {
			return nil, fmt.Errorf("scan of app %s: %s", a.Name, a.Error)
		}
		out = append(out, breakglass.Blocking(a)...)
	}
	return out, nil
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

func (o *breakglassOptions) suspendCommand() *cobra.Command {
	opts := breakglass.DefaultSuspendOptions()
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
			opts.Who, opts.Now = o.whoAmI(ctx), o.now
			ch, err := breakglass.Suspend(ctx, o.dynamic, t, opts)
			if err != nil {
				return err
			}
			o.printChange(ch, "suspended")
			if !ch.DryRun {
				fmt.Fprintf(o.streams.Out, "until %s. Carry the hotfix back to Git, then: driftscan breakglass resume %s\n", opts.Now().Add(opts.TTL).UTC().Format(time.RFC3339), args[0])
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Reason, "reason", "", "why (an incident or ticket); required")
	f.DurationVar(&opts.TTL, "ttl", 0, "how long to pause; required")
	f.DurationVar(&opts.MaxTTL, "max-ttl", opts.MaxTTL, "the longest --ttl allowed")
	f.BoolVar(&opts.DryRun, "dry-run", false, "show the change without making it")
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
			if !opts.Force {
				if opts.Blocking, err = o.unbackported(ctx, args[0]); err != nil {
					return fmt.Errorf("cannot tell whether resuming would revert a hotfix (use --force to resume anyway): %w", err)
				}
			}
			ch, err := breakglass.Resume(ctx, o.dynamic, t, opts)
			if err != nil {
				return err
			}
			o.printChange(ch, "resumed")
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "resume even though the next sync will revert live drift")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show the change without making it")
	return cmd
}

func (o *breakglassOptions) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status [APP]",
		Short: "Every suspended app: who, why, time left, and the drift the suspension protects",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			list, err := breakglass.List(ctx, o.dynamic, o.namespace, breakglass.Application, breakglass.Kustomization, breakglass.HelmRelease)
			if err != nil {
				return err
			}
			now := o.now()
			w := tabwriter.NewWriter(o.streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "APP\tBY\tREASON\tSINCE\tLEFT\tPROTECTED DRIFT")
			var expired int
			for _, s := range list {
				if len(args) == 1 && s.Target.Name != args[0] {
					continue
				}
				left := s.Left(now).Round(time.Minute).String()
				if s.Expired(now) {
					left, expired = "EXPIRED "+(-s.Left(now)).Round(time.Minute).String()+" ago", expired+1
				}
				drift := "-"
				if findings, err := o.unbackported(ctx, s.Target.Name); err != nil {
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
		},
	}
}
