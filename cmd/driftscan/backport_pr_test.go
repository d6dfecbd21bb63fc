package main

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/forge/forgetest"
)

const forgeToken = "ghs_forgeTokenOfThePullRequestTest01"

// commitCodeowners adds a CODEOWNERS naming the web app's owners.
func commitCodeowners(t *testing.T, root string) {
	t.Helper()
	p := filepath.Join(root, ".github", "CODEOWNERS")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("* @acme/platform\n/apps/web/ @acme/web-team @alice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := git.PlainOpen(root)
	wt, _ := r.Worktree()
	if _, err := wt.Add(".github/CODEOWNERS"); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("owners", &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com"}}); err != nil {
		t.Fatal(err)
	}
}

func TestBackportPROpensThePullRequestAndASecondRunUpdatesIt(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	// A credential set by hand: never carried back, never shown.
	env.Patch(t, "kubectl-edit", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DB_PASSWORD","value":"hunter2-live"}]}]}}}}`)
	root, srv, bare := servedWorktree(t)
	commitCodeowners(t, root)
	fake := forgetest.GitHub(t, forgetest.Options{Owner: "acme", Name: "deploy", Token: forgeToken, Enterprise: true})
	t.Setenv("GHE_TOKEN", forgeToken)
	src := filepath.Join(root, "apps", "web")
	args := append([]string{"backport", "--app", "web", "--kubeconfig", env.Kubeconfig, "--path", src, "-n", ns, "--repo", root,
		"--reason", "INC-4211 payment certs", "--pr", "--forge", "github", "--forge-api-url", fake.APIURL, "--forge-token-env", "GHE_TOKEN"},
		pushFlags(t, srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: fake.Certificate().Raw}))...)

	dry := runCLI(t, append(args, "--dry-run")...)
	if dry.code != 1 || !strings.Contains(dry.out, "(dry run) would open or update the pull request hotfix/web-inc-4211-payment-certs -> main") {
		t.Fatalf("--dry-run: exit %d\nstdout:\n%s\nstderr:\n%s", dry.code, dry.out, dry.err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("--dry-run sent %d requests to the forge", n)
	}
	if r, _ := git.PlainOpen(bare); r != nil {
		if _, err := r.Reference("refs/heads/hotfix/web-inc-4211-payment-certs", false); err == nil {
			t.Error("--dry-run pushed the branch")
		}
	}

	// Exit 1: the password stays drift, listed as not carried back.
	res := runCLI(t, args...)
	if res.code != 1 || !strings.Contains(res.err, "opened pull request #1 ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	pulls := fake.Pulls()
	if len(pulls) != 1 {
		t.Fatalf("%d pull requests, want 1", len(pulls))
	}
	pr := pulls[0]
	if pr.Head != "hotfix/web-inc-4211-payment-certs" || pr.Base != "main" || pr.Title != "Backport live hotfix of web to Git: INC-4211 payment certs" {
		t.Errorf("pull request %+v", pr)
	}
	if strings.Join(pr.Reviewers, ",") != "alice,acme/web-team" {
		t.Errorf("reviewers %v, want CODEOWNERS' for apps/web/", pr.Reviewers)
	}
	commit := remoteBranch(t, bare, pr.Head)
	for _, text := range []string{pr.Body, commit.Message, dry.out} {
		if strings.Contains(text, "hunter2") {
			t.Errorf("the password is shown:\n%s", text)
		}
	}
	golden.Check(t, "backport-pr.body.golden", []byte(prBody(pr.Body, ns)))

	// A second hotfix: the same pull request, its body edited, one more commit.
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"TIMEOUT":"30s"}}`)
	res = runCLI(t, args...)
	if res.code != 1 || !strings.Contains(res.err, "updated pull request #1 ") {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	pulls = fake.Pulls()
	if len(pulls) != 1 || pulls[0].Edits != 1 || !strings.Contains(pulls[0].Body, "TIMEOUT") {
		t.Errorf("after the second run: %+v", pulls)
	}
	if second := remoteBranch(t, bare, pr.Head); len(second.ParentHashes) != 1 || second.ParentHashes[0] != commit.Hash {
		t.Errorf("the second commit %s does not follow the first %s", second.Hash, commit.Hash)
	}
}

var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// prBody is a body with what changes from run to run replaced.
func prBody(body, ns string) string {
	return timestamp.ReplaceAllString(strings.ReplaceAll(body, ns, "NAMESPACE"), "TIME")
}
