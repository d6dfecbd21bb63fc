package backport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/scanner"
)

// TestBackportNeverWritesThroughASymlink: a manifest that is a symlink, or
// sits in a symlinked folder, is where the scan read the object, but
// writing it would change another file than the one named; backport
// refuses, naming the link, and the linked file keeps its content.
func TestBackportNeverWritesThroughASymlink(t *testing.T) {
	tests := []struct {
		name string
		link string // relative to the app folder
		to   string
		file string // the manifest, relative to the app folder
	}{
		{"the manifest is a symlink", "config.yaml", "../../shared/config.yaml", "config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := worktree(t, "../fixtures/backport/plain", "shared")
			shared := filepath.Join(root, "shared", "config.yaml")
			before, err := os.ReadFile(shared)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, "apps", "web")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"deployment.yaml", "secret.yaml"} {
				if err := os.Remove(filepath.Join(root, "shared", f)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(tt.to, filepath.Join(dir, tt.link)); err != nil {
				t.Fatal(err)
			}
			commitAll(t, root)

			ns := env.Namespace(t, nil)
			app := config.App{Name: "web", Namespace: ns, Source: config.Source{Path: "apps/web"}}
			cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Appliers: config.DefaultAppliers(), Apps: []config.App{app}, Dir: root}
			abs := app
			abs.Source.Path = dir
			manifests, err := render.Manifests(t.Context(), render.Options{Dir: dir, Root: root, Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range manifests {
				env.Apply(t, "argocd-controller", ns, mf.Object)
			}
			env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
			opts := scanner.DefaultOptions()
			opts.RESTConfig = env.Config
			r, err := scanner.Scan(t.Context(), cfg, opts)
			if err != nil || r.Apps[0].Error != "" {
				t.Fatalf("scan: %v %s", err, r.Apps[0].Error)
			}

			_, err = Run(t.Context(), r.Apps[0], options(root, abs, "INC-1"))
			want := "apps/web/" + tt.link + " is a symlink (to " + tt.to + "): refusing to write apps/web/" + tt.file + " through it"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Run err = %v, want it to contain %q", err, want)
			}
			after, _ := os.ReadFile(shared)
			if string(after) != string(before) {
				t.Errorf("the linked file was written:\n%s", after)
			}
		})
	}
}

// commitAll commits every change in the working tree at root.
func commitAll(t *testing.T, root string) {
	t.Helper()
	r, err := git.PlainOpen(root)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("links", &git.CommitOptions{Author: &object.Signature{Name: "Test", Email: "test@example.com", When: now}}); err != nil {
		t.Fatal(err)
	}
}
