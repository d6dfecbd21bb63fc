package backport

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// repo is the working tree backport writes to.
type repo struct {
	r    *git.Repository
	wt   *git.Worktree
	root string
	head plumbing.Hash
	// from is the branch checked out before (empty when HEAD was detached);
	// branch is the one backport created or, when existed, extends; tip is
	// its commit before backport wrote.
	from, branch plumbing.ReferenceName
	existed      bool
	tip          plumbing.Hash
}

func openRepo(path string) (*repo, error) {
	r, err := git.PlainOpenWithOptions(path, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", path, err)
	}
	head, err := r.Head()
	if err != nil {
		return nil, fmt.Errorf("repository %s has no commit to start a branch from: %w", path, err)
	}
	root, err := filepath.Abs(wt.Filesystem.Root())
	if err != nil {
		return nil, err
	}
	if resolved, err := filepath.EvalSymlinks(root); err == nil {
		root = resolved
	}
	rp := &repo{r: r, wt: wt, root: root, head: head.Hash()}
	if head.Name().IsBranch() {
		rp.from = head.Name()
	}
	return rp, nil
}

// clean refuses a working tree with changes or untracked files.
func (rp *repo) clean() error {
	st, err := rp.wt.Status()
	if err != nil {
		return fmt.Errorf("status of %s: %w", rp.root, err)
	}
	if st.IsClean() {
		return nil
	}
	var dirty []string
	for p, s := range st {
		if s.Worktree != git.Unmodified || s.Staging != git.Unmodified {
			dirty = append(dirty, p)
		}
	}
	slices.Sort(dirty)
	more := ""
	if len(dirty) > 5 {
		more = fmt.Sprintf(" and %d more", len(dirty)-5)
		dirty = dirty[:5]
	}
	return fmt.Errorf("%w in %s (%s%s): commit or stash them first; nothing was written", ErrDirty, rp.root, strings.Join(dirty, ", "), more)
}

// checkout creates branch at HEAD and checks it out; with extend, a branch
// that exists already is checked out as it is instead of refused.
func (rp *repo) checkout(branch string, extend bool) error {
	name := plumbing.NewBranchReferenceName(branch)
	if err := name.Validate(); err != nil {
		return fmt.Errorf("branch %q: %w", branch, err)
	}
	if ref, err := rp.r.Reference(name, false); err == nil {
		if !extend {
			return fmt.Errorf("branch %s exists already: choose another with --branch", branch)
		}
		if err := rp.wt.Checkout(&git.CheckoutOptions{Branch: name}); err != nil {
			return fmt.Errorf("check out branch %s: %w", branch, err)
		}
		rp.branch, rp.existed, rp.tip = name, true, ref.Hash()
		return nil
	}
	if err := rp.wt.Checkout(&git.CheckoutOptions{Branch: name, Create: true, Hash: rp.head}); err != nil {
		return fmt.Errorf("create branch %s: %w", branch, err)
	}
	rp.branch, rp.tip = name, rp.head
	return nil
}

// abandon checks out what was checked out before and deletes the branch
// backport created (never one that existed before). The caller has
// restored the files.
func (rp *repo) abandon() error {
	if rp.branch == "" {
		return nil
	}
	opts := &git.CheckoutOptions{Branch: rp.from}
	if rp.from == "" {
		opts = &git.CheckoutOptions{Hash: rp.head}
	}
	if rp.from != rp.branch {
		if err := rp.wt.Checkout(opts); err != nil {
			return fmt.Errorf("check out %s again: %w", rp.from, err)
		}
	}
	if !rp.existed {
		if err := rp.r.Storer.RemoveReference(rp.branch); err != nil {
			return fmt.Errorf("delete branch %s: %w", rp.branch.Short(), err)
		}
	}
	rp.branch = ""
	return nil
}

// commit stages files (relative to the root) and commits them.
func (rp *repo) commit(files []string, message string, opts Options) (string, error) {
	for _, f := range files {
		if _, err := rp.wt.Add(filepath.ToSlash(f)); err != nil {
			return "", fmt.Errorf("git add %s: %w", f, err)
		}
	}
	sig := rp.signature(opts)
	h, err := rp.wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return h.String(), nil
}

// signature is the author: the options', else the Git config's user, else
// driftscan.
func (rp *repo) signature(opts Options) *object.Signature {
	sig := &object.Signature{Name: opts.AuthorName, Email: opts.AuthorEmail, When: opts.Now()}
	if sig.Name == "" || sig.Email == "" {
		if cfg, err := rp.r.ConfigScoped(config.SystemScope); err == nil {
			if sig.Name == "" {
				sig.Name = cfg.User.Name
			}
			if sig.Email == "" {
				sig.Email = cfg.User.Email
			}
		}
	}
	if sig.Name == "" {
		sig.Name = "driftscan"
	}
	if sig.Email == "" {
		sig.Email = "driftscan@localhost"
	}
	return sig
}

// rel is path relative to the repository root, with forward slashes.
func (rp *repo) rel(path string) string {
	if resolved, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(resolved, filepath.Base(path))
	}
	rel, err := filepath.Rel(rp.root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}
