package run

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"

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
