//go:build !linux

package render

import "io/fs"

// stampOf gives no stamp outside Linux: every file is read, as without
// the file index (see fileStamp).
func stampOf(fs.FileInfo) (fileStamp, bool) { return fileStamp{}, false }
