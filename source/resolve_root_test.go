package source

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/calricon/driftscan/config"
)

// TestALocalSourceIsBoundedByItsWorkTree: a local folder may read from the
// Git work tree that holds it (a kustomize overlay's base elsewhere in the
// checkout), or the config's folder when that is wider; outside both, from
// itself only.
func TestALocalSourceIsBoundedByItsWorkTree(t *testing.T) {
	top := t.TempDir()
	for _, d := range []string{"checkout/.git", "checkout/deploy/overlays/prod", "loose/app", "config"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, configDir, path, want string
	}{
		{"inside a work tree, the work tree", filepath.Join(top, "config"), filepath.Join(top, "checkout/deploy/overlays/prod"), filepath.Join(top, "checkout")},
		{"inside a work tree under the config's folder, the config's folder", top, "checkout/deploy/overlays/prod", top},
		{"outside any work tree and the config's folder, the folder itself", filepath.Join(top, "config"), filepath.Join(top, "loose/app"), filepath.Join(top, "loose/app")},
	}
	// A scan's apps share one Cache, which remembers which folders hold a
	// .git: each answer is the same as without it, in any order.
	shared := NewCache(t.TempDir())
	for _, cache := range []*Cache{nil, shared, shared} {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				loc, err := Resolve(t.Context(), tt.configDir, config.Source{Path: tt.path}, Options{Cache: cache})
				if err != nil {
					t.Fatal(err)
				}
				if loc.Root != tt.want {
					t.Errorf("root %s, want %s (a run's cache: %v)", loc.Root, tt.want, cache != nil)
				}
			})
		}
	}

	t.Run("a relative folder gets a root relative alike", func(t *testing.T) {
		t.Chdir(filepath.Join(top, "checkout", "deploy"))
		loc, err := Resolve(t.Context(), "", config.Source{Path: "overlays/prod"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if loc.Root != ".." {
			t.Errorf("root %s, want ..", loc.Root)
		}
	})
}
