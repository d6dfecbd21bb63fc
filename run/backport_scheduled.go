package run

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/calricon/driftscan/backport"
	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// ScheduledBackport says how a scan carries hotfixes back to Git as pull
// requests, for the apps suspended with `breakglass suspend --backport-pr`:
// once such an app has pipeline or human drift that Git lacks, the scan
// clones its repository, backports, pushes the branch and opens its pull
// request (or updates it), with the Git credentials of the config and the
// forge token of forge.tokenEnv.
type ScheduledBackport struct {
	// WorkDir holds the clones, each removed after use; "" is the
	// temporary folder.
	WorkDir string
	// HTTPClient sends the forge's requests; nil means one that trusts
	// git.caFile besides the system's certificates.
	HTTPClient *http.Client
}

// backportPRs opens or updates the pull request of every suspended app
// that asked for one and has a hotfix to carry, and records it in the
// app's breakglass state. A failure is an error of the run that names the
// app; the other apps are still carried.
func backportPRs(ctx context.Context, r *report.Report, cfg *config.Config, opts Options) error {
	if opts.BackportPRs == nil {
		return nil
	}
	var errs []error
	for i := range r.Apps {
		app := &r.Apps[i]
		bg := app.Breakglass
		if bg == nil || !bg.BackportPR || bg.Resumed || app.Error != "" || len(breakglass.Blocking(*app)) == 0 {
			continue
		}
		j := slices.IndexFunc(cfg.Apps, func(a config.App) bool { return a.Name == app.Name })
		if j < 0 {
			continue
		}
		pr, err := scheduledBackport(ctx, cfg, cfg.Apps[j], withoutSuspension(*app), opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("backport pull request of app %s: %w", app.Name, err))
			continue
		}
		bg.PullRequest = pr
		opts.Logger.Info("backport pull request", "app", app.Name, "url", pr.URL, "branch", pr.Branch)
	}
	return errors.Join(errs...)
}

// scheduledBackport clones app's repository, carries the scanned hotfix
// into it and opens the pull request.
func scheduledBackport(ctx context.Context, cfg *config.Config, app config.App, scanned report.App, opts Options) (*report.PullRequest, error) {
	if app.Source.Repo == "" {
		return nil, errors.New("its source is no Git repository: nothing to push to")
	}
	dir, err := os.MkdirTemp(opts.BackportPRs.WorkDir, "driftscan-backport-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	remote, err := pushRemote(cfg, app, opts.Scan.Getenv)
	if err != nil {
		return nil, err
	}
	base := baseBranch(app, &backport.Result{})
	if err := backport.Clone(ctx, dir, base, remote); err != nil {
		return nil, err
	}
	bo := backport.DefaultOptions()
	bo.Repo, bo.SourceDir = dir, filepath.Join(dir, filepath.FromSlash(app.Source.Path))
	bo.Namespace, bo.Helm, bo.Kustomize = app.Namespace, app.Source.Helm, app.Source.Kustomize
	bo.Reason, bo.Now = scanned.Breakglass.Reason, opts.Now
	bo.Branch = backport.StableBranch(app.Name, bo.Reason)
	if caps, err := capabilities(opts.Scan); err == nil {
		bo.KubeVersion, bo.APIVersions = caps.KubeVersion, caps.APIVersions
	}
	bopts := BackportOptions{PR: &PullRequest{Breakglass: scanned.Breakglass, HTTPClient: opts.BackportPRs.HTTPClient}, Getenv: opts.Scan.Getenv}
	res, _, pr, err := carry(ctx, cfg, app, scanned, bo, bopts)
	if err != nil {
		return nil, err
	}
	if pr == nil || pr.Forge == nil {
		return nil, fmt.Errorf("nothing could be carried back (%d findings not carried)", len(res.Skipped))
	}
	p := pr.Forge.PR
	return &report.PullRequest{URL: p.URL, Number: p.Number, Branch: res.Branch, State: string(p.State)}, nil
}

// withoutSuspension is app without the finding Annotate made of an expired
// suspension: it is the reconciler object's, not Git's.
func withoutSuspension(app report.App) report.App {
	out := app
	out.Objects = nil
	for _, o := range app.Objects {
		kept := o
		kept.Findings = slices.DeleteFunc(slices.Clone(o.Findings), func(f report.Finding) bool { return f.Manager == breakglass.FieldManager })
		if len(kept.Findings) > 0 || len(o.Findings) == 0 {
			out.Objects = append(out.Objects, kept)
		}
	}
	return out
}
