//go:build !linux

package render

import "os"

// openDir opens the folder rel (a slash path relative to root) through the
// root.
func openDir(root *os.Root, _ *os.File, rel, _ string) (*os.File, error) {
	return root.Open(rel)
}

// readFile reads nothing outside Linux: the caller reads each file
// through the root.
func (f *folder) readFile(string, int64) ([]byte, fileStamp, bool) {
	return nil, fileStamp{}, false
}

// stat is the stamp of file through the root (none outside Linux: see
// stampOf).
func (f *folder) stat(file string) (fileStamp, bool) {
	fi, err := f.root.Lstat(file)
	if err != nil {
		return fileStamp{}, false
	}
	return stampOf(fi)
}
