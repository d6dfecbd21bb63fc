package run

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/discovery"

	"github.com/calricon/driftscan/backport"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
	"github.com/calricon/driftscan/source"
)

// BackportOptions say which app's hotfixes go back to which working tree.
// Start from DefaultBackportOptions.
type BackportOptions struct {
	// App is the app of the config to scan and carry back.
	App string
	// Scan configures the scan of the app; its RESTConfig reaches the
	// cluster.
	Scan scanner.Options
	// Backport says where and how to write: its Repo is the Git working
	// tree, a clone of the app's repository when its source is remote.
	// SourceDir, Namespace, Helm, Kustomize and the cluster's versions are
	// filled from the app and the cluster.
	Backport backport.Options
	// Push sends the branch to the app's repository (its source repo, else
	// the working tree's origin) with the credential the scan would fetch
	// it with, never forced: a branch the remote has already is extended
	// (backport.Track, Options.Extend) so the push is a fast-forward, and
	// one with commits the working tree lacks is refused.
	Push bool
	// PR, when set, pushes the branch (as Push) and opens its pull request
	// on the forge, or updates the one open for the branch.
	PR *PullRequest
	// Getenv reads the credentials; nil means os.Getenv.
	Getenv func(string) string
}

// DefaultBackportOptions are scanner.DefaultOptions and backport.DefaultOptions.
func DefaultBackportOptions() BackportOptions {
	return BackportOptions{Scan: scanOptions(), Backport: backport.DefaultOptions()}
}

// BackportResult is what Backport did.
type BackportResult struct {
	*backport.Result
	// NotCompared are the app's objects the scan could not compare, so
	// whatever drift they have is not carried back.
	NotCompared []report.Object
	// Pushed says where the branch went, with Options.Push and a commit.
	Pushed *backport.PushResult
	// PullRequest is the pull request opened or updated (Options.PR), or
	// the one that would be with PR.DryRun.
	PullRequest *PullRequestResult
}

// Backport scans one app of cfg and writes its pipeline and human drift into
// its source in the working tree (backport.Run). A scan that fails for the
// app is an error: nothing is written.
func Backport(ctx context.Context, cfg *config.Config, opts BackportOptions) (BackportResult, error) {
	i := slices.IndexFunc(cfg.Apps, func(a config.App) bool { return a.Name == opts.App })
	if i < 0 {
		return BackportResult{}, fmt.Errorf("app %s: not in the config", opts.App)
	}
	app := cfg.Apps[i]
	one := *cfg
	one.Apps = []config.App{app}
	// The scan reads the remote; backport writes the same path in the local
	// working tree, which must be a clone of it.
	loc, err := source.Resolve(ctx, cfg.Dir, app.Source, source.Options{WorkTree: opts.Backport.Repo})
	if err != nil {
		return BackportResult{}, fmt.Errorf("app %s: %w", app.Name, err)
	}
	bo := opts.Backport
	bo.SourceDir, bo.Namespace, bo.Helm, bo.Kustomize = loc.Dir, app.Namespace, app.Source.Helm, app.Source.Kustomize
	r, err := scanner.Scan(ctx, &one, opts.Scan)
	if err != nil {
		return BackportResult{}, err
	}
	if len(r.Errors) > 0 {
		return BackportResult{}, fmt.Errorf("scan of app %s: %s", app.Name, r.Errors[0])
	}
	if bo.KubeVersion == "" {
		caps, err := capabilities(opts.Scan)
		if err != nil {
			return BackportResult{}, fmt.Errorf("app %s: %w", app.Name, err)
		}
		bo.KubeVersion, bo.APIVersions = caps.KubeVersion, caps.APIVersions
	}
	res := BackportResult{}
	for _, obj := range r.Apps[0].Objects {
		if obj.Status == report.StatusError {
			res.NotCompared = append(res.NotCompared, obj)
		}
	}
	res.Result, res.Pushed, res.PullRequest, err = carry(ctx, cfg, app, r.Apps[0], bo, opts)
	return res, err
}

// carry writes the scanned app's hotfix into the working tree bo.Repo and,
// as opts say, pushes the branch and opens its pull request.
func carry(ctx context.Context, cfg *config.Config, app config.App, scanned report.App, bo backport.Options, opts BackportOptions) (*backport.Result, *backport.PushResult, *PullRequestResult, error) {
	dryRun := opts.PR != nil && opts.PR.DryRun
	push := (opts.Push || opts.PR != nil) && !dryRun
	bo.DryRun = bo.DryRun || dryRun
	if (push || opts.PR != nil) && bo.Branch == "" {
		bo.Branch = backport.StableBranch(app.Name, bo.Reason)
	}
	var remote backport.Remote
	if push {
		var err error
		if remote, err = pushRemote(cfg, app, opts.Getenv); err != nil {
			return nil, nil, nil, err
		}
		if _, err := backport.Track(ctx, bo.Repo, bo.Branch, remote); err != nil {
			return nil, nil, nil, fmt.Errorf("app %s: %w", app.Name, err)
		}
		bo.Extend = true
	}
	res, err := backport.Run(ctx, scanned, bo)
	if err != nil || res.Commit == "" && !res.DryRun {
		return res, nil, nil, err
	}
	var pushed *backport.PushResult
	if push {
		p, err := backport.Push(ctx, bo.Repo, res.Branch, remote)
		if err != nil {
			return res, nil, nil, fmt.Errorf("app %s: %w", app.Name, err)
		}
		pushed, res.PushedTo = &p, p.URL
	}
	if opts.PR == nil {
		return res, pushed, nil, nil
	}
	repoURL := remote.URL
	if pushed != nil {
		repoURL = pushed.URL
	}
	pr, err := openPullRequest(ctx, cfg, app, res, repoURL, *opts.PR, opts.Getenv)
	return res, pushed, pr, err
}

// pushRemote is where app's branch is pushed: its source repository with
// its own or the host-bound credential, else the working tree's origin.
func pushRemote(cfg *config.Config, app config.App, getenv func(string) string) (backport.Remote, error) {
	ca, err := source.CABundle(cfg.Dir, cfg.Git)
	if err != nil {
		return backport.Remote{}, err
	}
	return backport.Remote{URL: app.Source.Repo, Auth: app.Source.Auth, Credentials: cfg.Git.Credentials, CABundle: ca, Getenv: getenv}, nil
}

// capabilities are the cluster's, for Helm, as the scan gives them to the
// chart.
func capabilities(o scanner.Options) (scanner.Capabilities, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(o.RESTConfig)
	if err != nil {
		return scanner.Capabilities{}, fmt.Errorf("discovery client: %w", err)
	}
	return scanner.ReadCapabilities(dc)
}
