package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// DefaultKeepRuns is how many runs a checked-out tree outlives its last use.
const DefaultKeepRuns = 10

// Cache is a folder of Git clones, safe to share between processes (shards
// of one scan on one volume):
//   - the fetches of one repository serialize, within the process and,
//     through a file lock (<repository folder>/lock, flock(2)), across
//     processes; a fetch waiting for the lock gives up with its context;
//   - a repository that cannot be read or fetched into (a process killed
//     while it wrote, a full disk) is cloned again from scratch;
//   - each Cache is one run: a tree that no run through this folder used
//     for KeepRuns runs is removed, as are temporary trees a killed process
//     left behind.
type Cache struct {
	// Dir is the folder; it is created when missing.
	Dir string
	// KeepRuns is how many runs an unused tree is kept; 0 means
	// DefaultKeepRuns, a negative number forever.
	KeepRuns int
	locks    sync.Map // repository folder -> *sync.Mutex
	runs     sync.Map // repository folder -> this run's number there
	// gitDirs says, for the folders localRoot looked at in this run,
	// whether each holds a .git: apps in one checkout share its parents,
	// and 200 apps asked six parents each (1,200 stats of a 5,000-object
	// scan, at 18 µs a stat on these machines).
	gitDirs sync.Map // absolute folder -> bool
	// indexes are the chart repositories' index.yaml read in this run,
	// parsed: apps with charts from one repository (and an app's pending
	// sync) read it once, not once each (it can be tens of MiB).
	indexes sync.Map // repository URL and credential -> *indexRead
}

// indexRead is one repository's index, read once.
type indexRead struct {
	once  sync.Once
	index *chartIndex
	err   error
}

// index returns the index read under key in this run, reading it with read
// the first time.
func (c *Cache) index(key string, read func() (*chartIndex, error)) (*chartIndex, error) {
	v, _ := c.indexes.LoadOrStore(key, &indexRead{})
	r := v.(*indexRead)
	r.once.Do(func() { r.index, r.err = read() })
	return r.index, r.err
}

// NewCache is the cache of Git clones in dir.
func NewCache(dir string) *Cache { return &Cache{Dir: dir} }

// lock takes the lock of one repository folder, in the process and on disk,
// and returns its unlock.
func (c *Cache) lock(ctx context.Context, dir string) (unlock func(), err error) {
	mu, _ := c.locks.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		mu.(*sync.Mutex).Unlock()
		return nil, fmt.Errorf("create cache %s: %w", dir, err)
	}
	release, err := lockFile(ctx, filepath.Join(dir, "lock"))
	if err != nil {
		mu.(*sync.Mutex).Unlock()
		return nil, fmt.Errorf("cache %s: waiting for another process's lock: %w", dir, err)
	}
	return func() { release(); mu.(*sync.Mutex).Unlock() }, nil
}

// lockPoll is how often a lock held by another process is tried again.
const lockPoll = 50 * time.Millisecond

// refused is an error about what a commit holds (too big, a link out):
// cloning again would not change it.
type refused struct{ error }

func (r refused) Unwrap() error { return r.error }

// healable reports whether err, from a fetch into a cached repository, may
// come from the repository being broken: not the context, not the remote
// (no such revision, credentials refused), not the commit's content.
func healable(ctx context.Context, err error) bool {
	var r refused
	return ctx.Err() == nil && !errors.As(err, &r) &&
		!errors.Is(err, ErrRevisionNotFound) &&
		!errors.Is(err, transport.ErrAuthenticationRequired) &&
		!errors.Is(err, transport.ErrAuthorizationFailed) &&
		!errors.Is(err, transport.ErrRepositoryNotFound)
}

// usage is <repository folder>/runs.json: the number of the last run that
// used the folder, and the last run that used each tree.
type usage struct {
	Run   int            `json:"run"`
	Trees map[string]int `json:"trees"`
}

var treeName = regexp.MustCompile(`^[0-9a-f]{40}$`)

// used records that this run used the tree of commit in the repository
// folder dir and prunes what no run used for KeepRuns runs. It is called
// with dir's lock held.
func (c *Cache) used(dir, commit string) error {
	keep := c.KeepRuns
	if keep == 0 {
		keep = DefaultKeepRuns
	}
	file := filepath.Join(dir, "runs.json")
	var u usage
	if data, err := os.ReadFile(file); err == nil {
		// A broken file starts the count again: it only ever delays pruning.
		_ = json.Unmarshal(data, &u)
	}
	if u.Trees == nil {
		u.Trees = map[string]int{}
	}
	run, ok := c.runs.Load(dir)
	if !ok {
		u.Run++
		run = u.Run
		c.runs.Store(dir, run)
	}
	u.Trees[commit] = run.(int)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		switch {
		case len(name) > 6 && name[:6] == ".tree-":
			// Half a tree a killed process left: nobody writes here
			// without the lock.
			errs = append(errs, os.RemoveAll(p))
		case !e.IsDir() || !treeName.MatchString(name):
		case u.Trees[name] == 0:
			u.Trees[name] = run.(int) // cached before runs were counted
		case keep > 0 && run.(int)-u.Trees[name] >= keep:
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
			checkedTrees.Delete(p)
			delete(u.Trees, name)
		}
	}
	for name := range u.Trees {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			delete(u.Trees, name)
		}
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file+".tmp", data, 0o644); err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, os.Rename(file+".tmp", file))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cache %s: prune: %w", dir, err)
	}
	return nil
}
