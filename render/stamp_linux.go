package render

import (
	"io/fs"
	"syscall"
)

// stampOf is what fi says of its file for the parse cache's file index:
// false when fi does not carry the system's stat (see fileStamp).
func stampOf(fi fs.FileInfo) (fileStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fileStamp{}, false
	}
	return fileStamp{
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
		ino:   uint64(st.Ino),
	}, true
}
