package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/run"
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
	o.kubeconfig.bindFlags(f)
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
	return run.ContractFacts(ctx, restCfg, ref)
}

// admissionOptions are the flags of contract admission.
type admissionOptions struct {
	*contractOptions
	action, params, out, gitCache string
	opts                          contract.AdmissionOptions
}

func (o *contractOptions) admissionCommand() *cobra.Command {
	a := &admissionOptions{contractOptions: o, opts: contract.DefaultAdmissionOptions()}
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
		RunE: func(cmd *cobra.Command, _ []string) error { return a.run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&a.action, "action", "deny", "what the policy does with a change the contract does not allow: deny, or warn and/or audit (warn,audit)")
	f.StringVar(&a.params, "contract-params", defaultParams, "NAMESPACE/NAME of the break-glass ConfigMap the bindings reference")
	f.StringArrayVar(&a.opts.ApplierUsers, "applier-user", contract.DefaultApplierUsers, "identity of a GitOps applier, always allowed (repeatable; globs)")
	f.StringVarP(&a.out, "output", "o", "", "write the manifests to this file (default: stdout)")
	f.StringVar(&a.gitCache, "git-cache", "", "folder for Git clones and charts from Helm repositories (default: the user cache folder)")
	return cmd
}

// run renders the config's apps and writes the policies.
func (a *admissionOptions) run(ctx context.Context) error {
	if err := a.load(); err != nil {
		return err
	}
	var err error
	if a.opts.Actions, err = contract.ParseActions(a.action); err != nil {
		return err
	}
	if a.opts.Params, err = parseParams(a.params); err != nil {
		return err
	}
	restCfg, _, _, err := a.kubeconfig.load()
	if err != nil {
		return err
	}
	scan := run.DefaultOptions().Scan
	scan.RESTConfig = restCfg
	if a.gitCache != "" {
		scan.GitCacheDir = a.gitCache
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	m, err := run.ContractAdmission(ctx, a.cfg, scan, a.opts)
	if err != nil {
		return err
	}
	for _, c := range a.cfg.Contracts {
		if why, ok := m.Skipped[c.Name]; ok {
			fmt.Fprintf(a.streams.Err, "contract %s: no policy: %s\n", c.Name, why)
		}
	}
	data, err := m.YAML()
	if err != nil {
		return err
	}
	if a.out == "" {
		_, err = a.streams.Out.Write(data)
		return err
	}
	return os.WriteFile(a.out, data, 0o644)
}
