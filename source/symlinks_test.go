package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/render"
)

// chainTo is a symlink target that each link's own text keeps inside the
// repository, and that a/b -> .. takes levels levels above it: every a/b
// lexically goes down two folders and physically stays at the root.
func chainTo(levels int, outside string) string {
	return strings.Repeat("a/b/", levels) + strings.Repeat("../", 2*levels) + strings.TrimPrefix(filepath.ToSlash(outside), "/")
}

// TestASymlinkChainCannotReadOutsideTheCheckout is issue 17's attack: a
// chart reads a file outside its checkout through .Files.Get and a chain of
// links that passes a check of each link's own text.
func TestASymlinkChainCannotReadOutsideTheCheckout(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("pod-service-account-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	levels := strings.Count(filepath.Clean(t.TempDir()), string(filepath.Separator)) + 8
	dir, _ := gitrepo.Bare(t, "", map[string]string{
		"chart/Chart.yaml":          "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
		"chart/templates/leak.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak}\ndata: {token: {{ .Files.Get \"leak.txt\" | quote }}}\n",
		"a/b":                       gitrepo.Link(".."),
		"chart/leak.txt":            gitrepo.Link("../" + chainTo(levels, secret)),
	})
	co, err := FetchGit(t.Context(), GitOptions{Repo: "file://" + dir, Cache: NewCache(t.TempDir())})
	if err == nil {
		ms, rerr := render.Manifests(t.Context(), render.Options{Dir: filepath.Join(co.Dir, "chart")})
		for _, m := range ms {
			if v, _, _ := unstructured.NestedString(m.Object.Object, "data", "token"); v != "" {
				t.Errorf("the chart read %q from outside its checkout", v)
			}
		}
		t.Fatalf("FetchGit accepted the chain (render: %v)", rerr)
	}
	if !strings.Contains(err.Error(), "symlink chart/leak.txt -> ") || !strings.Contains(err.Error(), "resolves outside the repository") {
		t.Fatalf("FetchGit err = %v, want the chain refused naming chart/leak.txt", err)
	}
}

func TestLinksInsideTheCheckoutStillWork(t *testing.T) {
	dir, sha := gitrepo.Bare(t, "", map[string]string{
		"shared/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n",
		"apps/web/cm.yaml":   gitrepo.Link("../../shared/cm.yaml"),
		"apps/web/dangling":  gitrepo.Link("../../nowhere/x"),
		"apps/web/up/a/self": gitrepo.Link(".."),
	})
	co, err := FetchGit(t.Context(), GitOptions{Repo: "file://" + dir, Cache: NewCache(t.TempDir())})
	if err != nil || co.Commit != sha[0] {
		t.Fatalf("FetchGit = %+v, %v", co, err)
	}
	ms, err := render.Manifests(t.Context(), render.Options{Dir: filepath.Join(co.Dir, "apps", "web"), Root: co.Dir})
	if err != nil || len(ms) != 1 || ms[0].Object.GetName() != "shared" {
		t.Fatalf("render through a link inside the checkout: %d manifests, %v", len(ms), err)
	}
}

func TestResolveInside(t *testing.T) {
	root := t.TempDir()
	for link, target := range map[string]string{"a/b": "..", "abs": "/etc", "loop": "loop", "dir/up": "../.."} {
		p := filepath.Join(root, filepath.FromSlash(link))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ path, want, err string }{
		{"a/b/a/b/x", "x", ""},
		{"a/b/a/b/../x", "", "outside"},
		{"abs/passwd", "", "outside"},
		{"loop", "", "a loop"},
		{"dir/up", "", "outside"},
		{"missing/../../x", "", "outside"},
		{"missing/y", "missing/y", ""},
	}
	for _, tt := range tests {
		got, err := resolveInside(root, tt.path)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("resolveInside(%s) = %q, %v; want an error %q", tt.path, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("resolveInside(%s) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}
