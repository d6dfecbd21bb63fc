package render

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// sourceRoot is the folder a render may read from, opened as an os.Root so
// that no file, symlink or values file takes it outside, and the source
// folder's slash path inside it.
type sourceRoot struct {
	root *os.Root
	// dir is Options.Dir relative to the root, with forward slashes; "."
	// for the root itself.
	dir string
	// artifact, when set, matches the files a Flux artifact leaves out
	// (sourceignore.Matcher), by their path from the root.
	artifact gitignore.Matcher
}

// leftOut says whether the file name (a slash path relative to dir) is
// not in the source's Flux artifact.
func (s *sourceRoot) leftOut(name string) bool {
	return s.artifact != nil && s.artifact.Match(strings.Split(path.Join(s.dir, name), "/"), false)
}

// openRoot opens opts.Root, or opts.Dir when Root is empty.
func openRoot(opts Options) (*sourceRoot, error) {
	top := opts.Root
	if top == "" {
		top = opts.Dir
	}
	rel, err := filepath.Rel(top, opts.Dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("source folder %s is not inside %s", opts.Dir, top)
	}
	r, err := os.OpenRoot(top)
	if err != nil {
		return nil, err
	}
	return &sourceRoot{root: r, dir: filepath.ToSlash(rel)}, nil
}

func (s *sourceRoot) Close() error { return s.root.Close() }

// inside is the slash path, relative to the root, of file: relative to the
// source folder, or absolute. It fails for a path that leaves the root.
func (s *sourceRoot) inside(file string) (string, error) {
	var rel string
	if filepath.IsAbs(file) {
		r, err := filepath.Rel(s.root.Name(), file)
		if err != nil {
			return "", err
		}
		rel = r
	} else {
		rel = filepath.Join(filepath.FromSlash(s.dir), filepath.FromSlash(file))
	}
	if !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("%s leaves the repository", file)
	}
	return filepath.ToSlash(rel), nil
}
