package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/gitrepo"
)

const gitPushToken = "glpat-pushTokenOfTheBackportTest0123"

// servedWorktree is webWorktree with its origin a bare copy, acme/deploy.git,
// served over https by git http-backend that accepts only
// x-access-token:gitPushToken. It returns the tree's root, the server and
// the bare repository's folder.
func servedWorktree(t *testing.T) (string, *gitrepo.Server, string) {
	t.Helper()
	root := webWorktree(t)
	org := filepath.Join(t.TempDir(), "acme")
	bare := filepath.Join(org, "deploy.git")
	if _, err := git.PlainClone(bare, true, &git.CloneOptions{URL: root}); err != nil {
		t.Fatal(err)
	}
	// Served from the folder above acme/, so the URL is .../acme/deploy.git.
	srv := gitrepo.ServeWith(t, org, gitrepo.ServeOptions{TLS: true, User: "x-access-token", Token: gitPushToken})
	r, _ := git.PlainOpen(root)
	if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{srv.URL + "/acme/deploy.git"}}); err != nil {
		t.Fatal(err)
	}
	return root, srv, bare
}

// pushFlags are the flags that let backport push to srv; more are other
// certificates to trust (a forge's).
func pushFlags(t *testing.T, srv *gitrepo.Server, more ...[]byte) []string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, bytes.Join(append([][]byte{srv.CABundle()}, more...), nil), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEPLOY_GIT_TOKEN", gitPushToken)
	return []string{"--push", "--git-credential", "x-access-token@" + srv.Host() + "=DEPLOY_GIT_TOKEN", "--git-ca-file", ca}
}

// remoteBranch is the commit branch points at in the bare repository.
func remoteBranch(t *testing.T, bare, branch string) *object.Commit {
	t.Helper()
	r, _ := git.PlainOpen(bare)
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatalf("the remote has no %s: %v", branch, err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBackportPushSendsTheBranchAndASecondRunAddsToIt(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	root, srv, bare := servedWorktree(t)
	src := filepath.Join(root, "apps", "web")
	args := append([]string{"backport", "--app", "web", "--kubeconfig", env.Kubeconfig, "--path", src, "-n", ns,
		"--repo", root, "--reason", "INC-4211 payment certs"}, pushFlags(t, srv)...)
	const branch = "hotfix/web-inc-4211-payment-certs"

	res := runCLI(t, args...)
	if res.code != 0 || !strings.Contains(res.err, "pushed "+branch) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	first := remoteBranch(t, bare, branch)
	if !strings.Contains(first.Message, "Reason: INC-4211 payment certs") || !strings.Contains(first.Message, "LOG_LEVEL") {
		t.Errorf("pushed commit:\n%s", first.Message)
	}
	for _, r := range srv.Requests() {
		if r.Denied {
			t.Errorf("%s %s was refused: the bound token was not sent", r.Method, r.Path)
		}
	}

	// A second hotfix during the same incident: the same branch, one more
	// commit on top, pushed as a fast-forward.
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"TIMEOUT":"30s"}}`)
	res = runCLI(t, args...)
	if res.code != 0 {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	second := remoteBranch(t, bare, branch)
	if len(second.ParentHashes) != 1 || second.ParentHashes[0] != first.Hash || !strings.Contains(second.Message, "TIMEOUT") {
		t.Errorf("remote %s is %s with parents %v, want one commit on top of %s:\n%s", branch, second.Hash, second.ParentHashes, first.Hash, second.Message)
	}

	// Nothing new: nothing pushed, the branch stays.
	res = runCLI(t, args...)
	if res.code != 0 || remoteBranch(t, bare, branch).Hash != second.Hash {
		t.Errorf("third run: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
}
