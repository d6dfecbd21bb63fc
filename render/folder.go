package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// folder is the source folder a plain render reads its files from, with
// each folder that holds one of them open, so that a file is read or
// stat'ed by its name in its folder. A cold scan of 20,000 files spent a
// tenth of its CPU on their system calls, and os.Root's OpenFile makes six
// for each (openat, an epoll_ctl that fails for a regular file, fstat, two
// reads and close) and allocates an os.File for it; folder reads a regular
// file in four (readFile), and stats it without allocating (stat). A file
// folder cannot read that way (a symlink, one that is not regular or is
// over the limit, one that is gone) is left to the caller, which reads it
// through the root and says why when it cannot. The folders are opened
// through the root, so no symlink takes them outside it.
type folder struct {
	root *os.Root
	// dirs are the folders, by slash path relative to root ("." for
	// root's own); a folder that could not be opened (or past
	// maxOpenFolders) is nil.
	dirs map[string]*os.File
}

// maxOpenFolders bounds the folders a folder holds open at once, so that a
// source of thousands of folders does not use up the process's file
// descriptors (where the hard limit is low, 4,096 say); the files of
// folders past it are read through the root.
const maxOpenFolders = 256

// renderers are the files that make a folder another renderer's input
// (see otherRenderer), in the order manifests asks for them.
var renderers = [...]string{"Chart.yaml", "kustomization.yaml", "kustomization.yml", "Kustomization"}

// listFolder lists the manifest files of the source folder renderYAML
// reads (root, at abs): their slash paths relative to it, sorted, with the
// folders that hold them open in a folder (up to maxOpenFolders). A
// subfolder that cannot be read is an error of its own in errs; the source
// folder itself that cannot be read is err. other is the renderer file
// the source folder holds (otherRenderer), and then nothing is listed.
//
// Each folder is opened once, through the root, its entries read from that
// descriptor, and kept open for its files' reads and stats when it holds
// any; a subfolder is opened by its name in the folder that holds it when
// that is open, without following a symlink. When filepath.WalkDir listed
// the folder by its absolute path, the folder was opened again for the
// reads and the renderer files were stat'ed by path, the listing of an app
// of 25 files took 112 µs of CPU in a warm render (BenchmarkRenderPlainApps),
// about half of what reading the files from the parse cache took; now 69.
func listFolder(root *os.Root, abs string) (files []string, errs []error, f *folder, other string, err error) {
	f = &folder{root: root, dirs: map[string]*os.File{}}
	l := lister{root: root, abs: abs, f: f}
	top, entries, err := l.openFolder(nil, ".")
	if err != nil {
		return nil, nil, nil, "", fmt.Errorf("read %s: %w", abs, err)
	}
	if other = otherRenderer(abs, entries); other != "" {
		_ = top.Close()
		return nil, nil, nil, other, nil
	}
	l.list(".", top, entries)
	slices.Sort(l.files)
	return l.files, l.errs, f, "", nil
}

// lister is one listFolder's walk.
type lister struct {
	root  *os.Root
	abs   string
	f     *folder
	held  int // folders held open in f
	files []string
	errs  []error
}

// openFolder opens the folder rel, in parent when it is open, and reads its
// entries, sorted by name.
func (l *lister) openFolder(parent *os.File, rel string) (*os.File, []os.DirEntry, error) {
	d, err := openDir(l.root, parent, rel, l.path(rel))
	if err != nil {
		return nil, nil, err
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		_ = d.Close()
		return nil, nil, err
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return d, entries, nil
}

// path is the absolute path of rel.
func (l *lister) path(rel string) string {
	return filepath.Join(l.abs, filepath.FromSlash(rel))
}

// list takes the manifest files among the entries of the folder rel, open
// as d, keeps d open when it holds any (or closes it), then lists its
// subfolders in the order of their names.
func (l *lister) list(rel string, d *os.File, entries []os.DirEntry) {
	before := len(l.files)
	var subs []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := name
		if rel != "." {
			p = rel + "/" + name
		}
		if e.IsDir() {
			subs = append(subs, p)
			continue
		}
		switch path.Ext(name) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		if !e.Type().IsRegular() {
			// The folder's entry says what it is without a stat; only a
			// symlink (or an odd file) is stat'ed, through the link. A
			// dangling symlink or a symlink to a folder is no manifest. A
			// file over MaxManifestBytes is refused by readLimited, which
			// checks as it reads (the file may grow after a stat anyway).
			fi, err := os.Stat(l.path(p))
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
		}
		l.files = append(l.files, p)
	}
	switch {
	case len(l.files) > before && l.held < maxOpenFolders:
		l.f.dirs[rel] = d
		l.held++
	case len(l.files) > before:
		l.f.dirs[rel] = nil // its files are read through the root
		fallthrough
	default:
		_ = d.Close()
		d = nil
	}
	for _, sub := range subs {
		sd, entries, err := l.openFolder(d, sub)
		if err != nil {
			// What cannot be listed is an error unless a stat says it is
			// another renderer's input.
			if !isOtherRendererInput(l.path(sub)) {
				l.errs = append(l.errs, &FileError{File: sub, Err: &fs.PathError{Op: "read", Path: l.path(sub), Err: unwrapPath(err)}})
			}
			continue
		}
		if otherRenderer(l.path(sub), entries) != "" {
			_ = sd.Close()
			continue
		}
		l.list(sub, sd, entries)
	}
}

// unwrapPath is the error under a *fs.PathError, so that the error listFolder
// gives names the folder's absolute path once.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// otherRenderer is the first of renderers that a folder at abs with entries
// holds as a regular file, "" for none. An entry that is a symlink (or of a
// kind its entry does not say) counts when a stat through it finds a
// regular file, as it did when each name was stat'ed.
func otherRenderer(abs string, entries []os.DirEntry) string {
	for _, name := range renderers {
		i, found := slices.BinarySearchFunc(entries, name, func(e os.DirEntry, name string) int { return strings.Compare(e.Name(), name) })
		if !found {
			continue
		}
		e := entries[i]
		if e.Type().IsRegular() || !e.IsDir() && exists(filepath.Join(abs, name)) {
			return name
		}
	}
	return ""
}

// Close closes the folders.
func (f *folder) Close() {
	for _, d := range f.dirs {
		if d != nil {
			_ = d.Close()
		}
	}
}
