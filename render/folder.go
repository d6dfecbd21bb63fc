package render

import (
	"os"
	"path"
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

// openFolder opens the folders of files, slash paths relative to root, up
// to maxOpenFolders of them.
func openFolder(root *os.Root, files []string) *folder {
	f := &folder{root: root, dirs: map[string]*os.File{}}
	open := 0
	for _, file := range files {
		dir := path.Dir(file)
		if _, seen := f.dirs[dir]; seen {
			continue
		}
		var d *os.File
		if open < maxOpenFolders {
			if o, err := root.Open(dir); err == nil {
				d = o
				open++
			}
		}
		f.dirs[dir] = d
	}
	return f
}

// Close closes the folders.
func (f *folder) Close() {
	for _, d := range f.dirs {
		if d != nil {
			_ = d.Close()
		}
	}
}
