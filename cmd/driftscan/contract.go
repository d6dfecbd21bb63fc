package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/run"
	"github.com/calricon/driftscan/scanner"
)

// contractOptions are the flags shared by the contract commands.
type contractOptions struct {
	streams    streams
	kubeconfig kubeconfig
	configPath string
	timeout    time.Duration

	cfg *config.Config
}

func newContractCommand(s streams) *cobra.Command {
	o := &contractOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "contract",
		Short: "Show, check and enforce the live-change contracts of a config",
		Long: `A contract says, for a group of namespaces, who may change live state and how
(the contracts: section of the scan config). Every scan judges each finding
against it; these commands print the contracts as a runbook table, check them
against the cluster, and write the ValidatingAdmissionPolicies that make the
API server enforce them.`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.configPath, "config", "", "scan config file with a contracts: section (required)")
	f.StringVar(&o.kubeconfig.Path, "kubeconfig", "", "path to the kubeconfig file")
	f.StringVar(&o.kubeconfig.Context, "context", "", "kubeconfig context to use")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	cmd.AddCommand(o.showCommand(), o.checkCommand(), o.admissionCommand())
	return cmd
}

func (o *contractOptions) load() error {
	if o.configPath == "" {
		return errors.New("--config is required")
	}
	cfg, err := config.Load(o.configPath)
	if err != nil {
		return err
	}
	if len(cfg.Contracts) == 0 {
		return fmt.Errorf("config %s has no contracts", o.configPath)
	}
	o.cfg = cfg
	return nil
}

func (o *contractOptions) showCommand() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:     "show --config FILE [-o table|markdown]",
		Short:   "Print the contracts as a table a team can put in its runbook",
		Example: `  driftscan contract show --config scan.yaml -o markdown >> RUNBOOK.md`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.load(); err != nil {
				return err
			}
			switch format {
			case "table":
				return contract.WriteTable(o.streams.Out, o.cfg.Contracts)
			case "markdown":
				return contract.WriteMarkdown(o.streams.Out, o.cfg.Contracts)
			}
			return fmt.Errorf("-o %q: want table or markdown", format)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "table", "table or markdown")
	return cmd
}

func (o *contractOptions) checkCommand() *cobra.Command {
	var params string
	cmd := &cobra.Command{
		Use:   "check --config FILE",
		Short: "Check the contracts against the cluster: overlaps, unknown classes, webhooks that do not exist",
		Long: `Exit 1 when a contract has an error: namespaces two contracts cover (by glob, or
in the cluster), an unknown class, a webhook no MutatingWebhookConfiguration
is named, installed policies whose break-glass ConfigMap is missing. Warnings
(rules that trust the field manager at admission, namespaces no contract
covers) are printed and do not fail.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.load(); err != nil {
				return err
			}
			ref, err := parseParams(params)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			facts, err := o.facts(ctx, ref)
			if err != nil {
				return err
			}
			problems := contract.Check(o.cfg.Contracts, facts)
			for _, p := range problems {
				fmt.Fprintln(o.streams.Out, p)
			}
			if contract.HasErrors(problems) {
				return exitError{code: report.ExitDrift}
			}
			if len(problems) == 0 {
				fmt.Fprintf(o.streams.Out, "%d contracts, no problem\n", len(o.cfg.Contracts))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&params, "contract-params", defaultParams, "NAMESPACE/NAME of the policies' break-glass ConfigMap")
	return cmd
}

// facts reads what Check compares the contracts with.
func (o *contractOptions) facts(ctx context.Context, ref contract.ParamsRef) (contract.Facts, error) {
	restCfg, _, _, err := o.kubeconfig.load()
	if err != nil {
		return contract.Facts{}, err
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return contract.Facts{}, err
	}
	f := contract.Facts{ParamsRef: ref}
	if f.Namespaces, err = run.NamespaceLabels(ctx, cs); err != nil {
		return f, err
	}
	mwcs, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return f, fmt.Errorf("list MutatingWebhookConfigurations: %w", err)
	}
	f.Webhooks = []string{}
	for _, m := range mwcs.Items {
		f.Webhooks = append(f.Webhooks, m.Name)
	}
	vaps, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{LabelSelector: contract.LabelManagedBy + "=driftscan"})
	if err != nil {
		return f, fmt.Errorf("list ValidatingAdmissionPolicies: %w", err)
	}
	for _, p := range vaps.Items {
		f.Policies = append(f.Policies, p.Name)
	}
	_, err = cs.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return f, fmt.Errorf("get ConfigMap %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	f.Params = &found
	return f, nil
}

func (o *contractOptions) admissionCommand() *cobra.Command {
	var action, params, out, gitCache string
	opts := contract.DefaultAdmissionOptions()
	cmd := &cobra.Command{
		Use:   "admission --config FILE [--action deny|warn,audit] [-o FILE]",
		Short: "Write a ValidatingAdmissionPolicy and binding per contract that make the API server enforce it",
		Long: `Renders the config's apps to learn the kinds they declare in each contract's
namespaces, and writes, for each contract, a ValidatingAdmissionPolicy (CEL, no
webhook server) and its binding that deny (or warn about and audit) a create,
update or patch of those kinds by a field manager or user the contract does
not allow. The GitOps appliers (--applier-user) and the control plane's own
controllers are always allowed. While an app is suspended with driftscan
breakglass, the contract's rules limited to break-glass apply to it, read from
the ConfigMap --contract-params, which the output creates.

Apply the output with kubectl apply -f (or server-side).`,
		Example: `  driftscan contract admission --config scan.yaml | kubectl apply -f -
  driftscan contract admission --config scan.yaml --action warn,audit -o contracts.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.load(); err != nil {
				return err
			}
			var err error
			if opts.Actions, err = contract.ParseActions(action); err != nil {
				return err
			}
			if opts.Params, err = parseParams(params); err != nil {
				return err
			}
			opts.ApplierManagers = o.cfg.Appliers
			for _, r := range classify.Ordered(o.cfg.Rules) {
				opts.Rules = append(opts.Rules, contract.ClassRule{Manager: r.Manager, Subresource: r.Subresource, Users: r.Users, Groups: r.Groups, Class: r.Class})
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			if opts.Resources, err = o.declaredResources(ctx, gitCache); err != nil {
				return err
			}
			m, err := contract.Admission(o.cfg.Contracts, opts)
			if err != nil {
				return err
			}
			for _, c := range o.cfg.Contracts {
				if why, ok := m.Skipped[c.Name]; ok {
					fmt.Fprintf(o.streams.Err, "contract %s: no policy: %s\n", c.Name, why)
				}
			}
			data, err := m.YAML()
			if err != nil {
				return err
			}
			if out == "" {
				_, err = o.streams.Out.Write(data)
				return err
			}
			return os.WriteFile(out, data, 0o644)
		},
	}
	f := cmd.Flags()
	f.StringVar(&action, "action", "deny", "what the policy does with a change the contract does not allow: deny, or warn and/or audit (warn,audit)")
	f.StringVar(&params, "contract-params", defaultParams, "NAMESPACE/NAME of the break-glass ConfigMap the bindings reference")
	f.StringArrayVar(&opts.ApplierUsers, "applier-user", contract.DefaultApplierUsers, "identity of a GitOps applier, always allowed (repeatable; globs)")
	f.StringVarP(&out, "output", "o", "", "write the manifests to this file (default: stdout)")
	f.StringVar(&gitCache, "git-cache", "", "folder for Git clones (default: the user cache folder)")
	return cmd
}

// declaredResources renders and reads the apps (a scan) and returns, by
// contract, the resources its apps declare in its namespaces, with their
// subresources as the API server serves them.
func (o *contractOptions) declaredResources(ctx context.Context, gitCache string) (map[string][]contract.Resource, error) {
	restCfg, _, _, err := o.kubeconfig.load()
	if err != nil {
		return nil, err
	}
	sopts := scanner.DefaultOptions()
	sopts.RESTConfig = restCfg
	if gitCache != "" {
		sopts.GitCacheDir = gitCache
	}
	r, err := scanner.Scan(ctx, o.cfg, sopts)
	if err != nil {
		return nil, err
	}
	var labels map[string]map[string]string
	if slices.ContainsFunc(o.cfg.Contracts, func(c contract.Contract) bool { return c.NamespaceSelector != nil }) {
		cs, err := kubernetes.NewForConfig(restCfg)
		if err != nil {
			return nil, err
		}
		if labels, err = run.NamespaceLabels(ctx, cs); err != nil {
			return nil, err
		}
	}
	served, err := servedResources(restCfg)
	if err != nil {
		return nil, err
	}
	out := map[string][]contract.Resource{}
	var errs []error
	for _, app := range r.Apps {
		if app.Error != "" {
			errs = append(errs, fmt.Errorf("app %s: %s", app.Name, app.Error))
		}
		for _, obj := range app.Objects {
			c := contract.For(o.cfg.Contracts, obj.Namespace, labels[obj.Namespace])
			if c == nil {
				continue
			}
			gv, err := schema.ParseGroupVersion(obj.APIVersion)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", obj.Ref(), err)
			}
			res, ok := served[gv.WithKind(obj.Kind)]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: the cluster serves no %s %s", obj.Ref(), obj.APIVersion, obj.Kind))
				continue
			}
			if !slices.ContainsFunc(out[c.Name], func(x contract.Resource) bool { return x.Group == res.Group && x.Resource == res.Resource }) {
				out[c.Name] = append(out[c.Name], res)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("the apps' kinds are not all known, so the policies would miss some: %w", err)
	}
	return out, nil
}

// servedResources maps each kind the API server serves to its resource and
// subresources (deployments: scale, status).
func servedResources(cfg *rest.Config) (map[schema.GroupVersionKind]contract.Resource, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	out := map[schema.GroupVersionKind]contract.Resource{}
	subs := map[schema.GroupVersionResource][]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if main, sub, ok := strings.Cut(r.Name, "/"); ok {
				subs[gv.WithResource(main)] = append(subs[gv.WithResource(main)], sub)
			}
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !r.Namespaced {
				continue
			}
			out[gv.WithKind(r.Kind)] = contract.Resource{Group: gv.Group, Resource: r.Name, Subresources: subs[gv.WithResource(r.Name)]}
		}
	}
	return out, nil
}
