package run

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/calricon/driftscan/config"
)

// DefaultCacheDir is driftscan/scan under the user's cache folder, where
// the scan command keeps what one scan spares the next (scanner.Options
// CacheDir); "" when the user has no cache folder.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "driftscan", "scan")
}

// scanCacheDir is the folder in base for the scan of cfg by o: one per
// cluster, config folder and selection of apps (shard, --app, discovery
// selector), so that scans of other apps do not take turns replacing each
// other's cache. The cache is checked object by object, so scans that
// share a folder all the same would only spare each other less.
func scanCacheDir(base string, cfg *config.Config, o Options) string {
	if base == "" {
		return ""
	}
	apps := slices.Clone(o.Apps)
	slices.Sort(apps)
	selector := ""
	if o.Discover != nil {
		selector = o.Discover.Options.Selector
	}
	h := sha256.New()
	for _, s := range append([]string{o.Scan.RESTConfig.Host, cfg.Dir, o.Shard, string(o.ShardBy), selector}, apps...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return filepath.Join(base, hex.EncodeToString(h.Sum(nil))[:16])
}

// staleCacheAge is how long a scan's cache folder may go unused before a
// scan of other apps removes it: a verdict is trusted for a day at most,
// so a week-old folder holds nothing a scan would use.
const staleCacheAge = 7 * 24 * time.Hour

// pruneCacheDirs removes the folders of base that scanCacheDir made and
// that no scan has written to for staleCacheAge (a cluster gone, a config
// moved, a demo's cluster), but keep. It removes nothing else, and what
// it cannot remove it leaves.
func pruneCacheDirs(base, keep string, now time.Time, logger *slog.Logger) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(base, e.Name())
		if !e.IsDir() || dir == keep || !isCacheDirName(e.Name()) {
			continue
		}
		if newest, ok := newestIn(dir); ok && now.Sub(newest) < staleCacheAge {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			logger.Debug("cannot remove a stale scan cache", "dir", dir, "err", err)
		}
	}
}

// isCacheDirName says whether name is one scanCacheDir makes: 16 hex digits.
func isCacheDirName(name string) bool {
	if len(name) != 16 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil
}

// newestIn is the latest time a file in dir (or dir itself) was written.
func newestIn(dir string) (time.Time, bool) {
	fi, err := os.Stat(dir)
	if err != nil {
		return time.Time{}, false
	}
	newest := fi.ModTime()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return time.Time{}, false
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().After(newest) {
			newest = info.ModTime()
		}
	}
	return newest, true
}
