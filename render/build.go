package render

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync"
)

// BuildIdentity names the running driftscan build for what it keeps
// between runs (ParseCache, the scanner's verdict cache): its module
// version and commit and, for a build from a work tree (no version, or
// uncommitted changes), the executable's size and time as well, so that a
// rebuilt binary never trusts what another build wrote.
var BuildIdentity = sync.OnceValue(func() string {
	id := "unknown"
	modified := true
	if bi, ok := debug.ReadBuildInfo(); ok {
		id = bi.Main.Path + "@" + bi.Main.Version
		modified = bi.Main.Version == "" || bi.Main.Version == "(devel)"
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				id += " " + s.Value
			case "vcs.modified":
				modified = modified || s.Value == "true"
			}
		}
	}
	if modified {
		if exe, err := os.Executable(); err == nil {
			if fi, err := os.Stat(exe); err == nil {
				id += fmt.Sprintf(" %d@%d", fi.Size(), fi.ModTime().UnixNano())
			}
		}
	}
	return id
})
