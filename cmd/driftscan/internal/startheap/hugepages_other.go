//go:build !linux

package startheap

// adviseHugePages does nothing: huge pages for the heap are asked for on
// Linux only (hugepages_linux.go).
func adviseHugePages() {}
