package run

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStaleScanCachesAreRemovedAndNothingElse: a scan removes the cache
// folders of other scans that nobody wrote to for a week, and keeps its
// own, the recent ones, and whatever is not a scan cache folder.
func TestStaleScanCachesAreRemovedAndNothingElse(t *testing.T) {
	base := t.TempDir()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	mk := func(name string, age time.Duration) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "verdicts.json")
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := now.Add(-age)
		for _, p := range []string{f, dir} {
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	own := mk("0123456789abcdef", 30*24*time.Hour)
	stale := mk("fedcba9876543210", 8*24*time.Hour)
	recent := mk("00112233445566ff", 6*24*time.Hour)
	other := mk("my-notes", 90*24*time.Hour)
	pruneCacheDirs(base, own, now, slog.New(slog.DiscardHandler))
	for dir, want := range map[string]bool{own: true, stale: false, recent: true, other: true} {
		_, err := os.Stat(dir)
		if got := err == nil; got != want {
			t.Errorf("%s kept = %v, want %v", filepath.Base(dir), got, want)
		}
	}
}
