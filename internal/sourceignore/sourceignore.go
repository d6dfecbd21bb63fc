// Package sourceignore is what a Flux source-controller artifact leaves out
// of a repository, read as source-controller reads it.
package sourceignore

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// A Flux Kustomization builds from its source's artifact, not from the
// repository: source-controller archives the checkout leaving out what
// fluxcd/pkg/sourceignore matches (v0.18.0, as source-controller v1.9.6
// uses it through fluxcd/pkg/artifact's SourceIgnoreFilter):
//
//   - .git/, .gitignore, .gitmodules and .gitattributes, always;
//   - the patterns of every .sourceignore file in the repository (each
//     scoped to its folder, .git/ not searched) and the GitRepository's
//     spec.ignore, in that order;
//   - only when there are none of those, images, archives, CI files
//     (.github/, .gitlab-ci.yml, ...) and .goreleaser.yml, .sops.yaml and
//     .flux.yaml anywhere.
//
// Each path is matched on its own (the archive walk does not skip an
// ignored folder, so a negation re-includes a file below one). The
// matcher is go-git's plumbing/format/gitignore, of which sourceignore's
// gitignore package is a copy (identical code).
const (
	excludeVCS   = ".git/,.gitignore,.gitmodules,.gitattributes"
	excludeExt   = "*.jpg,*.jpeg,*.gif,*.png,*.wmv,*.flv,*.tar.gz,*.zip"
	excludeCI    = ".github/,.circleci/,.travis.yml,.gitlab-ci.yml,appveyor.yml,.drone.yml,cloudbuild.yaml,codeship-services.yml,codeship-steps.yml"
	excludeExtra = "**/.goreleaser.yml,**/.sops.yaml,**/.flux.yaml"
)

// sourceIgnoreFile is the name of the files whose patterns an artifact
// leaves out.
const sourceIgnoreFile = ".sourceignore"

// maxFileBytes bounds the reading of one .sourceignore file.
const maxFileBytes = 8 << 20

// MatcherAt is what source-controller leaves out of the artifact of the
// repository at root, given its GitRepository's spec.ignore.
func MatcherAt(root string, spec *string) (gitignore.Matcher, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return Matcher(r.FS(), spec)
}

// Matcher is MatcherAt of the repository fsys.
func Matcher(fsys fs.FS, spec *string) (gitignore.Matcher, error) {
	ps, err := sourceIgnorePatterns(fsys, ".", nil)
	if err != nil {
		return nil, err
	}
	if spec != nil {
		ps = append(ps, ignorePatterns(strings.NewReader(*spec), nil)...)
	}
	vcs := ignorePatterns(strings.NewReader(strings.ReplaceAll(excludeVCS, ",", "\n")), nil)
	if len(ps) == 0 {
		defaults := strings.Join([]string{excludeExt, excludeCI, excludeExtra}, "\n")
		return gitignore.NewMatcher(append(vcs, ignorePatterns(strings.NewReader(strings.ReplaceAll(defaults, ",", "\n")), nil)...)), nil
	}
	return gitignore.NewMatcher(append(vcs, ps...)), nil
}

// sourceIgnorePatterns reads dir's .sourceignore, then each subfolder's
// (in name order, .git/ left out), as sourceignore.LoadIgnorePatterns
// does. Symlinks are not followed.
func sourceIgnorePatterns(fsys fs.FS, dir string, domain []string) ([]gitignore.Pattern, error) {
	var ps []gitignore.Pattern
	f, err := fsys.Open(path.Join(dir, sourceIgnoreFile))
	switch {
	case err == nil:
		st, serr := f.Stat()
		if serr == nil && st.Mode().IsRegular() {
			ps = ignorePatterns(io.LimitReader(f, maxFileBytes), domain)
		}
		f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == ".git" {
			continue
		}
		sub, err := sourceIgnorePatterns(fsys, path.Join(dir, e.Name()), append(domain[:len(domain):len(domain)], e.Name()))
		if err != nil {
			return nil, err
		}
		ps = append(ps, sub...)
	}
	return ps, nil
}

// ignorePatterns are the patterns of r's lines, comments and blank lines
// left out (sourceignore.ReadPatterns: a line past bufio's 64 KiB ends
// the reading, as there).
func ignorePatterns(r io.Reader, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "#") && len(strings.TrimSpace(line)) > 0 {
			ps = append(ps, gitignore.ParsePattern(line, domain))
		}
	}
	return ps
}
