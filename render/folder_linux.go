package render

import (
	"io"
	"path"

	"golang.org/x/sys/unix"
)

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
