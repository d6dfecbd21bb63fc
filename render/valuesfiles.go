package render

import (
	"errors"
	"fmt"
	"io/fs"
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

// valuesFiles reads src's values files in the order Helm merges them. A
// file that does not exist is left out with IgnoreMissingValuesFiles and
// an error without. With ArgoValueFiles they resolve as argocd-repo-server
// v3.5 resolves an Application's valueFiles (getResolvedValueFiles): a
// path with a glob (`*`, `?`, `[`; `**` for any depth) is each file it
// matches, in the order doublestar's FilepathGlob (Argo CD's own) gives
// them, but for a file the list also names outright, which stays at that
// place; a glob that matches nothing is an error unless missing files are
// ignored; and each file counts once, at its first place. Otherwise each
// is read as listed, as `helm template -f` reads them.
func (s *sourceRoot) valuesFiles(src *config.HelmSource) ([]valuesFile, error) {
	type entry struct{ name, path string }
	var entries []entry
	for _, f := range src.ValuesFiles {
		p, err := s.inside(f)
		if err != nil {
			return nil, fmt.Errorf("values file %w: refused", err)
		}
		entries = append(entries, entry{f, p})
	}
	if src.ArgoValueFiles {
		explicit := map[string]bool{}
		for _, e := range entries {
			if !isGlob(e.path) {
				explicit[e.path] = true
			}
		}
		seen := map[string]bool{}
		var resolved []entry
		add := func(e entry) {
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
			matches, err := doublestar.Glob(s.root.FS(), e.path)
			if err != nil {
				return nil, fmt.Errorf("values file glob %s: %w", e.name, err)
			}
			if len(matches) == 0 && !src.IgnoreMissingValuesFiles {
				return nil, fmt.Errorf("values file glob %s matched no files", e.name)
			}
			for _, m := range matches {
				if !explicit[m] {
					add(entry{strings.TrimPrefix(m, s.dir+"/"), m})
				}
			}
		}
		entries = resolved
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

// isGlob says whether a values file's path is a glob to argocd-repo-server
// (isGlobPath).
func isGlob(p string) bool {
	return strings.ContainsAny(p, "*?[")
}
