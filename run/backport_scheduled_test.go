package run

import (
	"bytes"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/forge"
	"github.com/calricon/driftscan/forge/forgetest"
	"github.com/calricon/driftscan/report"
)

const (
	drillGitToken   = "glpat-gitTokenOfTheScheduledBackport"
	drillForgeToken = "ghs_forgeTokenOfTheScheduledBackport"
)

// drill is a suspended Argo CD app whose repository, acme/deploy.git, is
// served over https by git http-backend with basic auth, and a GitHub fake
// for it.
type drill struct {
	appNS, argoNS string
	bare          string
	git           *gitrepo.Server
	forge         *forgetest.Server
	cfg           *config.Config
	suspended     time.Time
	target        breakglass.Target
}

func newDrill(t *testing.T) *drill {
	t.Helper()
	env.Need(t)
	org := filepath.Join(t.TempDir(), "acme")
	bare := filepath.Join(org, "deploy.git")
	gitrepo.BareAt(t, bare, "", webFiles(t))
	d := &drill{bare: bare}
	d.git = gitrepo.ServeWith(t, org, gitrepo.ServeOptions{TLS: true, User: "x-access-token", Token: drillGitToken})
	d.forge = forgetest.GitHub(t, forgetest.Options{Owner: "acme", Name: "deploy", Token: drillForgeToken, Enterprise: true})
	d.appNS, d.argoNS = argoAppFrom(t, d.git.URL+"/acme/deploy.git")

	ca := filepath.Join(t.TempDir(), "ca.pem")
	forgeCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d.forge.Certificate().Raw})
	if err := os.WriteFile(ca, bytes.Join([][]byte{d.git.CABundle(), forgeCA}, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	d.cfg = config.New()
	d.cfg.Git = config.Git{CAFile: ca, Credentials: []config.GitCredential{{URL: d.git.Host(), GitAuth: config.GitAuth{TokenEnv: "DEPLOY_GIT_TOKEN", Username: "x-access-token"}}}}
	d.cfg.Forge = &config.Forge{Kind: "github", APIURL: d.forge.APIURL}

	client, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	d.suspended = time.Now()
	sopts := breakglass.DefaultSuspendOptions()
	sopts.Reason, sopts.TTL, sopts.Who, sopts.BackportPR = "INC-4211 payment certs", 2*time.Hour, "alice@example.com", true
	sopts.Now = func() time.Time { return d.suspended }
	d.target = breakglass.Target{Resource: breakglass.Application, Namespace: d.argoNS, Name: "web"}
	if _, err := breakglass.Suspend(t.Context(), client, d.target, sopts); err != nil {
		t.Fatal(err)
	}
	return d
}

// scan is the scheduled scan at now, with --backport-prs.
func (d *drill) scan(t *testing.T, now time.Time) *report.Report {
	t.Helper()
	opts := DefaultOptions()
	opts.Scan.RESTConfig, opts.Scan.GitCacheDir = env.Config, t.TempDir()
	opts.Scan.Getenv = func(k string) string {
		return map[string]string{"DEPLOY_GIT_TOKEN": drillGitToken, config.DefaultForgeTokenEnv: drillForgeToken}[k]
	}
	dopts := discover.DefaultOptions()
	dopts.Namespace = d.argoNS
	opts.Discover = &Discover{Options: dopts}
	opts.BackportPRs = &ScheduledBackport{WorkDir: t.TempDir()}
	opts.Now = func() time.Time { return now }
	cfg := *d.cfg
	res, err := Scan(t.Context(), &cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Errors) > 0 || len(res.Report.Apps) != 1 {
		t.Fatalf("errors %v, apps %+v", res.Report.Errors, res.Report.Apps)
	}
	return res.Report
}

// merge fast-forwards main to branch in the bare repository and merges the
// pull request on the forge, as a reviewer would.
func (d *drill) merge(t *testing.T, branch string, number int) {
	t.Helper()
	r, _ := git.PlainOpen(d.bare)
	c := gitrepo.BranchCommit(t, d.bare, branch)
	if err := r.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), c.Hash)); err != nil {
		t.Fatal(err)
	}
	d.forge.Merge(number)
}

// TestTheDrillFromSuspendToResume is the 3 AM drill on the real API
// server: suspend with --backport-pr, a human hotfix, the scheduled scan
// opens the pull request (once), resume refuses while it is open, the
// reviewer merges it, the scan shows Git == live, and resume reverts
// nothing.
func TestTheDrillFromSuspendToResume(t *testing.T) {
	d := newDrill(t)
	const branch = "hotfix/web-inc-4211-payment-certs"

	r := d.scan(t, d.suspended.Add(10*time.Minute))
	bg := r.Apps[0].Breakglass
	if bg == nil || !bg.BackportPR || bg.PullRequest == nil || bg.PullRequest.Number != 1 || bg.PullRequest.Branch != branch || bg.PullRequest.State != "open" {
		t.Fatalf("breakglass = %+v (pull request %+v)", bg, bg.PullRequest)
	}
	pulls := d.forge.Pulls()
	if len(pulls) != 1 || pulls[0].Head != branch || pulls[0].Base != "main" {
		t.Fatalf("pull requests %+v", pulls)
	}
	for _, want := range []string{"INC-4211 payment certs", "suspended by: alice@example.com", "Merge before " + bg.Until, "`.data.LOG_LEVEL` | `info` -> `debug`"} {
		if !strings.Contains(pulls[0].Title+pulls[0].Body, want) {
			t.Errorf("the pull request lacks %q:\n%s\n%s", want, pulls[0].Title, pulls[0].Body)
		}
	}
	first := gitrepo.BranchCommit(t, d.bare, branch)
	if first == nil {
		t.Fatal("the branch was not pushed")
	}
	file, err := first.File("apps/web/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if content, _ := file.Contents(); !strings.Contains(content, "LOG_LEVEL: debug") {
		t.Errorf("pushed configmap.yaml:\n%s", content)
	}

	// The next scan finds the same pull request and pushes nothing new.
	r = d.scan(t, d.suspended.Add(20*time.Minute))
	if pr := r.Apps[0].Breakglass.PullRequest; pr == nil || pr.Number != 1 {
		t.Errorf("second scan: pull request %+v", pr)
	}
	if pulls := d.forge.Pulls(); len(pulls) != 1 {
		t.Errorf("%d pull requests after the second scan", len(pulls))
	}
	if again := gitrepo.BranchCommit(t, d.bare, branch); again.Hash != first.Hash {
		t.Errorf("the second scan pushed %s over %s", again.Hash, first.Hash)
	}

	// Resume refuses while the pull request is open, naming it.
	check := d.checkResume(t)
	if check.OpenPullRequest() == "" || len(check.Blocking) == 0 {
		t.Fatalf("before the merge: %+v", check)
	}
	client, _ := dynamic.NewForConfig(env.Config)
	_, err = breakglass.Resume(t.Context(), client, d.target, breakglass.ResumeOptions{Blocking: check.Blocking, OpenPullRequest: check.OpenPullRequest()})
	if !errors.Is(err, breakglass.ErrRefused) || !strings.Contains(err.Error(), "pull request #1 (") {
		t.Fatalf("resume before the merge = %v, want a refusal naming the pull request", err)
	}

	// Merged: Git matches live, there is nothing to carry any more.
	d.merge(t, branch, 1)
	r = d.scan(t, d.suspended.Add(30*time.Minute))
	if bg := r.Apps[0].Breakglass; len(breakglass.Blocking(r.Apps[0])) != 0 || bg.Unbackported != 0 {
		t.Errorf("after the merge the scan still finds %v", breakglass.Blocking(r.Apps[0]))
	}
	if n := len(d.forge.Pulls()); n != 1 {
		t.Errorf("%d pull requests after the merge", n)
	}
	check = d.checkResume(t)
	if check.OpenPullRequest() != "" || len(check.Blocking) != 0 || check.PullRequest == nil || check.PullRequest.State != forge.StateMerged {
		t.Fatalf("after the merge: %+v %+v", check, check.PullRequest)
	}
	if _, err := breakglass.Resume(t.Context(), client, d.target, breakglass.ResumeOptions{Blocking: check.Blocking, OpenPullRequest: check.OpenPullRequest()}); err != nil {
		t.Fatal(err)
	}
	// Resuming reverted nothing: the next scan, of the resumed app, finds no
	// pipeline or human drift and no suspension.
	r = d.scan(t, d.suspended.Add(40*time.Minute))
	if r.Apps[0].Breakglass != nil || len(breakglass.Blocking(r.Apps[0])) != 0 {
		t.Errorf("after resume: breakglass %+v, drift %v", r.Apps[0].Breakglass, breakglass.Blocking(r.Apps[0]))
	}
}

// checkResume is what `breakglass resume` checks.
func (d *drill) checkResume(t *testing.T) ResumeCheck {
	t.Helper()
	client, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	s, err := breakglass.Read(t.Context(), client, d.target)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultResumeCheckOptions()
	opts.Discover.Namespace = d.argoNS
	opts.Scan.RESTConfig, opts.Scan.GitCacheDir = env.Config, t.TempDir()
	opts.Scan.Getenv = func(k string) string { return map[string]string{"DEPLOY_GIT_TOKEN": drillGitToken}[k] }
	// No HTTPClient: resume trusts the forge through git.caFile, as
	// --git-ca-file gives it.
	opts.Forge, opts.Git = *d.cfg.Forge, d.cfg.Git
	opts.Getenv = func(k string) string { return map[string]string{config.DefaultForgeTokenEnv: drillForgeToken}[k] }
	check, err := CheckResume(t.Context(), client, d.target, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return check
}
