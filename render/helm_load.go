package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"helm.sh/helm/v4/pkg/ignore"
)

// maxChartDepth bounds how deep chartFiles follows folders, symlinked ones
// included: a link to a parent folder would otherwise loop.
const maxChartDepth = 64

// chartFiles reads the files of the chart in the source folder (those of
// its Flux artifact, when it is read from one) as Helm's loader.LoadDir does (.helmignore and its defaults, symlinked files and
// folders followed, a UTF-8 BOM dropped, at most
// archive.MaxDecompressedChartSize bytes in all), in the order it loads
// them, for loader.LoadFiles; but it reads every file through the os.Root:
// a link that leaves the root is an error, so .Files.Get never returns a
// file outside the repository.
func chartFiles(src *sourceRoot) ([]*archive.BufferedFile, error) {
	in := openChartRoot(src)
	defer in.Close()
	rules := ignore.Empty()
	// A .helmignore the Flux artifact leaves out is none.
	if !src.leftOut(ignore.HelmIgnore) {
		data, err := in.readFile(ignore.HelmIgnore)
		switch {
		case err == nil:
			if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
				return nil, err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	rules.AddDefaults()

	var files []*archive.BufferedFile
	budget := archive.MaxDecompressedChartSize
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > maxChartDepth {
			return fmt.Errorf("%s: folders nested more than %d deep (a symlink loop?)", dir, maxChartDepth)
		}
		f, err := in.open(dir)
		if err != nil {
			return err
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return err
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return cmpString(a.Name(), b.Name()) })
		for _, e := range entries {
			n := path.Join(dir, e.Name())
			if dir == "." {
				n = e.Name()
			}
			// Stat follows a symlink, and fails for one that leaves the root.
			fi, err := in.stat(n)
			if err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
			if rules.Ignore(n, fi) {
				continue
			}
			if fi.IsDir() {
				if err := walk(n, depth+1); err != nil {
					return err
				}
				continue
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("cannot load irregular file %s as it has file mode type bits set", n)
			}
			if src.leftOut(n) {
				continue // not in the Flux artifact the chart is built from
			}
			if budget -= fi.Size(); budget < 0 {
				return fmt.Errorf("chart is larger than the maximum size %d", archive.MaxDecompressedChartSize)
			}
			data, err := in.readFile(n)
			if err != nil {
				return fmt.Errorf("error reading %s: %w", n, err)
			}
			files = append(files, &archive.BufferedFile{Name: n, ModTime: fi.ModTime(), Data: bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})})
		}
		return nil
	}
	if err := walk(".", 0); err != nil {
		return nil, err
	}
	return files, nil
}

// chartRoot reads a chart's files (by their path in the chart) through a
// root of the chart folder's own, so that each is one openat rather than
// one per folder from the repository's top. A path that cannot be reached
// there for another reason than not being there (a symlink to elsewhere in
// the repository) is read again through the repository's root, which also
// says why when it cannot be.
type chartRoot struct {
	src *sourceRoot
	own *os.Root // nil: the chart folder is the repository's
}

func openChartRoot(src *sourceRoot) chartRoot {
	c := chartRoot{src: src}
	if src.dir != "." {
		if own, err := src.root.OpenRoot(src.dir); err == nil {
			c.own = own
		}
	}
	return c
}

func (c chartRoot) Close() {
	if c.own != nil {
		c.own.Close()
	}
}

// through does op on name in the chart's own root, then, unless that
// worked or found nothing there, in the repository's.
func through[T any](c chartRoot, name string, op func(r *os.Root, p string) (T, error)) (T, error) {
	if c.own != nil {
		v, err := op(c.own, name)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return v, err
		}
	}
	return op(c.src.root, path.Join(c.src.dir, name))
}

func (c chartRoot) open(name string) (*os.File, error) {
	return through(c, name, (*os.Root).Open)
}

func (c chartRoot) stat(name string) (fs.FileInfo, error) {
	return through(c, name, (*os.Root).Stat)
}

func (c chartRoot) readFile(name string) ([]byte, error) {
	return through(c, name, (*os.Root).ReadFile)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
