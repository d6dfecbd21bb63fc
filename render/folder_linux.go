package render

import (
	"io"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// openDir opens the folder rel (a slash path relative to root; abs is its
// absolute path, the name of the file returned): by its name in parent,
// the folder that holds it, without following a symlink, or, with no
// parent, through the root and then again by its descriptor. The entries
// of a folder opened in an os.Root are each stat'ed when read (os
// newUnixDirent); those of one opened otherwise say their type themselves.
// O_NONBLOCK, which does nothing to a folder, spares the fcntl calls os
// makes around its attempt to poll it.
func openDir(root *os.Root, parent *os.File, rel, abs string) (*os.File, error) {
	name := path.Base(rel)
	if parent == nil {
		d, err := root.OpenFile(rel, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		parent, name = d, "."
	}
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(int(parent.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: abs, Err: err}
	}
	return os.NewFile(uintptr(fd), abs), nil
}

// readFile reads file (a slash path relative to the root) when it is a
// regular file of at most max bytes, and stamps it; ok is false when it
// is not read so (see folder). It opens the file by its name in its folder
// without following a symlink and reads it to the size fstat gives
// (readSized).
func (f *folder) readFile(file string, max int64) (data []byte, st fileStamp, ok bool) {
	d := f.dirs[path.Dir(file)]
	if d == nil {
		return nil, fileStamp{}, false
	}
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(int(d.Fd()), path.Base(file), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return nil, fileStamp{}, false
	}
	defer unix.Close(fd)
	var s unix.Stat_t
	if retryEINTR(func() error { return unix.Fstat(fd, &s) }) != nil || s.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fileStamp{}, false
	}
	data, over, err := readSized(fdReader(fd), s.Size, max)
	if err != nil || over {
		return nil, fileStamp{}, false
	}
	return data, stampOfStat(&s), true
}

// fdReader reads a descriptor as an io.Reader does: io.EOF at its end.
type fdReader int

func (fd fdReader) Read(p []byte) (int, error) {
	var n int
	err := retryEINTR(func() (err error) {
		n, err = unix.Read(int(fd), p)
		return err
	})
	switch {
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// stat is the stamp of file (a slash path relative to the root) when it is
// a regular file, from an fstatat in its folder that follows no symlink.
func (f *folder) stat(file string) (fileStamp, bool) {
	d := f.dirs[path.Dir(file)]
	if d == nil {
		return fileStamp{}, false
	}
	var s unix.Stat_t
	if retryEINTR(func() error {
		return unix.Fstatat(int(d.Fd()), path.Base(file), &s, unix.AT_SYMLINK_NOFOLLOW)
	}) != nil || s.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileStamp{}, false
	}
	return stampOfStat(&s), true
}

// stampOfStat is the stamp of a regular file that s, its stat, describes.
func stampOfStat(s *unix.Stat_t) fileStamp {
	return fileStamp{size: s.Size, mtime: s.Mtim.Nano(), ctime: s.Ctim.Nano(), ino: s.Ino}
}

// retryEINTR runs op again for as long as a signal interrupts it.
func retryEINTR(op func() error) error {
	for {
		if err := op(); err != unix.EINTR {
			return err
		}
	}
}
