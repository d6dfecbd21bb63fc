package render

import (
	"path"
	"slices"

	"golang.org/x/sys/unix"
)

// readFile reads file (a slash path relative to the root) when it is a
// regular file of at most max bytes, and stamps it; ok is false when it
// is not read so (see folder).
//
// It opens the file by its name in its folder without following a
// symlink, takes its size from fstat, and reads into a buffer one byte
// larger: a read that fills it to the size fstat gave is the whole file,
// as of that read, so no second read looks for its end. A file that is
// shorter than fstat said, or whose size fstat did not give, is read to
// its end, and one that grows past max is left to the caller.
func (f *folder) readFile(file string, max int64) (data []byte, st fileStamp, ok bool) {
	d := f.dirs[path.Dir(file)]
	if d == nil {
		return nil, fileStamp{}, false
	}
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, path.Base(file), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return nil, fileStamp{}, false
	}
	defer unix.Close(fd)
	var s unix.Stat_t
	if retryEINTR(func() error { return unix.Fstat(fd, &s) }) != nil || s.Mode&unix.S_IFMT != unix.S_IFREG || s.Size > max {
		return nil, fileStamp{}, false
	}
	data = make([]byte, 0, s.Size+1)
	for {
		if len(data) == cap(data) {
			if int64(len(data)) > max {
				return nil, fileStamp{}, false
			}
			data = slices.Grow(data, 512)
		}
		var n int
		if err := retryEINTR(func() (err error) {
			n, err = unix.Read(fd, data[len(data):cap(data)])
			return err
		}); err != nil {
			return nil, fileStamp{}, false
		}
		data = data[:len(data)+n]
		if n == 0 || s.Size > 0 && int64(len(data)) == s.Size {
			break
		}
	}
	if int64(len(data)) > max {
		return nil, fileStamp{}, false
	}
	return data, stampOfStat(&s), true
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
		return unix.Fstatat(d.fd, path.Base(file), &s, unix.AT_SYMLINK_NOFOLLOW)
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
