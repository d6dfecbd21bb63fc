package scanner

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
)

// TestTheParsedManifestsAreKeptForTheNextScan: a scan with a CacheDir
// keeps the manifests it parsed (not the Secret) in manifests.json; the
// next scan of the unchanged repository reads every manifest from it (it
// parses nothing, so it has nothing to add and leaves the file as it was)
// and reports what a scan without the cache reports.
func TestTheParsedManifestsAreKeptForTheNextScan(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	cfg := scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: fixture("apps", "web")}})
	dir := t.TempDir()
	path := filepath.Join(dir, "manifests.json")

	cachedScan(t, cfg, dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the first scan kept no parsed manifests: %v", err)
	}
	if !bytes.Contains(data, []byte("nginx:1.25")) {
		t.Errorf("%s does not hold the Deployment:\n%s", path, data)
	}
	for _, secret := range []string{"git-password-do-not-leak", "Z2l0LXBhc3N3b3Jk"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the Secret's value %q", path, secret)
		}
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	second := cachedScan(t, cfg, dir)
	if after, err := os.Stat(path); err != nil || !os.SameFile(before, after) {
		t.Errorf("the second scan rewrote %s (%v): it parsed a manifest the cache held", path, err)
	}
	sameAsUncached(t, cfg, second)
}

// TestABrokenManifestCacheIsLoggedAndReplaced: a manifests.json that is
// no cache file is said in the log, by its path; the scan parses every
// manifest, reports what a scan without the cache reports, and writes a
// good file in its place.
func TestABrokenManifestCacheIsLoggedAndReplaced(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	cfg := scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}})
	dir := t.TempDir()
	path := filepath.Join(dir, "manifests.json")
	cachedScan(t, cfg, dir)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"cut off":  good[:len(good)/2],
		"not JSON": []byte("\x00\x01 not a cache"),
	} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		r := cachedScan(t, cfg, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
		if !strings.Contains(log.String(), path) {
			t.Errorf("%s: the log does not name %s:\n%s", name, path, log.String())
		}
		sameAsUncached(t, cfg, r)
		if again, err := os.ReadFile(path); err != nil || !bytes.Contains(again, []byte("nginx:1.25")) {
			t.Errorf("%s: the broken file was not replaced by a good one (%v)", name, err)
		}
	}
}
