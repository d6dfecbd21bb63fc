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
	"path"
	"path/filepath"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/internal/sourceignore"
)

// A Git source's tree is more than its commit's files when it has
// submodules (RecurseSubmodules) or is a Flux GitRepository with
// spec.include: other trees are grafted in.
//
// Submodules are checked out as source-controller's go-git clone does with
// recurseSubmodules (up to ten levels): each at the commit the
// superproject records, from the URL its .gitmodules names (a relative one
// against the superproject's), with its own submodules, files and symlinks
// as they are.
//
// spec.include copies other GitRepositories' artifacts in before the
// artifact is archived (source-controller v1.9.6, reconcileInclude and
// Storage.CopyToPath): each included artifact (the included repository's
// files, its own includes copied in, what its ignore rules match left
// out, no symlinks: an artifact holds only files and folders) is unpacked,
// and its FromPath is renamed to ToPath of the checkout. A rename onto
// anything already there fails, and so the reconcile: ToPath must not
// exist in the including repository. The including repository's own
// ignore rules then apply to the whole, as the render applies them to the
// root (.sourceignore files that came with an include count).

// maxGraftDepth bounds how deep submodules and includes nest (go-git's
// submodule recursion stops at 10; an include cycle never gets an
// artifact in Flux, and here it must end), and maxGrafts how many
// repositories one source may graft in all: a .gitmodules is the
// repository's, and a hundred submodules each with a hundred more would
// otherwise be ten thousand fetches for one app.
const (
	maxGraftDepth = 10
	maxGrafts     = 100
)

// graft is one tree grafted into a checkout.
type graft struct {
	name     string // what it is, for errors: "submodule <path>", "include <repository>"
	root     string // its tree, composed
	from, to string // slash-separated, relative to root and to the checkout
	// artifact copies only what a Flux artifact of root holds: what ignore
	// (and root's .sourceignore files) match left out, no symlinks.
	artifact bool
	ignore   *string
}

// fetchComposed fetches src's commit and grafts its submodules (when
// RecurseSubmodules) and includes into it: the root to render from.
// fetched counts the repositories fetched for one source.
func (o Options) fetchComposed(ctx context.Context, src config.Source, ca []byte, depth int, fetched *int) (string, Checkout, error) {
	if depth > maxGraftDepth {
		return "", Checkout{}, fmt.Errorf("%s: submodules and includes nest more than %d repositories deep", SafeURL(src.Repo), maxGraftDepth)
	}
	if *fetched++; *fetched > maxGrafts+1 {
		return "", Checkout{}, fmt.Errorf("%s: more than %d submodules and includes in all: refused", SafeURL(src.Repo), maxGrafts)
	}
	co, err := o.fetchGit(ctx, src.Repo, src.Revision, src.Auth, ca, src.RecurseSubmodules)
	if err != nil {
		return "", Checkout{}, err
	}
	if len(co.Submodules) == 0 && len(src.Includes) == 0 {
		return co.Dir, co, nil
	}
	fail := func(err error) (string, Checkout, error) {
		return "", Checkout{}, fmt.Errorf("%s at %s: %w", SafeURL(src.Repo), co.Commit, err)
	}
	var grafts []graft
	if len(co.Submodules) > 0 {
		urls, err := submoduleURLs(co.Dir, src.Repo)
		if err != nil {
			return fail(err)
		}
		for _, sm := range co.Submodules {
			if !config.InRepo(sm.Path) {
				return fail(refused{fmt.Errorf("submodule %q: path leaves the repository", sm.Path)})
			}
			url, ok := urls[sm.Path]
			if !ok {
				return fail(fmt.Errorf("submodule %s: not in .gitmodules", sm.Path))
			}
			sub := config.Source{Repo: url, Revision: sm.Commit, RecurseSubmodules: true}
			if sameHost(url, src.Repo) {
				sub.Auth = src.Auth
			}
			root, _, err := o.fetchComposed(ctx, sub, ca, depth+1, fetched)
			if err != nil {
				return fail(fmt.Errorf("submodule %s: %w", sm.Path, err))
			}
			grafts = append(grafts, graft{name: "submodule " + sm.Path, root: root, to: sm.Path})
		}
	}
	for _, inc := range src.Includes {
		name := SafeURL(inc.Source.Repo)
		switch {
		case inc.ToPath == "" || !config.InRepo(inc.ToPath) || filepath.Clean(filepath.FromSlash(inc.ToPath)) == ".":
			return fail(fmt.Errorf("include %s: toPath %q is not a folder inside the repository", name, inc.ToPath))
		case !config.InRepo(inc.FromPath):
			return fail(fmt.Errorf("include %s: fromPath %q leaves its repository", name, inc.FromPath))
		}
		root, _, err := o.fetchComposed(ctx, inc.Source, ca, depth+1, fetched)
		if err != nil {
			return fail(fmt.Errorf("include %s: %w", name, err))
		}
		grafts = append(grafts, graft{name: "include " + name, root: root, from: inc.FromPath, to: inc.ToPath, artifact: true, ignore: inc.Ignore})
	}
	root, err := o.grafted(ctx, src.Repo, co, grafts)
	if err != nil {
		return fail(err)
	}
	return root, co, nil
}

// grafted composes co's tree with grafts once per commit and set of
// grafted trees, under <Cache.Dir>/includes/<repository>/<key>/root: the
// checkout's files hard-linked (trees are never changed once written) or
// copied, then each graft.
func (o Options) grafted(ctx context.Context, repo string, co Checkout, grafts []graft) (string, error) {
	if o.Cache == nil || o.Cache.Dir == "" {
		return "", errors.New("no cache folder")
	}
	key := sha256.New()
	fmt.Fprintf(key, "%s\n", co.Commit)
	for _, g := range grafts {
		ignore := "-"
		if g.ignore != nil {
			ignore = "+" + *g.ignore
		}
		// root names the grafted commit and, composed, its own grafts.
		fmt.Fprintf(key, "%q %q %q %q %v %q\n", g.name, g.root, g.from, g.to, g.artifact, ignore)
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
		return "", fmt.Errorf("compose the tree: %w", err)
	}
	for _, g := range grafts {
		if err := graftInto(into, g); err != nil {
			return "", fmt.Errorf("%s: %w", g.name, err)
		}
	}
	if err := os.Rename(tmp, filepath.Join(dir, tree)); err != nil {
		return "", err
	}
	return root, o.Cache.used(dir, tree)
}

// graftInto copies g's from of its tree to its to of the tree into.
func graftInto(into string, g graft) error {
	from := filepath.Join(g.root, filepath.FromSlash(g.from))
	if _, err := os.Lstat(from); err != nil {
		return fmt.Errorf("fromPath %q: not in its artifact", g.from)
	}
	to := filepath.Join(into, filepath.FromSlash(g.to))
	if !g.artifact {
		// A submodule's folder: git leaves it empty in the checkout.
		return copyTree(from, to, nil, true)
	}
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("toPath %q already exists in the repository: source-controller cannot copy the include there", g.to)
	}
	ignore, err := sourceignore.MatcherAt(g.root, g.ignore)
	if err != nil {
		return fmt.Errorf("read its ignore rules: %w", err)
	}
	// Only what the artifact holds: what the included repository's
	// rules match is not in it.
	kept := func(p string, dir bool) bool {
		rel, err := filepath.Rel(g.root, p)
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

// submoduleURLs reads the .gitmodules of the tree at dir: each submodule's
// path and URL, a relative URL ("../shared.git") resolved against the
// superproject's repo, as git and go-git resolve it.
func submoduleURLs(dir, repo string) (map[string]string, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := r.ReadFile(".gitmodules")
	if err != nil {
		return nil, fmt.Errorf("the commit has submodules: read .gitmodules: %w", err)
	}
	m := gitconfig.NewModules()
	if err := m.Unmarshal(data); err != nil {
		return nil, fmt.Errorf(".gitmodules: %w", err)
	}
	parent, err := transport.NewEndpoint(repo)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range m.Submodules {
		url := s.URL
		if strings.HasPrefix(url, "./") || strings.HasPrefix(url, "../") {
			ep := *parent
			ep.Path = path.Join(ep.Path, url)
			if ep.Protocol == "file" {
				url = "file://" + ep.Path
			} else {
				url = ep.String()
			}
		}
		// .gitmodules is the repository's, written by anyone who can
		// push: it may not point driftscan at this machine's own files
		// (git refuses file:// submodules by default since CVE-2022-39253)
		// or at a transport it does not speak.
		if helper, _, ok := strings.Cut(url, "::"); ok {
			// git's <transport>::<address> (ext:: runs a command).
			return nil, fmt.Errorf("submodule %s: URL %s: the %s transport is not supported", s.Path, SafeURL(url), helper)
		}
		ep, err := transport.NewEndpoint(url)
		if err != nil {
			return nil, fmt.Errorf("submodule %s: URL %s: %v", s.Path, SafeURL(url), err)
		}
		switch ep.Protocol {
		case "https", "http", "ssh", "git":
		case "file":
			if parent.Protocol != "file" {
				return nil, fmt.Errorf("submodule %s: URL %s is a path on this machine, and the repository is not: refused", s.Path, SafeURL(url))
			}
		default:
			return nil, fmt.Errorf("submodule %s: URL %s: the %s transport is not supported", s.Path, SafeURL(url), ep.Protocol)
		}
		out[path.Clean(s.Path)] = url
	}
	return out, nil
}

// sameHost reports whether two Git URLs name the same host (a credential
// given for one is sent to the other).
func sameHost(a, b string) bool {
	ea, err := transport.NewEndpoint(a)
	if err != nil {
		return false
	}
	eb, err := transport.NewEndpoint(b)
	return err == nil && ea.Protocol == eb.Protocol && ea.Host == eb.Host && ea.Port == eb.Port
}
