package backport

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/redact"
	"github.com/calricon/driftscan/source"
)

// Remote says where Push sends a branch and with which credential: the
// same rules as the scan's fetch (source.Auth), so a token goes only to
// the host it is bound to, and only over https.
type Remote struct {
	// URL is the repository; empty means the URL of the working tree's
	// origin remote.
	URL string
	// Auth is the app source's own credential; when empty, the entry of
	// Credentials whose prefix matches URL best, else none.
	Auth        config.GitAuth
	Credentials []config.GitCredential
	// CABundle holds PEM certificates trusted for an https server, in
	// addition to the system's.
	CABundle []byte
	// Getenv reads the credentials' variables; nil means os.Getenv.
	Getenv func(string) string
}

// ErrDiverged marks a remote branch that holds commits the local branch
// does not: only a force push could replace it, and backport never
// force-pushes. Nothing was pushed.
var ErrDiverged = errors.New("the remote branch has commits the local branch does not")

// PushResult says what Push did.
type PushResult struct {
	// URL is the repository, without credentials.
	URL string
	// Branch was pushed at Commit. Pushed is false when the remote had that
	// commit already.
	Branch, Commit string
	Pushed         bool
}

// StableBranch is the branch a pushed backport of app uses unless told
// otherwise: hotfix/<app>-<reason as a slug>, the same on every run for one
// incident, so a second run finds the branch (and its pull request) again.
func StableBranch(app, reason string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(reason) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		return "hotfix/" + app
	}
	return "hotfix/" + app + "-" + slug
}

// pusher is one repository and remote with the credential resolved.
type pusher struct {
	repo    *git.Repository
	url     string
	auth    transport.AuthMethod
	ca      []byte
	secrets []string
}

func newPusher(repoPath string, rm Remote) (*pusher, error) {
	r, err := git.PlainOpenWithOptions(repoPath, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", repoPath, err)
	}
	url := rm.URL
	if url == "" {
		origin, err := r.Remote(git.DefaultRemoteName)
		if err != nil || len(origin.Config().URLs) == 0 {
			return nil, fmt.Errorf("repository %s: no remote to push to: it has no origin and the app names no repo", repoPath)
		}
		url = origin.Config().URLs[0]
	}
	auth, secrets, err := source.Auth(url, rm.Auth, rm.Credentials, rm.Getenv)
	if err != nil {
		return nil, err
	}
	return &pusher{repo: r, url: url, auth: auth, ca: rm.CABundle, secrets: secrets}, nil
}

// errorf is an error about the remote, with its URL and every secret masked.
func (p *pusher) errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return fmt.Errorf("push to %s: %w", redact.URL(p.url), &masked{msg: redact.Text(err.Error(), p.secrets...), err: err})
}

// masked is an error whose text has its credentials masked; it matches
// what the original matched with errors.Is.
type masked struct {
	msg string
	err error
}

func (e *masked) Error() string        { return e.msg }
func (e *masked) Is(target error) bool { return errors.Is(e.err, target) }

// remoteHead is the commit of branch on the remote, or the zero hash.
func (p *pusher) remoteHead(ctx context.Context, branch plumbing.ReferenceName) (plumbing.Hash, error) {
	rm := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{p.url}})
	refs, err := rm.ListContext(ctx, &git.ListOptions{Auth: p.auth, CABundle: p.ca})
	if err != nil {
		return plumbing.ZeroHash, p.errorf("list refs: %w", err)
	}
	for _, ref := range refs {
		if ref.Name() == branch {
			return ref.Hash(), nil
		}
	}
	return plumbing.ZeroHash, nil
}

// fetch brings the remote branch's commits into the repository, under
// refs/remotes/origin/<branch>.
func (p *pusher) fetch(ctx context.Context, branch plumbing.ReferenceName) error {
	rm := git.NewRemote(p.repo.Storer, &gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{p.url}})
	spec := gitconfig.RefSpec("+" + branch.String() + ":" + plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch.Short()).String())
	err := rm.FetchContext(ctx, &git.FetchOptions{RefSpecs: []gitconfig.RefSpec{spec}, Auth: p.auth, CABundle: p.ca})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return p.errorf("fetch %s: %w", branch.Short(), err)
	}
	return nil
}

// contains reports whether commit tip has ancestor in its history (or is it).
func (p *pusher) contains(tip, ancestor plumbing.Hash) (bool, error) {
	if tip == ancestor {
		return true, nil
	}
	a, err := p.repo.CommitObject(ancestor)
	if err != nil {
		return false, err
	}
	t, err := p.repo.CommitObject(tip)
	if err != nil {
		return false, err
	}
	return a.IsAncestor(t)
}

// Track makes the local branch start where the remote's branch is, so that
// a second backport of the same app commits on top of the first and its
// push is a fast-forward. It creates the local branch at the remote's
// commit when there is none, leaves one that already contains the remote's
// commit alone, and refuses (ErrDiverged) one that does not. found reports
// whether the remote has the branch.
func Track(ctx context.Context, repoPath, branch string, rm Remote) (found bool, err error) {
	p, err := newPusher(repoPath, rm)
	if err != nil {
		return false, err
	}
	name := plumbing.NewBranchReferenceName(branch)
	remote, err := p.remoteHead(ctx, name)
	if err != nil || remote.IsZero() {
		return false, err
	}
	if err := p.fetch(ctx, name); err != nil {
		return true, err
	}
	local, err := p.repo.Reference(name, false)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return true, p.repo.Storer.SetReference(plumbing.NewHashReference(name, remote))
	}
	if err != nil {
		return true, err
	}
	ok, err := p.contains(local.Hash(), remote)
	if err != nil {
		return true, err
	}
	if !ok {
		return true, p.errorf("%w: %s is at %s there, and the local %s at %s does not contain it: merge it by hand (driftscan never force-pushes)",
			ErrDiverged, branch, short(remote.String()), branch, short(local.Hash().String()))
	}
	return true, nil
}

// Push sends the local branch to the remote, never forced: when the
// remote has the branch at a commit the local branch does not contain, it
// refuses with ErrDiverged and pushes nothing. A remote that has the
// commit already is left alone (Pushed false).
func Push(ctx context.Context, repoPath, branch string, rm Remote) (PushResult, error) {
	p, err := newPusher(repoPath, rm)
	if err != nil {
		return PushResult{}, err
	}
	name := plumbing.NewBranchReferenceName(branch)
	local, err := p.repo.Reference(name, false)
	if err != nil {
		return PushResult{}, fmt.Errorf("push %s: no such local branch: %w", branch, err)
	}
	res := PushResult{URL: redact.URL(p.url), Branch: branch, Commit: local.Hash().String()}
	remote, err := p.remoteHead(ctx, name)
	if err != nil {
		return res, err
	}
	if remote == local.Hash() {
		return res, nil
	}
	if !remote.IsZero() {
		if err := p.fetch(ctx, name); err != nil {
			return res, err
		}
		if ok, err := p.contains(local.Hash(), remote); err != nil || !ok {
			return res, p.errorf("%w: %s is at %s there, and the local %s at %s does not contain it: nothing was pushed (driftscan never force-pushes)",
				ErrDiverged, branch, short(remote.String()), branch, short(local.Hash().String()))
		}
	}
	rmt := git.NewRemote(p.repo.Storer, &gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{p.url}})
	spec := gitconfig.RefSpec(name.String() + ":" + name.String()) // no "+": never forced
	err = rmt.PushContext(ctx, &git.PushOptions{RefSpecs: []gitconfig.RefSpec{spec}, Auth: p.auth, CABundle: p.ca, Force: false})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return res, p.errorf("push %s: %w", branch, err)
	}
	res.Pushed = true
	return res, nil
}

// Clone clones the remote into dir (which must not exist or be empty),
// with the push credential, and checks out branch ("" for the remote's
// default): a working tree for a backport that has none, as the scheduled
// scan needs. All of the history is fetched, so that Track can tell
// whether a remote branch follows from the local one.
func Clone(ctx context.Context, dir, branch string, rm Remote) error {
	if rm.URL == "" {
		return errors.New("clone: no repository URL")
	}
	auth, secrets, err := source.Auth(rm.URL, rm.Auth, rm.Credentials, rm.Getenv)
	if err != nil {
		return err
	}
	opts := &git.CloneOptions{URL: rm.URL, Auth: auth, CABundle: rm.CABundle}
	if branch != "" {
		opts.ReferenceName = plumbing.NewBranchReferenceName(branch)
	}
	if _, err := git.PlainCloneContext(ctx, dir, false, opts); err != nil {
		err = &masked{msg: redact.Text(err.Error(), secrets...), err: err}
		return fmt.Errorf("clone %s: %w", redact.URL(rm.URL), err)
	}
	return nil
}
