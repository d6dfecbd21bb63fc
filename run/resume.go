package run

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/backport"
	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/forge"
	"github.com/calricon/driftscan/source"
)

// ResumeCheckOptions say how to scan a paused app and where its pull
// request is. Start from DefaultResumeCheckOptions.
type ResumeCheckOptions struct {
	UnbackportedOptions
	// Forge is where the app's pull request is looked for; its token is
	// read with Getenv (nil: os.Getenv).
	Forge      config.Forge
	Getenv     func(string) string
	HTTPClient *http.Client
}

// DefaultResumeCheckOptions are DefaultUnbackportedOptions.
func DefaultResumeCheckOptions() ResumeCheckOptions {
	return ResumeCheckOptions{UnbackportedOptions: DefaultUnbackportedOptions()}
}

// ResumeCheck is what resuming a suspended app would do.
type ResumeCheck struct {
	// Blocking are the pipeline and human findings Git lacks, which the
	// next sync would revert; none means Git matches live.
	Blocking []string
	// PullRequest is the hotfix's pull request (branch
	// backport.StableBranch of the app and the suspension's reason), nil
	// when there is none or it was not looked for.
	PullRequest *forge.PullRequest
}

// OpenPullRequest names the pull request while it is open and not merged,
// for breakglass.ResumeOptions; "" otherwise.
func (c ResumeCheck) OpenPullRequest() string {
	if c.PullRequest == nil || c.PullRequest.State != forge.StateOpen {
		return ""
	}
	return fmt.Sprintf("#%d (%s)", c.PullRequest.Number, c.PullRequest.URL)
}

// CheckResume scans the app of suspension s (Unbackported) and, when the
// suspension asked for a pull request or a forge token is at hand, looks
// up the hotfix's pull request on the forge of the app's repository.
func CheckResume(ctx context.Context, client dynamic.Interface, t breakglass.Target, s breakglass.Suspension, opts ResumeCheckOptions) (ResumeCheck, error) {
	blocking, apps, err := unbackported(ctx, client, t, opts.UnbackportedOptions)
	if err != nil {
		return ResumeCheck{}, err
	}
	check := ResumeCheck{Blocking: blocking}
	// The app as the scheduled scan names it (namespace/name when two
	// namespaces hold the name), which names the backport's branch;
	// unbackported found at least one.
	app := apps[0].Name
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	token := getenv(opts.Forge.Token())
	if token == "" && !s.BackportPR {
		return check, nil
	}
	if token == "" {
		return check, fmt.Errorf("app %s was suspended with --backport-pr, and its pull request cannot be looked up without a forge token in %s", app, opts.Forge.Token())
	}
	repo := ""
	for _, a := range apps {
		if a.Source.Repo != "" {
			repo = a.Source.Repo
			break
		}
	}
	if repo == "" {
		return check, fmt.Errorf("app %s: discovery found no repository to look for its pull request in", app)
	}
	// The forge is trusted as the Git servers are: git.caFile (--git-ca-file)
	// besides the system's certificates.
	ca, err := source.CABundle("", opts.Git)
	if err != nil {
		return check, fmt.Errorf("app %s: %w", app, err)
	}
	c, err := forge.New(forge.Options{Kind: opts.Forge.Kind, APIURL: opts.Forge.APIURL, RepoURL: repo, Token: token, HTTPClient: opts.HTTPClient, CABundle: ca})
	if err != nil {
		return check, fmt.Errorf("app %s: %w", app, err)
	}
	branch := backport.StableBranch(app, s.Reason)
	if check.PullRequest, err = c.Find(ctx, forge.Query{Head: branch, All: true}); err != nil {
		return check, fmt.Errorf("app %s: pull request of %s: %w", app, branch, err)
	}
	return check, nil
}
