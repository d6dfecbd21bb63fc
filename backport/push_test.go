package backport

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/gitrepo"
)

const pushToken = "ghp_pushTokenThatMustNotLeak0123456789"

// gitServer is a bare repository served over https on loopback by git
// http-backend, accepting only x-access-token:pushToken, and a clone of it.
type gitServer struct {
	srv   *gitrepo.Server
	bare  string
	url   string
	clone string
}

func newGitServer(t *testing.T) *gitServer {
	t.Helper()
	bare, _ := gitrepo.Bare(t, "", map[string]string{"apps/web/config.yaml": "kind: ConfigMap\n"})
	srv := gitrepo.ServeWith(t, bare, gitrepo.ServeOptions{TLS: true, User: "x-access-token", Token: pushToken})
	g := &gitServer{srv: srv, bare: bare, url: srv.RepoURL(bare), clone: t.TempDir()}
	_, err := git.PlainCloneContext(t.Context(), g.clone, false, &git.CloneOptions{
		URL: g.url, CABundle: srv.CABundle(), Auth: &githttp.BasicAuth{Username: "x-access-token", Password: pushToken},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Requests() // forget the clone's
	return g
}

// remote is the push credential bound to the server's host.
func (g *gitServer) remote(tokenEnv string) Remote {
	return Remote{
		Credentials: []config.GitCredential{{URL: g.srv.Host(), GitAuth: config.GitAuth{TokenEnv: "PUSH_TOKEN", Username: "x-access-token"}}},
		CABundle:    g.srv.CABundle(),
		Getenv:      func(k string) string { return map[string]string{"PUSH_TOKEN": tokenEnv}[k] },
	}
}

// commitOn commits one file on branch (created from HEAD when missing) in
// the working tree at root and returns the commit.
func commitOn(t *testing.T, root, branch, file, content string) plumbing.Hash {
	t.Helper()
	r, err := git.PlainOpen(root)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := r.Worktree()
	name := plumbing.NewBranchReferenceName(branch)
	_, missing := r.Reference(name, false)
	if err := wt.Checkout(&git.CheckoutOptions{Branch: name, Create: missing != nil}); err != nil {
		t.Fatal(err)
	}
	if err := writeTestFile(filepath.Join(root, file), content); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add(file); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("edit "+file, &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com", When: now}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestPushSendsTheBranchToTheRealGitServerWithTheBoundToken(t *testing.T) {
	g := newGitServer(t)
	h := commitOn(t, g.clone, "hotfix/web", "apps/web/config.yaml", "kind: ConfigMap\ndata: {mode: fixed}\n")

	res, err := Push(t.Context(), g.clone, "hotfix/web", g.remote(pushToken))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pushed || res.Commit != h.String() || res.URL != g.url {
		t.Errorf("Push = %+v, want pushed %s to %s", res, h, g.url)
	}
	got := gitrepo.BranchCommit(t, g.bare, "hotfix/web")
	if got == nil || got.Hash != h || got.Message != "edit apps/web/config.yaml" {
		t.Fatalf("the bare repository's hotfix/web is %v, want the pushed commit %s", got, h)
	}
	f, err := got.File("apps/web/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if content, _ := f.Contents(); !strings.Contains(content, "mode: fixed") {
		t.Errorf("pushed file:\n%s", content)
	}
	for _, r := range g.srv.Requests() {
		if r.Denied {
			t.Errorf("%s %s was refused: the bound token was not sent", r.Method, r.Path)
		}
	}

	again, err := Push(t.Context(), g.clone, "hotfix/web", g.remote(pushToken))
	if err != nil || again.Pushed {
		t.Errorf("a second push = %+v, %v; want nothing pushed", again, err)
	}
}

func TestPushWithAWrongTokenFailsWithoutShowingIt(t *testing.T) {
	g := newGitServer(t)
	commitOn(t, g.clone, "hotfix/web", "apps/web/config.yaml", "kind: ConfigMap\ndata: {mode: fixed}\n")
	wrong := "ghp_wrongTokenAlsoSecret000000000000000"
	_, err := Push(t.Context(), g.clone, "hotfix/web", g.remote(wrong))
	if !errors.Is(err, transport.ErrAuthenticationRequired) && !errors.Is(err, transport.ErrAuthorizationFailed) {
		t.Fatalf("Push = %v, want an authentication error", err)
	}
	if strings.Contains(err.Error(), wrong) {
		t.Errorf("the error shows the token: %v", err)
	}
	if c := gitrepo.BranchCommit(t, g.bare, "hotfix/web"); c != nil {
		t.Errorf("hotfix/web was created at %s", c.Hash)
	}
}

func TestPushSendsNoTokenToAHostItIsNotBoundTo(t *testing.T) {
	g := newGitServer(t)
	commitOn(t, g.clone, "hotfix/web", "apps/web/config.yaml", "kind: ConfigMap\ndata: {mode: fixed}\n")
	rm := g.remote(pushToken)
	rm.Credentials[0].URL = "git.example.com"
	if _, err := Push(t.Context(), g.clone, "hotfix/web", rm); err == nil {
		t.Fatal("Push without a credential for the host succeeded")
	}
	for _, r := range g.srv.Requests() {
		if r.Authorization != "" {
			t.Errorf("%s %s carried %q: a credential went to a host it is not bound to", r.Method, r.Path, r.Authorization)
		}
	}
}

func TestPushRefusesARemoteBranchThatHasOtherCommits(t *testing.T) {
	g := newGitServer(t)
	commitOn(t, g.clone, "hotfix/web", "apps/web/config.yaml", "kind: ConfigMap\ndata: {mode: mine}\n")

	// Someone else pushed hotfix/web first, from another clone.
	other := t.TempDir()
	if _, err := git.PlainClone(other, false, &git.CloneOptions{URL: g.url, CABundle: g.srv.CABundle(), Auth: &githttp.BasicAuth{Username: "x-access-token", Password: pushToken}}); err != nil {
		t.Fatal(err)
	}
	theirs := commitOn(t, other, "hotfix/web", "apps/web/config.yaml", "kind: ConfigMap\ndata: {mode: theirs}\n")
	r, _ := git.PlainOpen(other)
	if err := r.Push(&git.PushOptions{RefSpecs: []gitconfig.RefSpec{"refs/heads/hotfix/web:refs/heads/hotfix/web"}, CABundle: g.srv.CABundle(), Auth: &githttp.BasicAuth{Username: "x-access-token", Password: pushToken}}); err != nil {
		t.Fatal(err)
	}

	_, err := Push(t.Context(), g.clone, "hotfix/web", g.remote(pushToken))
	if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), "never force-pushes") {
		t.Fatalf("Push = %v, want ErrDiverged", err)
	}
	if got := gitrepo.BranchCommit(t, g.bare, "hotfix/web"); got.Hash != theirs {
		t.Errorf("the remote branch moved to %s, want theirs %s kept", got.Hash, theirs)
	}
	if _, err := Track(t.Context(), g.clone, "hotfix/web", g.remote(pushToken)); !errors.Is(err, ErrDiverged) {
		t.Errorf("Track = %v, want ErrDiverged", err)
	}
}

func TestTrackStartsFromTheRemoteBranchSoTheNextPushFastForwards(t *testing.T) {
	g := newGitServer(t)
	first := commitOn(t, g.clone, "hotfix/web", "apps/web/config.yaml", "kind: ConfigMap\ndata: {mode: one}\n")
	if _, err := Push(t.Context(), g.clone, "hotfix/web", g.remote(pushToken)); err != nil {
		t.Fatal(err)
	}

	// A fresh clone, as the next scheduled scan has, knows only main.
	fresh := t.TempDir()
	if _, err := git.PlainClone(fresh, false, &git.CloneOptions{URL: g.url, CABundle: g.srv.CABundle(), Auth: &githttp.BasicAuth{Username: "x-access-token", Password: pushToken}}); err != nil {
		t.Fatal(err)
	}
	found, err := Track(t.Context(), fresh, "hotfix/web", g.remote(pushToken))
	if err != nil || !found {
		t.Fatalf("Track = %v, %v", found, err)
	}
	second := commitOn(t, fresh, "hotfix/web", "apps/web/config.yaml", "kind: ConfigMap\ndata: {mode: two}\n")
	res, err := Push(t.Context(), fresh, "hotfix/web", g.remote(pushToken))
	if err != nil || !res.Pushed {
		t.Fatalf("Push = %+v, %v", res, err)
	}
	got := gitrepo.BranchCommit(t, g.bare, "hotfix/web")
	if got.Hash != second || len(got.ParentHashes) != 1 || got.ParentHashes[0] != first {
		t.Errorf("remote hotfix/web is %s (parents %v), want %s on top of %s", got.Hash, got.ParentHashes, second, first)
	}
	if found, err := Track(t.Context(), fresh, "hotfix/other", g.remote(pushToken)); err != nil || found {
		t.Errorf("Track of a branch the remote lacks = %v, %v", found, err)
	}
}

func writeTestFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
