package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/calricon/driftscan/backport"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/run"
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
	allowSens  bool
	push       bool
	pr         bool
	dryRun     bool
	forge      config.Forge
	git        gitFlags
	now        func() time.Time

	// Filled by Complete.
	app  string
	cfg  *config.Config
	opts run.BackportOptions
}

// backportLong is backport's help.
const backportLong = `Scan APP, then for each pipeline or human finding write the live value into
the app's source in the Git working tree at --repo, so that Git matches the
fixed cluster: on a new branch, as one commit whose message lists each field,
its old and new value, who changed it and --reason. A working tree with
uncommitted changes is refused.

With --push the branch goes to the app's repository (its source repo, else the
working tree's origin), with the credential bound to that host (--git-credential,
the config's git.credentials or the source's auth), never forced: a branch the
remote has already gets the new commit on top, so running it again is safe, and
one that holds commits the working tree lacks is refused.

Plain YAML is edited in place (comments, order and formatting kept); a
kustomize overlay gets a strategic-merge patch next to its kustomization; a
Helm chart gets the value that renders the field, when one value maps to it
one to one, and a suggested patch file otherwise. Secret data and values a
redact rule masks are never written; values that look like credentials (an
env var named like a password or token, a SealedSecret's or ExternalSecret's
data) only with --allow-sensitive, and the commit message shows none.

Exit codes: 0 everything carried back (or nothing to do), 1 some findings
could not be carried back (listed with the reason), 2 an error; nothing was
written.`

const backportExample = `  # During incident INC-4211, after a hotfix with kubectl
  driftscan backport web --config scan.yaml --repo . --reason "INC-4211 payment certs"

  # One folder, and a description for the pull request
  driftscan backport web --path deploy/web -n shop --repo . -o markdown

  # Push the branch (again: the next commit goes on top)
  driftscan backport --app web --config scan.yaml --repo . --reason INC-4211 \
    --branch hotfix/web-inc-4211 --push --git-credential github.com/acme=GIT_TOKEN`

func newBackportCommand(s streams) *cobra.Command {
	o := &backportOptions{streams: s, now: time.Now}
	cmd := &cobra.Command{
		Use:     "backport (APP | --app APP) --repo PATH (--config FILE | --path DIR) [--push]",
		Short:   "Carry an app's live hotfixes back to Git, as one commit on a new branch, and push it",
		Long:    backportLong,
		Example: backportExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.appArg(args); err != nil {
				return err
			}
			return completeValidateRun(cmd.Context(), o)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// appArg takes APP from the argument or --app, not both.
func (o *backportOptions) appArg(args []string) error {
	switch {
	case len(args) == 1 && o.app != "" && o.app != args[0]:
		return fmt.Errorf("APP %q and --app %q disagree", args[0], o.app)
	case len(args) == 1:
		o.app = args[0]
	case o.app == "":
		return errors.New("name the app: backport APP, or --app APP")
	}
	return nil
}

func (o *backportOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.app, "app", "", "the app of the config to carry back (or give it as the argument)")
	f.BoolVar(&o.pr, "pr", false, "push the branch (as --push) and open its pull request on the forge (GitHub, GitLab, Gitea/Forgejo; the config's forge section, else detected from the repository URL), or update the one open for the branch")
	f.StringVar((*string)(&o.forge.Kind), "forge", "", "with --pr: github, gitlab or gitea (Forgejo too); default: the config's forge.kind, else detected from the repository's host")
	f.StringVar(&o.forge.APIURL, "forge-api-url", "", "with --pr: the forge's API (GitHub Enterprise https://HOST/api/v3, GitLab https://HOST/api/v4, Gitea https://HOST/api/v1); default: the config's, else derived from the host")
	f.StringVar(&o.forge.TokenEnv, "forge-token-env", "", "with --pr: environment variable holding the forge API token (default: the config's forge.tokenEnv, else "+config.DefaultForgeTokenEnv+")")
	f.BoolVar(&o.dryRun, "dry-run", false, "with --pr: commit, push and send nothing; print the pull request that would be opened")
	f.BoolVar(&o.push, "push", false, "push the branch to the app's repository with the credential bound to its host; never forced (the branch defaults to hotfix/APP-REASON, so that a second run finds it and adds to it)")
	o.git.add(f)
	f.StringVar(&o.repo, "repo", "", "the Git working tree to write to (required)")
	f.StringVar(&o.branch, "branch", "", "the branch to create (default hotfix/APP-UTCTIMESTAMP)")
	f.StringVar(&o.reason, "reason", "", "why the cluster was changed (an incident, a ticket), for the commit message")
	f.StringVarP(&o.output, "output", "o", string(backport.FormatText), "output: text, or markdown (a pull request description)")
	f.StringVar(&o.configPath, "config", "", "scan config file that defines APP")
	f.StringVar(&o.path, "path", "", "APP's source folder (plain YAML, a kustomization or a chart), without a config file")
	f.StringVarP(&o.namespace, "namespace", "n", "", "with --path: namespace for objects that name none (default: the context's namespace)")
	o.kubeconfig.bindFlags(f)
	f.StringVar(&o.gitCache, "git-cache", "", "folder for Git clones, for apps whose source is a remote repository (default: the user cache folder)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	f.BoolVar(&o.allowSens, "allow-sensitive", false, "also write values that look like credentials (env vars named like a password, token or key; SealedSecret and ExternalSecret data) into Git; Secret data never")
}

// Complete loads the config and the kubeconfig.
func (o *backportOptions) Complete() error {
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
	if o.cfg, err = loadConfig(o.configPath, o.path, o.namespace, ctxNamespace); err != nil {
		return err
	}
	if o.path != "" {
		o.cfg.Apps[0].Name = o.app
	}
	if err := o.git.apply(o.cfg); err != nil {
		return err
	}
	o.applyForge()
	o.opts = run.DefaultBackportOptions()
	o.opts.App, o.opts.Push = o.app, o.push
	if o.pr {
		o.opts.PR = &run.PullRequest{DryRun: o.dryRun}
	}
	o.opts.Scan.RESTConfig, o.opts.Scan.Cluster = restCfg, clusterName
	if o.gitCache != "" {
		o.opts.Scan.GitCacheDir = o.gitCache
	}
	// Only with --allow-sensitive does the scan show what looks like a
	// credential, and only then may backport write it.
	o.opts.Scan.RevealSensitive = o.allowSens
	b := &o.opts.Backport
	b.Repo, b.Branch, b.Reason, b.Now = o.repo, o.branch, o.reason, o.now
	b.AllowSensitive = o.allowSens
	return nil
}

// Validate checks the flags against each other.
func (o *backportOptions) Validate() error {
	if o.dryRun && !o.pr {
		return errors.New("--dry-run goes with --pr: it prints the pull request that would be opened")
	}
	if err := o.cfg.Forge.Validate(); err != nil {
		return fmt.Errorf("forge: %w", err)
	}
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
	res, err := run.Backport(ctx, o.cfg, o.opts)
	if err != nil {
		return err
	}
	for _, obj := range res.NotCompared {
		fmt.Fprintf(o.streams.Err, "warning: %s was not compared, so its drift is not carried back: %s\n", obj.Ref(), obj.Error)
	}
	if err := res.Write(o.streams.Out, backport.Format(o.output)); err != nil {
		return err
	}
	if p := res.Pushed; p != nil {
		state := map[bool]string{true: "pushed", false: "already on the remote:"}[p.Pushed]
		fmt.Fprintf(o.streams.Err, "%s %s %s to %s\n", state, p.Branch, p.Commit, p.URL)
	}
	o.printPullRequest(res.PullRequest)
	if res.Remaining() {
		return exitError{code: report.ExitDrift}
	}
	return nil
}

// printPullRequest says which pull request was opened or updated, or, with
// --dry-run, prints the one that would be.
func (o *backportOptions) printPullRequest(pr *run.PullRequestResult) {
	if pr == nil {
		return
	}
	if pr.Forge == nil {
		p := pr.Planned
		fmt.Fprintf(o.streams.Out, "\n(dry run) would open or update the pull request %s -> %s\ntitle: %s\nlabels: %s\nreviewers: %s\n\n%s",
			p.Head, p.Base, p.Title, strings.Join(p.Labels, ", "), strings.Join(p.Reviewers, ", "), p.Body)
		return
	}
	verb := map[bool]string{true: "opened", false: "updated"}[pr.Forge.Created]
	fmt.Fprintf(o.streams.Err, "%s pull request #%d %s\n", verb, pr.Forge.PR.Number, pr.Forge.PR.URL)
	for _, w := range pr.Forge.Warnings {
		fmt.Fprintf(o.streams.Err, "warning: %s\n", w)
	}
}

// applyForge lets the forge flags override the config's forge section.
func (o *backportOptions) applyForge() {
	if o.forge == (config.Forge{}) {
		return
	}
	f := config.Forge{}
	if o.cfg.Forge != nil {
		f = *o.cfg.Forge
	}
	if o.forge.Kind != "" {
		f.Kind = o.forge.Kind
	}
	if o.forge.APIURL != "" {
		f.APIURL = o.forge.APIURL
	}
	if o.forge.TokenEnv != "" {
		f.TokenEnv = o.forge.TokenEnv
	}
	o.cfg.Forge = &f
}
