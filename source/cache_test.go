package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/gitrepo"
)

// repoFolder is the folder a Cache keeps url in.
func repoFolder(c *Cache, url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:16]))
}

// TestACorruptCachedRepositoryIsClonedAgain: a cached repository broken on
// disk (a process killed while it wrote, a full disk) failed every later
// fetch of that repository until someone emptied the cache by hand ("open
// cache ...: ..." for a broken config). Now it is cloned again. (Missing or
// truncated objects were already fetched again by the shallow fallback.)
func TestACorruptCachedRepositoryIsClonedAgain(t *testing.T) {
	breaks := []struct {
		name    string
		breakIt func(t *testing.T, repo string)
	}{
		{"a config that is not Git's", func(t *testing.T, repo string) {
			write(t, filepath.Join(repo, "config"), "[core\x00garbage")
		}},
		{"every object and pack truncated", func(t *testing.T, repo string) {
			err := filepath.WalkDir(filepath.Join(repo, "objects"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					err = os.Truncate(p, 7)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, b := range breaks {
		t.Run(b.name, func(t *testing.T) {
			dir, shas := gitrepo.Bare(t, "", map[string]string{"app/cm.yaml": "v: 1\n"})
			url := "file://" + dir
			cache := NewCache(t.TempDir())
			if _, err := FetchGit(t.Context(), GitOptions{Repo: url, Cache: cache}); err != nil {
				t.Fatal(err)
			}
			b.breakIt(t, filepath.Join(repoFolder(cache, url), "repo.git"))
			next := gitrepo.Commit(t, dir, "v2", map[string]string{"app/cm.yaml": "v: 2\n"})

			co, err := FetchGit(t.Context(), GitOptions{Repo: url, Cache: NewCache(cache.Dir)})
			if err != nil {
				t.Fatalf("the fetch after the cache broke: %v", err)
			}
			if co.Commit != next {
				t.Errorf("commit %s, want %s (not the first, %s)", co.Commit, next, shas[0])
			}
			if got, err := os.ReadFile(filepath.Join(co.Dir, "app", "cm.yaml")); err != nil || string(got) != "v: 2\n" {
				t.Errorf("checkout: %q, %v", got, err)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAFetchWaitsForAnotherProcessOnTheSameRepository: shards sharing a
// cache volume fetched into one repository at once. Now a file lock
// serializes them: while another process (here: another open file
// description, as flock(2) sees a process) holds the repository's lock, a
// fetch waits, and gives up with its context; once released it runs.
func TestAFetchWaitsForAnotherProcessOnTheSameRepository(t *testing.T) {
	dir, shas := gitrepo.Bare(t, "", map[string]string{"app/cm.yaml": "v: 1\n"})
	url := "file://" + dir
	cache := NewCache(t.TempDir())
	if err := os.MkdirAll(repoFolder(cache, url), 0o755); err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(filepath.Join(repoFolder(cache, url), "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err = FetchGit(ctx, GitOptions{Repo: url, Cache: cache})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for another process's lock") {
		t.Fatalf("err = %v, want the fetch to wait for the other process's lock until its deadline", err)
	}

	time.AfterFunc(200*time.Millisecond, func() { other.Close() })
	co, err := FetchGit(t.Context(), GitOptions{Repo: url, Cache: cache})
	if err != nil || co.Commit != shas[0] {
		t.Fatalf("after the other process let go: %v, %s", err, co.Commit)
	}
}

// TestTreesUnusedForKeepRunsArePruned: every commit ever scanned stayed in
// the cache as a full tree, so a persistent cache volume only grew. Now a
// tree that KeepRuns runs did not use is removed, and fetched again (from
// the cached repository) when a later run wants it.
func TestTreesUnusedForKeepRunsArePruned(t *testing.T) {
	dir, shas := gitrepo.Bare(t, "", map[string]string{"app/cm.yaml": "v: 1\n"}, map[string]string{"app/cm.yaml": "v: 2\n"})
	url := "file://" + dir
	cacheDir := t.TempDir()
	fetch := func(rev string) Checkout {
		t.Helper()
		// One Cache is one run.
		co, err := FetchGit(t.Context(), GitOptions{Repo: url, Revision: rev, Cache: &Cache{Dir: cacheDir, KeepRuns: 2}})
		if err != nil {
			t.Fatal(err)
		}
		return co
	}
	old := fetch(shas[0])
	// A killed process's half-written tree.
	stale := filepath.Join(filepath.Dir(old.Dir), ".tree-123")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	fetch(shas[1])
	if _, err := os.Stat(old.Dir); err != nil {
		t.Fatalf("the tree of %s was pruned one run after its use: %v", shas[0], err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the half-written tree is still there: %v", err)
	}
	fetch(shas[1])
	if _, err := os.Stat(old.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the tree of %s, unused for 2 runs, is still there: %v", shas[0], err)
	}
	if co := fetch(shas[0]); co.Dir != old.Dir {
		t.Errorf("fetched again at %s, want %s", co.Dir, old.Dir)
	} else if got, err := os.ReadFile(filepath.Join(co.Dir, "app", "cm.yaml")); err != nil || string(got) != "v: 1\n" {
		t.Errorf("the tree fetched again: %q, %v", got, err)
	}
}
