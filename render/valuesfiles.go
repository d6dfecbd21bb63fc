package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/calricon/driftscan/config"
)

// valuesFile is one values file a render reads: name is how the app
// lists it (or, for a glob's match, the match), data its contents.
type valuesFile struct {
	name string
	data []byte
}

// valuesFiles reads src's values files (valuesFilePaths) in the order
// Helm merges them. A file that does not exist is left out with
// IgnoreMissingValuesFiles and an error without.
func (s *sourceRoot) valuesFiles(src *config.HelmSource) ([]valuesFile, error) {
	entries, err := s.valuesFilePaths(src)
	if err != nil {
		return nil, err
	}
	out := make([]valuesFile, 0, len(entries))
	for _, e := range entries {
		data, err := s.root.ReadFile(e.path)
		if errors.Is(err, fs.ErrNotExist) && src.IgnoreMissingValuesFiles {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", e.name, err)
		}
		out = append(out, valuesFile{e.name, data})
	}
	return out, nil
}

// valuesPath is a values file as the app lists it (or a glob's match) and
// its slash path inside the root.
type valuesPath struct{ name, path string }

// valuesFilePaths are src's values files in the order Helm merges them,
// each inside the root (a path that leaves it is an error). With
// ArgoValueFiles they resolve as argocd-repo-server v3.5 resolves an
// Application's valueFiles (getResolvedValueFiles): a path with a glob
// (`*`, `?`, `[`; `**` for any depth) is each file it matches, in the order
// doublestar's FilepathGlob (Argo CD's own) gives them, but for a file the
// list also names outright, which stays at that place; a glob that matches
// nothing is an error unless missing files are ignored; and each file
// counts once, at its first place. Otherwise each is the file listed, as
// `helm template -f` reads them.
func (s *sourceRoot) valuesFilePaths(src *config.HelmSource) ([]valuesPath, error) {
	var entries []valuesPath
	for _, f := range src.ValuesFiles {
		p, err := s.inside(f)
		if err != nil {
			return nil, fmt.Errorf("values file %w: refused", err)
		}
		entries = append(entries, valuesPath{f, p})
	}
	if !src.ArgoValueFiles {
		return entries, nil
	}
	explicit := map[string]bool{}
	for _, e := range entries {
		if !isGlob(e.path) {
			explicit[e.path] = true
		}
	}
	seen := map[string]bool{}
	var resolved []valuesPath
	add := func(e valuesPath) {
		if !seen[e.path] {
			seen[e.path] = true
			resolved = append(resolved, e)
		}
	}
	for _, e := range entries {
		if !isGlob(e.path) {
			add(e)
			continue
		}
		// Every directory read and stat is counted: symbolic links to a
		// folder above are followed, so two such links make ** grow without
		// end; an error stops the glob (WithFailOnIOErrors).
		matches, err := doublestar.Glob(&globFS{FS: s.root.FS(), left: globBudget}, e.path, doublestar.WithFailOnIOErrors())
		if err != nil {
			return nil, fmt.Errorf("values file glob %s: %w", e.name, err)
		}
		if len(matches) == 0 && !src.IgnoreMissingValuesFiles {
			return nil, fmt.Errorf("values file glob %s matched no files", e.name)
		}
		for _, m := range matches {
			if !explicit[m] {
				add(valuesPath{strings.TrimPrefix(m, s.dir+"/"), m})
			}
		}
	}
	return resolved, nil
}

// ValuesFilePaths are the values files of src that a render of the chart
// in dir (a folder inside root; root "" for dir itself) reads, in order,
// as paths on disk (valuesFilePaths): a file that does not exist is among
// them.
func ValuesFilePaths(root, dir string, src *config.HelmSource) ([]string, error) {
	s, err := openRoot(Options{Root: root, Dir: dir})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	entries, err := s.valuesFilePaths(src)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = filepath.Join(s.root.Name(), filepath.FromSlash(e.path))
	}
	return out, nil
}

// isGlob says whether a values file's path is a glob to argocd-repo-server
// (isGlobPath).
func isGlob(p string) bool {
	return strings.ContainsAny(p, "*?[")
}

// globBudget is how many directory reads and stats one values file glob
// may make: far more than a repository's values folders need.
const globBudget = 20000

// errGlobBudget stops a glob that would read more than globBudget.
var errGlobBudget = fmt.Errorf("reads more than %d folders and files (symbolic links in a loop?)", globBudget)

// globFS is a file system that gives a glob at most left reads and stats.
type globFS struct {
	fs.FS
	left int
}

func (g *globFS) spend() error {
	if g.left--; g.left < 0 {
		return errGlobBudget
	}
	return nil
}

func (g *globFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := g.spend(); err != nil {
		return nil, err
	}
	return fs.ReadDir(g.FS, name)
}

func (g *globFS) Stat(name string) (fs.FileInfo, error) {
	if err := g.spend(); err != nil {
		return nil, err
	}
	return fs.Stat(g.FS, name)
}
