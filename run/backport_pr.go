package run

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"

	"github.com/calricon/driftscan/backport"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/forge"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/source"
)

// PullRequest says how Backport opens the pull request of its branch, on
// the forge of the app's repository (config forge section, else detected
// from the URL) with the token in forge.tokenEnv.
type PullRequest struct {
	// Breakglass is the app's suspension, for the body; nil when none.
	Breakglass *report.Breakglass
	// DryRun commits, pushes and sends nothing: PullRequestResult.Planned
	// is what would be opened.
	DryRun bool
	// HTTPClient sends the forge's requests; nil means one that trusts
	// git.caFile besides the system's certificates.
	HTTPClient *http.Client
}

// PullRequestResult is the pull request of a backport.
type PullRequestResult struct {
	// Planned is what was asked for: title, body, branches, labels and
	// reviewers.
	Planned forge.PullRequest
	// Forge is the forge it went to; nil with DryRun.
	Forge *forge.Result
}

// openPullRequest opens or updates the pull request of res's branch on
// the forge of repoURL.
func openPullRequest(ctx context.Context, cfg *config.Config, app config.App, res *backport.Result, repoURL string, o PullRequest, getenv func(string) string) (*PullRequestResult, error) {
	route := config.PullRequestRoute{}
	if ow, ok := cfg.Owners[app.Owner]; ok && ow.PullRequest != nil {
		route = *ow.PullRequest
	}
	planned := res.PullRequest(backport.PullRequestOptions{
		Breakglass: o.Breakglass, Base: baseBranch(app, res), Labels: route.Labels,
		Reviewers: append(append([]string{}, route.Reviewers...), backport.CodeOwners(res.Root, res.Files)...),
	})
	out := &PullRequestResult{Planned: planned}
	if o.DryRun {
		return out, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	fc := cfg.Forge
	if fc == nil {
		fc = &config.Forge{}
	}
	token := getenv(fc.Token())
	if token == "" {
		return out, fmt.Errorf("app %s: the pull request needs a forge token in %s (forge.tokenEnv): the branch %s is pushed, nothing was opened", app.Name, fc.Token(), res.Branch)
	}
	ca, err := source.CABundle(cfg.Dir, cfg.Git)
	if err != nil {
		return out, err
	}
	client, err := forge.New(forge.Options{Kind: fc.Kind, APIURL: fc.APIURL, RepoURL: repoURL, Token: token, HTTPClient: o.HTTPClient, CABundle: ca})
	if err != nil {
		return out, fmt.Errorf("app %s: %w", app.Name, err)
	}
	fr, err := forge.Ensure(ctx, client, planned)
	if err != nil {
		return out, fmt.Errorf("app %s: pull request of %s: %w", app.Name, res.Branch, err)
	}
	out.Forge = &fr
	return out, nil
}

var commitLike = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// baseBranch is where the pull request goes: the app's revision when it
// names a branch, else the branch the working tree had checked out, else
// main.
func baseBranch(app config.App, res *backport.Result) string {
	rev := app.Source.Revision
	if rev != "" && rev != "HEAD" && !commitLike.MatchString(rev) {
		return trimHeads(rev)
	}
	if res.From != "" && res.From != res.Branch {
		return res.From
	}
	return "main"
}

func trimHeads(rev string) string {
	const heads = "refs/heads/"
	if len(rev) > len(heads) && rev[:len(heads)] == heads {
		return rev[len(heads):]
	}
	return rev
}
