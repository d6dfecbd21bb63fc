// Package source finds where an app's desired state lives: a folder next to
// the config file, or a commit of a Git repository fetched into a local
// cache. Resolve is the one answer every caller uses; FetchGit is the Git
// part of it.
package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/redact"
)

// ErrRevisionNotFound is returned (wrapped) by FetchGit when the remote has
// no branch or tag of the revision's name and no commit of that SHA.
var ErrRevisionNotFound = errors.New("revision not found")

// GitOptions say which repository and revision FetchGit checks out.
type GitOptions struct {
	// Repo is a Git URL: https://, ssh://, git@host:path, file://, or a
	// local path. Credentials in it are used but never printed.
	Repo string
	// Revision is a branch, a tag, a full ref (refs/heads/main) or a commit
	// SHA (full, or a prefix of at least 4 hex digits). Empty means the
	// remote's HEAD. A name that is both a branch and a tag means the branch,
	// as with `git clone --branch`.
	Revision string
	// Auth is the source's own credential; when empty, Credentials are
	// matched against Repo (see FetchGit).
	Auth config.GitAuth
	// Credentials are the credentials bound to hosts and URL prefixes.
	Credentials []config.GitCredential
	// CABundle holds PEM certificates trusted for https Git servers, in
	// addition to the system's.
	CABundle []byte
	// Cache holds one folder per repository URL, reused across calls, and
	// serializes the fetches of one repository made through it.
	Cache *Cache
	// Depth is how much history is fetched for a branch or tag: 0 means 1
	// (the newest commit only), a negative number all of it. A commit SHA
	// that a branch or tag points at is fetched as that ref; any other fetches
	// all history, since only a full fetch is sure to find it.
	Depth int
	// Getenv reads Auth.TokenEnv and Auth.SSHKeyEnv; nil means os.Getenv.
	Getenv func(string) string
	// MaxBytes bounds the size of the checked-out tree (the sum of its
	// files); 0 means no bound. A commit over it is an error, nothing is
	// written.
	MaxBytes int64
	// Submodules lists the commit's submodules in Checkout.Submodules
	// (they are never checked out into its tree).
	Submodules bool
}

// Submodule is a submodule of a commit: where its tree goes and the commit
// the superproject records (a gitlink).
type Submodule struct {
	Path, Commit string
}

// Checkout is the tree of one commit, checked out.
type Checkout struct {
	// Dir is the root of the checked-out tree.
	Dir string
	// Commit is the full SHA of the commit.
	Commit string
	// Submodules are the commit's gitlinks, when GitOptions.Submodules.
	Submodules []Submodule
}

// FetchGit checks out opts.Revision of opts.Repo under opts.Cache and
// returns the folder and the commit.
//
// Each repository has a folder <Cache.Dir>/<sha256 of the URL without
// credentials>, holding a bare repository (repo.git) that later calls fetch
// into, and one read-only tree per commit (<commit SHA>/). A tree is written
// once and never changed, so a checkout stays valid while other calls fetch
// other revisions of the same repository; FetchGit serializes calls for the
// same repository, also across processes (see Cache). Submodules
// are not checked out. A symlink that resolves outside the tree, through
// any chain of links, is an error (see checkLinks), also for a tree an older
// version cached.
//
// One request lists the remote's refs; a revision whose commit is cached
// needs no other. A branch or tag is fetched shallow (see Depth), and so is
// a commit SHA that is the head of one (see headOf); another commit SHA is
// fetched in full. When a shallow fetch fails, or the commit is still missing,
// the repository is fetched again in full, from scratch.
//
// Credentials are opts.Auth when set, else the entry of opts.Credentials
// whose prefix matches the URL best; a credential is never sent to a host
// it is not listed for, and a token never over http://. A token is HTTP
// basic auth with its Username (default "git"); an SSH key (without a
// passphrase) is used with the known_hosts files for the host key. Without
// either, a user and password in the URL, or the SSH agent. file:// URLs
// and local paths run the git binary's upload-pack, as go-git does.
//
// Errors read "git <repo>@<revision>: ...". No credential appears in them:
// every URL in them is redacted (redact.URL) and every secret value masked.
// The errors still match what they wrap with errors.Is (context.Canceled,
// ErrRevisionNotFound, transport.ErrAuthenticationRequired, ...), but do not
// unwrap to the original, unmasked error.
func FetchGit(ctx context.Context, opts GitOptions) (Checkout, error) {
	rev := opts.Revision
	if rev == "" {
		rev = "HEAD"
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	f := &gitFetch{opts: opts}
	co, err := f.run(ctx, getenv)
	if err != nil {
		err = scrubError(err, f.secrets)
		return Checkout{}, fmt.Errorf("git %s@%s: %w", redact.Text(redact.URL(opts.Repo), f.secrets...), rev, err)
	}
	return co, nil
}

// gitFetch is one FetchGit call.
type gitFetch struct {
	opts GitOptions
	// url is opts.Repo, and key its form without credentials.
	url, key string
	auth     transport.AuthMethod
	// secrets are the values that must not appear in errors.
	secrets []string
}

func (f *gitFetch) run(ctx context.Context, getenv func(string) string) (Checkout, error) {
	if f.opts.Repo == "" {
		return Checkout{}, errors.New("no repository URL")
	}
	if f.opts.Cache == nil || f.opts.Cache.Dir == "" {
		return Checkout{}, errors.New("no cache folder")
	}
	ep, err := transport.NewEndpoint(f.opts.Repo)
	if err != nil {
		return Checkout{}, err
	}
	f.url = f.opts.Repo
	f.secrets = append(f.secrets, ep.Password)
	if ep.Password == "" && len(ep.User) >= 20 {
		// A token given as the user alone: https://TOKEN@host/repo.
		f.secrets = append(f.secrets, ep.User)
	}
	bare := *ep
	bare.User, bare.Password = "", ""
	f.key = bare.String()
	if f.auth, err = f.gitAuth(ep, getenv); err != nil {
		return Checkout{}, err
	}

	refs, err := f.listRefs(ctx)
	if err != nil {
		return Checkout{}, err
	}
	want, err := resolveRevision(refs, f.opts.Revision)
	if err != nil {
		return Checkout{}, err
	}
	want = headOf(refs, want)

	sum := sha256.Sum256([]byte(f.key))
	dir := filepath.Join(f.opts.Cache.Dir, hex.EncodeToString(sum[:16]))
	unlock, err := f.opts.Cache.lock(ctx, dir)
	if err != nil {
		return Checkout{}, err
	}
	defer unlock()

	repoDir := filepath.Join(dir, "repo.git")
	_, statErr := os.Stat(repoDir)
	co, err := f.checkout(ctx, dir, want)
	if err != nil && statErr == nil && healable(ctx, err) {
		// The cached repository may be broken (a process killed while it
		// wrote, a full disk, a hand edit): clone it again, from scratch.
		if rmErr := os.RemoveAll(repoDir); rmErr != nil {
			return Checkout{}, errors.Join(err, rmErr)
		}
		co, err = f.checkout(ctx, dir, want)
	}
	if err != nil {
		return Checkout{}, err
	}
	return co, f.opts.Cache.used(dir, co.Commit)
}

// checkout fetches the wanted commit into the repository folder dir and
// writes its tree.
func (f *gitFetch) checkout(ctx context.Context, dir string, want wanted) (Checkout, error) {
	commit, err := f.fetch(ctx, filepath.Join(dir, "repo.git"), want)
	if err != nil {
		return Checkout{}, err
	}
	tree := filepath.Join(dir, commit.Hash.String())
	if err := writeTree(ctx, commit, tree, f.opts.MaxBytes); err != nil {
		return Checkout{}, err
	}
	co := Checkout{Dir: tree, Commit: commit.Hash.String()}
	if f.opts.Submodules {
		if co.Submodules, err = gitlinks(commit); err != nil {
			return Checkout{}, err
		}
	}
	return co, nil
}

// gitlinks are the submodules commit records, in tree order; none without
// a .gitmodules at its root, where neither git nor go-git looks for any (a
// tree walk saved on every commit of a repository without submodules).
func gitlinks(commit *object.Commit) ([]Submodule, error) {
	tree, err := commit.Tree()
	if err != nil {
		return nil, err
	}
	if _, err := tree.FindEntry(".gitmodules"); err != nil {
		return nil, nil
	}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	var out []Submodule
	for {
		name, entry, err := w.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if entry.Mode == filemode.Submodule {
			out = append(out, Submodule{Path: name, Commit: entry.Hash.String()})
		}
	}
}

// gitAuth picks the credentials for ep (see Auth) and remembers the
// secret values, to mask them in errors.
func (f *gitFetch) gitAuth(ep *transport.Endpoint, getenv func(string) string) (transport.AuthMethod, error) {
	auth, secrets, err := authFor(ep, f.opts.Auth, f.opts.Credentials, getenv)
	f.secrets = append(f.secrets, secrets...)
	return auth, err
}

// Auth is the credential FetchGit sends to repo, for a push to the same
// repository with the same rules: own (which the config author wrote next
// to the URL) when set, else the credential whose prefix matches the URL
// (see credentialFor), else none, which leaves go-git to the URL's own user
// and password or the SSH agent. A token goes over https only. Secrets are
// the values that must not appear in errors or logs (redact.Text them).
func Auth(repo string, own config.GitAuth, creds []config.GitCredential, getenv func(string) string) (auth transport.AuthMethod, secrets []string, err error) {
	ep, err := transport.NewEndpoint(repo)
	if err != nil {
		return nil, nil, fmt.Errorf("git %s: %w", redact.URL(repo), err)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	return authFor(ep, own, creds, getenv)
}

func authFor(ep *transport.Endpoint, own config.GitAuth, creds []config.GitCredential, getenv func(string) string) (transport.AuthMethod, []string, error) {
	a, what := own, "auth"
	if a == (config.GitAuth{}) {
		var prefix string
		var ok bool
		if a, prefix, ok = credentialFor(creds, ep); !ok {
			return nil, nil, nil
		}
		what = "git credential " + prefix
	}
	isSSH := ep.Protocol == "ssh"
	switch {
	case a.TokenEnv != "":
		if ep.Protocol != "https" {
			return nil, nil, fmt.Errorf("%s: a token is sent over https only, not %s://", what, ep.Protocol)
		}
		token := getenv(a.TokenEnv)
		if token == "" {
			return nil, nil, fmt.Errorf("%s: tokenEnv: environment variable %s is empty", what, a.TokenEnv)
		}
		user := a.Username
		if user == "" {
			user = "git"
		}
		return &githttp.BasicAuth{Username: user, Password: token}, []string{token}, nil
	case a.SSHKeyFile != "" || a.SSHKeyEnv != "":
		if !isSSH {
			return nil, nil, fmt.Errorf("%s: an SSH key needs an ssh:// or git@host: URL", what)
		}
		user := ep.User
		if user == "" {
			user = "git"
		}
		if a.SSHKeyFile != "" {
			keys, err := gitssh.NewPublicKeysFromFile(user, a.SSHKeyFile, "")
			if err != nil {
				return nil, nil, fmt.Errorf("%s: sshKeyFile %s: %w", what, a.SSHKeyFile, err)
			}
			return keys, nil, nil
		}
		key := getenv(a.SSHKeyEnv)
		if key == "" {
			return nil, nil, fmt.Errorf("%s: sshKeyEnv: environment variable %s is empty", what, a.SSHKeyEnv)
		}
		keys, err := gitssh.NewPublicKeys(user, []byte(key), "")
		if err != nil {
			return nil, []string{key}, fmt.Errorf("%s: sshKeyEnv %s: %w", what, a.SSHKeyEnv, err)
		}
		return keys, []string{key}, nil
	}
	return nil, nil, nil
}

// listRefs lists the remote's refs, annotated tags both as the tag and as
// the commit it points at (refs/tags/v1^{}).
func (f *gitFetch) listRefs(ctx context.Context) ([]*plumbing.Reference, error) {
	remote := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{f.url}})
	return remote.ListContext(ctx, &git.ListOptions{Auth: f.auth, PeelingOption: git.AppendPeeled, CABundle: f.opts.CABundle})
}

// wanted is a resolved revision.
type wanted struct {
	// ref is the remote ref to fetch; empty for a commit SHA.
	ref plumbing.ReferenceName
	// hash is the commit (or tag object) the ref points at, or the SHA
	// asked for; prefix is set instead when a short SHA was asked for.
	hash   plumbing.Hash
	prefix string
}

var hexSHA = regexp.MustCompile(`^[0-9a-fA-F]{4,40}$`)

// resolveRevision finds rev in the remote's refs.
func resolveRevision(refs []*plumbing.Reference, rev string) (wanted, error) {
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	lookup := func(name plumbing.ReferenceName) (wanted, bool) {
		r, ok := byName[name]
		if !ok {
			return wanted{}, false
		}
		if r.Type() == plumbing.SymbolicReference {
			t, ok := byName[r.Target()]
			if !ok {
				return wanted{}, false
			}
			return wanted{ref: t.Name(), hash: t.Hash()}, true
		}
		if peeled, ok := byName[name+"^{}"]; ok {
			return wanted{ref: name, hash: peeled.Hash()}, true
		}
		return wanted{ref: name, hash: r.Hash()}, true
	}
	if rev == "" || rev == "HEAD" {
		if w, ok := lookup(plumbing.HEAD); ok {
			return w, nil
		}
		return wanted{}, fmt.Errorf("%w: the remote has no HEAD", ErrRevisionNotFound)
	}
	for _, name := range []plumbing.ReferenceName{
		plumbing.ReferenceName(rev),
		plumbing.NewBranchReferenceName(rev),
		plumbing.NewTagReferenceName(rev),
	} {
		if !strings.HasPrefix(name.String(), "refs/") {
			continue
		}
		if w, ok := lookup(name); ok {
			return w, nil
		}
	}
	if hexSHA.MatchString(rev) {
		if len(rev) == 40 {
			return wanted{hash: plumbing.NewHash(rev)}, nil
		}
		return wanted{prefix: strings.ToLower(rev)}, nil
	}
	return wanted{}, fmt.Errorf("%w: no branch or tag %q, and it is not a commit SHA", ErrRevisionNotFound, rev)
}

// headOf is w, a commit SHA, as the head of the branch (or else the tag)
// that points at it, when one does: that ref is then fetched shallow and the
// commit checked, instead of all history. A Flux artifact's revision
// (main@sha1:<sha>) and an Argo CD revision pinned to the newest commit are
// such heads. Any other w is returned as it is.
func headOf(refs []*plumbing.Reference, w wanted) wanted {
	if w.ref != "" {
		return w
	}
	var tag *wanted
	for _, r := range refs {
		name := plumbing.ReferenceName(strings.TrimSuffix(r.Name().String(), "^{}"))
		if r.Type() != plumbing.HashReference || !name.IsBranch() && !name.IsTag() {
			continue
		}
		h := r.Hash().String()
		if w.prefix != "" && !strings.HasPrefix(h, w.prefix) || w.prefix == "" && r.Hash() != w.hash {
			continue
		}
		at := wanted{ref: name, hash: r.Hash()}
		if name.IsBranch() {
			return at
		}
		if tag == nil {
			tag = &at
		}
	}
	if tag != nil {
		return *tag
	}
	return w
}

// fetch brings the wanted commit into the bare repository at dir, reusing
// what is there, and returns the commit.
func (f *gitFetch) fetch(ctx context.Context, dir string, w wanted) (*object.Commit, error) {
	repo, err := f.openRepo(dir)
	if err != nil {
		return nil, err
	}
	if c, err := findCommit(repo, w); err == nil {
		return c, nil
	}
	depth := f.opts.Depth
	switch {
	case w.ref == "" || depth < 0:
		depth = 0
	case depth == 0:
		depth = 1
	}
	err = f.fetchInto(ctx, repo, w, depth)
	if err == nil {
		c, findErr := findCommit(repo, w)
		if findErr == nil {
			return c, nil
		}
		if shallow, _ := repo.Storer.Shallow(); depth == 0 && len(shallow) == 0 {
			// All history is here and the commit is not.
			return nil, findErr
		}
	} else if depth == 0 || ctx.Err() != nil {
		return nil, err
	}

	// A shallow fetch failed, or the shallow history fetched before hides
	// the commit: start over with all history.
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if repo, err = f.openRepo(dir); err != nil {
		return nil, err
	}
	if err := f.fetchInto(ctx, repo, w, 0); err != nil {
		return nil, err
	}
	return findCommit(repo, w)
}

// openRepo opens the bare repository at dir, creating it when missing.
func (f *gitFetch) openRepo(dir string) (*git.Repository, error) {
	repo, err := git.PlainOpen(dir)
	if err == nil {
		return repo, nil
	}
	if !errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	if repo, err = git.PlainInit(dir, true); err != nil {
		return nil, fmt.Errorf("create cache %s: %w", dir, err)
	}
	// The URL kept on disk has no credentials; fetches give the full one.
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{f.key}}); err != nil {
		return nil, fmt.Errorf("create cache %s: %w", dir, err)
	}
	return repo, nil
}

// fetchInto fetches the wanted ref, or for a commit SHA all branches and
// tags, with the given depth (0: all history).
func (f *gitFetch) fetchInto(ctx context.Context, repo *git.Repository, w wanted, depth int) error {
	specs := []gitconfig.RefSpec{
		"+refs/heads/*:refs/remotes/origin/*",
		"+refs/tags/*:refs/tags/*",
	}
	if w.ref != "" {
		specs = []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("+%s:%s", w.ref, localRef(w.ref)))}
	}
	err := repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RemoteURL:  f.url,
		RefSpecs:   specs,
		Depth:      depth,
		Auth:       f.auth,
		CABundle:   f.opts.CABundle,
		Tags:       git.NoTags,
		Force:      true,
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// localRef is where a fetched remote ref is kept: branches as remote
// branches, tags as tags, anything else (HEAD, refs/pull/1/head) under
// refs/remotes/origin/.
func localRef(ref plumbing.ReferenceName) plumbing.ReferenceName {
	switch {
	case ref.IsBranch():
		return plumbing.NewRemoteReferenceName(git.DefaultRemoteName, ref.Short())
	case ref.IsTag():
		return ref
	default:
		return plumbing.ReferenceName("refs/remotes/origin/" + strings.TrimPrefix(ref.String(), "refs/"))
	}
}

// findCommit finds the wanted commit in repo, following annotated tags.
func findCommit(repo *git.Repository, w wanted) (*object.Commit, error) {
	hash := w.hash
	if w.prefix != "" {
		h, err := repo.ResolveRevision(plumbing.Revision(w.prefix))
		if err != nil {
			return nil, fmt.Errorf("%w: no commit %s", ErrRevisionNotFound, w.prefix)
		}
		hash = *h
	}
	for range 10 {
		c, err := repo.CommitObject(hash)
		if err == nil {
			return c, nil
		}
		t, tagErr := repo.TagObject(hash)
		if tagErr != nil {
			if w.ref == "" {
				return nil, fmt.Errorf("%w: no commit %s", ErrRevisionNotFound, hash)
			}
			return nil, fmt.Errorf("commit %s of %s: %w", hash, w.ref, err)
		}
		hash = t.Target
	}
	return nil, fmt.Errorf("tag %s: too many nested tags", w.ref)
}

// writeTree writes the files of commit into dir, unless dir exists already.
// The files go to a temporary folder first, renamed into place when
// complete, so dir never holds half a tree.
func writeTree(ctx context.Context, commit *object.Commit, dir string, maxBytes int64) error {
	if _, err := os.Stat(dir); err == nil {
		// Written by an older version, or another process: check its
		// links once per process before it is used.
		if _, ok := checkedTrees.Load(dir); ok {
			return nil
		}
		if err := checkLinks(dir); err != nil {
			return refused{fmt.Errorf("commit %s: %w", commit.Hash, err)}
		}
		checkedTrees.Store(dir, true)
		return nil
	}
	tree, err := commit.Tree()
	if err != nil {
		return err
	}
	if maxBytes > 0 {
		var total int64
		err := tree.Files().ForEach(func(file *object.File) error {
			if total += file.Size; total > maxBytes {
				return refused{fmt.Errorf("commit %s holds more than %d bytes of files, the limit (--git-max-size): scan a smaller repository or a sub-folder's own repository", commit.Hash, maxBytes)}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tree-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	err = tree.Files().ForEach(func(file *object.File) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return writeFile(tmp, file)
	})
	if err != nil {
		return err
	}
	if err := checkLinks(tmp); err != nil {
		return refused{fmt.Errorf("commit %s: %w", commit.Hash, err)}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			// Another process wrote the same commit first.
			return nil
		}
		return err
	}
	return nil
}

// checkedTrees are the cached trees whose links this process checked.
var checkedTrees sync.Map // dir -> true

// writeFile writes one file of a tree under root.
func writeFile(root string, file *object.File) error {
	if !filepath.IsLocal(filepath.FromSlash(file.Name)) {
		return refused{fmt.Errorf("%s: path leaves the repository", file.Name)}
	}
	dst := filepath.Join(root, filepath.FromSlash(file.Name))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	r, err := file.Reader()
	if err != nil {
		return fmt.Errorf("%s: %w", file.Name, err)
	}
	defer r.Close()
	if file.Mode == filemode.Symlink {
		target, err := io.ReadAll(r)
		if err != nil {
			return fmt.Errorf("%s: %w", file.Name, err)
		}
		t := filepath.FromSlash(string(target))
		if filepath.IsAbs(t) || !filepath.IsLocal(filepath.Join(filepath.Dir(filepath.FromSlash(file.Name)), t)) {
			return refused{fmt.Errorf("%s: symlink to %s leaves the repository", file.Name, target)}
		}
		return os.Symlink(t, dst)
	}
	perm := os.FileMode(0o644)
	if file.Mode == filemode.Executable {
		perm = 0o755
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", file.Name, err)
	}
	return out.Close()
}

// scrubError masks secrets and URL credentials in err's text.
func scrubError(err error, secrets []string) error {
	return redact.Error(err, secrets...)
}
