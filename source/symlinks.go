package source

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinkHops bounds how many symlinks one path may pass through, as the
// kernel's ELOOP does.
const maxLinkHops = 40

// checkLinks refuses a tree in which a symlink resolves outside root. Each
// link is resolved component by component, following the links it passes
// through the way the kernel does, so a chain that each link's own text
// hides (a/b -> .., then leak -> a/b/a/b/../..) is caught; a link whose
// target does not exist is resolved as far as it goes. The error names the
// first link, relative to root.
func checkLinks(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if _, err := resolveInside(root, filepath.ToSlash(rel)); err != nil {
			target, _ := os.Readlink(p)
			return fmt.Errorf("symlink %s -> %s: %w", filepath.ToSlash(rel), target, err)
		}
		return nil
	})
}

// errOutside is returned by resolveInside for a path that leaves the root.
var errOutside = errors.New("resolves outside the repository")

// resolveInside resolves rel, a slash path relative to root, following every
// symlink on the way, and returns the slash path it names relative to root.
// It fails with errOutside when the path, or a link on the way, leaves root;
// the part of the path that does not exist is taken as it is written.
func resolveInside(root, rel string) (string, error) {
	var cur []string // resolved components, relative to root
	todo := strings.Split(rel, "/")
	hops := 0
	exists := true
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", errOutside
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(cur[:len(cur):len(cur)], c)
		if !exists {
			cur = next
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(strings.Join(next, "/"))))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			exists = false
			cur = next
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("more than %d symlinks on the way: a loop", maxLinkHops)
		}
		target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(strings.Join(next, "/"))))
		if err != nil {
			return "", err
		}
		target = filepath.ToSlash(target)
		if strings.HasPrefix(target, "/") || filepath.IsAbs(filepath.FromSlash(target)) {
			return "", errOutside
		}
		// The link's target replaces it, relative to the link's folder.
		todo = append(strings.Split(target, "/"), todo...)
	}
	return strings.Join(cur, "/"), nil
}
