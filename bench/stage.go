package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// stageBinary copies the binary at src into dir, with plain 1 MiB reads
// and writes, and returns the copy's path. Both tools are timed from such
// copies, because the peak RSS (ru_maxrss) of a Go binary counts the pages
// of its own file that it maps, and how many of those fault in depends on
// how the file's page cache was filled. The same driftscan binary, waiting
// on the network, had 69 MiB of its file resident as the Go linker wrote it
// (48 of them through 2 MiB pages, FilePmdMapped), 48 MiB as copied by cp,
// and 85 MiB as copied by 1 MiB writes; kubectl 35 MiB as installed and 49
// MiB copied by 1 MiB writes. Copied the same way, neither tool is favoured;
// the launcher also reports the anonymous RSS, which does not depend on it.
func stageBinary(src, dir string) (string, error) {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return "", err
	}
	in, err := os.Open(real)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dst := filepath.Join(dir, filepath.Base(real))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	// Only Read and Write, so io.Copy cannot take copy_file_range.
	_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, make([]byte, 1<<20))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("copy %s to %s: %w", real, dst, err)
	}
	return dst, nil
}
