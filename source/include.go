package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/internal/sourceignore"
)

// maxIncludeDepth bounds how deep includes nest (a repository including one
// that includes another ...); source-controller has no bound, but a cycle
// never gets an artifact there, and here it must end.
const maxIncludeDepth = 8

// A Flux GitRepository's spec.include copies other GitRepositories'
// artifacts into its own before it is archived (source-controller v1.9.6,
// reconcileInclude and Storage.CopyToPath): each included artifact (the
// included repository's files, its own includes copied in, what its ignore
// rules match left out, no symlinks: an artifact holds only files and
// folders) is unpacked, and its FromPath is renamed to ToPath of the
// checkout. A rename onto anything already there fails, and so the
// reconcile: ToPath must not exist in the including repository. The
// including repository's own ignore rules then apply to the whole, as the
// render applies them to the root (.sourceignore files that came with an
// include count).
//
// withIncludes composes that tree once per commit and set of included
// commits, under <Cache.Dir>/includes/<repository>/<key>/root: the
// checkout's files hard-linked (trees are never changed once written) or
// copied, then each include. It returns the root to render from.
func (o Options) withIncludes(ctx context.Context, repo string, co Checkout, includes []config.Include, ca []byte, depth int) (string, error) {
	if depth >= maxIncludeDepth {
		return "", fmt.Errorf("includes nest more than %d repositories deep (an include cycle?)", maxIncludeDepth)
	}
	if o.Cache == nil || o.Cache.Dir == "" {
		return "", errors.New("no cache folder")
	}
	type part struct {
		root string
		inc  config.Include
	}
	key := sha256.New()
	fmt.Fprintf(key, "%s\n", co.Commit)
	parts := make([]part, 0, len(includes))
	for _, inc := range includes {
		name := SafeURL(inc.Source.Repo)
		switch {
		case inc.ToPath == "" || !config.InRepo(inc.ToPath) || filepath.Clean(filepath.FromSlash(inc.ToPath)) == ".":
			return "", fmt.Errorf("include %s: toPath %q is not a folder inside the repository", name, inc.ToPath)
		case !config.InRepo(inc.FromPath):
			return "", fmt.Errorf("include %s: fromPath %q leaves its repository", name, inc.FromPath)
		}
		ico, err := o.fetchGit(ctx, inc.Source.Repo, inc.Source.Revision, inc.Source.Auth, ca)
		if err != nil {
			return "", fmt.Errorf("include %s: %w", name, err)
		}
		root := ico.Dir
		if len(inc.Source.Includes) > 0 {
			if root, err = o.withIncludes(ctx, inc.Source.Repo, ico, inc.Source.Includes, ca, depth+1); err != nil {
				return "", fmt.Errorf("include %s: %w", name, err)
			}
		}
		ignore := "-"
		if inc.Ignore != nil {
			ignore = "+" + *inc.Ignore
		}
		// root names the included commit and, composed, its own includes.
		fmt.Fprintf(key, "%q %q %q %q %q\n", name, root, inc.FromPath, inc.ToPath, ignore)
		parts = append(parts, part{root, inc})
	}
	sum := sha256.Sum256([]byte(SafeURL(repo)))
	dir := filepath.Join(o.Cache.Dir, "includes", hex.EncodeToString(sum[:16]))
	unlock, err := o.Cache.lock(ctx, dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	tree := hex.EncodeToString(key.Sum(nil))[:40]
	root := filepath.Join(dir, tree, "root")
	if fi, err := os.Stat(root); err == nil && fi.IsDir() {
		return root, o.Cache.used(dir, tree)
	}
	tmp, err := os.MkdirTemp(dir, ".tree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	into := filepath.Join(tmp, "root")
	if err := copyTree(co.Dir, into, nil, true); err != nil {
		return "", fmt.Errorf("compose the includes: %w", err)
	}
	for _, p := range parts {
		if err := includeInto(into, p.root, p.inc); err != nil {
			return "", fmt.Errorf("include %s: %w", SafeURL(p.inc.Source.Repo), err)
		}
	}
	if err := os.Rename(tmp, filepath.Join(dir, tree)); err != nil {
		return "", err
	}
	return root, o.Cache.used(dir, tree)
}

// includeInto copies inc's FromPath of the included repository at root
// (as its artifact holds it) to ToPath of the tree into.
func includeInto(into, root string, inc config.Include) error {
	ignore, err := sourceignore.MatcherAt(root, inc.Ignore)
	if err != nil {
		return fmt.Errorf("read its ignore rules: %w", err)
	}
	from := filepath.Join(root, filepath.FromSlash(inc.FromPath))
	if _, err := os.Lstat(from); err != nil {
		return fmt.Errorf("fromPath %q: not in its artifact", inc.FromPath)
	}
	to := filepath.Join(into, filepath.FromSlash(inc.ToPath))
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("toPath %q already exists in the repository: source-controller cannot copy the include there", inc.ToPath)
	}
	// Only what the artifact holds: what the included repository's
	// rules match is not in it.
	kept := func(p string, dir bool) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && (rel == "." || !ignore.Match(strings.Split(filepath.ToSlash(rel), "/"), dir))
	}
	return copyTree(from, to, kept, false)
}

// copyTree copies the files and folders of from (a folder or a file) to
// to, hard-linking regular files where it can, and keeps only what kept
// (nil: everything) accepts, each path on its own as an archive walk
// does; links keeps symlinks (with their text), else they are left out as
// a Flux artifact leaves them out.
func copyTree(from, to string, kept func(p string, dir bool) bool, links bool) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		mode := d.Type()
		switch {
		case mode&fs.ModeSymlink != 0:
			if !links {
				return nil
			}
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case d.IsDir():
			if kept != nil && !kept(p, true) {
				return nil // what is below is matched on its own
			}
			return os.MkdirAll(dst, 0o755)
		case !mode.IsRegular():
			return nil
		case kept != nil && !kept(p, false):
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if os.Link(p, dst) == nil {
			return nil
		}
		return copyFile(p, dst)
	})
}

// copyFile copies the regular file src to dst, a new file.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
