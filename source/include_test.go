package source

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/gitrepo"
)

// TestIncludesAreCopiedAsSourceControllerCopiesThem: a GitRepository's
// spec.include puts another repository's artifact (its own includes in,
// what its ignore rules match out, no symlinks) at toPath, fromPath of it
// only; the including repository's files are all there; the tree is
// composed once per set of commits; a toPath the repository already holds
// fails, as source-controller's rename does.
func TestIncludesAreCopiedAsSourceControllerCopiesThem(t *testing.T) {
	mainDir, mainSHAs := gitrepo.Bare(t, "", map[string]string{
		"apps/kustomization.yaml": "resources: [../shared/base]\n",
		"apps/link.yaml":          gitrepo.Link("kustomization.yaml"),
		"taken/readme.md":         "mine\n",
	})
	sharedDir, sharedSHAs := gitrepo.Bare(t, "", map[string]string{
		"deploy/base/cm.yaml":         "kind: ConfigMap\n",
		"deploy/base/notes.txt":       "left out by spec.ignore\n",
		"deploy/base/.sourceignore":   "secret.env\n",
		"deploy/base/secret.env":      "left out by .sourceignore\n",
		"deploy/base/link.yaml":       gitrepo.Link("cm.yaml"),
		"deploy/base/.github/ci.yaml": "kept: where ignore rules exist, CI folders are not left out by default\n",
		"README.md":                   "outside fromPath\n",
	}, map[string]string{"deploy/base/cm.yaml": "kind: ConfigMap # v2\n"})
	nestedDir, nestedSHAs := gitrepo.Bare(t, "", map[string]string{"policy.yaml": "kind: Policy\n"})

	ignore := "*.txt\n"
	opts := Options{Cache: NewCache(t.TempDir()), Getenv: os.Getenv}
	src := config.Source{Repo: "file://" + mainDir, Revision: mainSHAs[0], Path: "apps", Includes: []config.Include{{
		Source: config.Source{Repo: "file://" + sharedDir, Revision: sharedSHAs[0], Includes: []config.Include{{
			Source: config.Source{Repo: "file://" + nestedDir, Revision: nestedSHAs[0]}, ToPath: "deploy/base/nested",
		}}},
		Ignore: &ignore, FromPath: "deploy", ToPath: "shared",
	}}}
	loc, err := Resolve(t.Context(), t.TempDir(), src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Commit != mainSHAs[0] || loc.Dir != filepath.Join(loc.Root, "apps") {
		t.Errorf("location %+v: want the main commit %s and apps under the root", loc, mainSHAs[0])
	}
	want := map[string]string{
		"apps/kustomization.yaml":        "resources: [../shared/base]\n",
		"apps/link.yaml":                 "-> kustomization.yaml",
		"taken/readme.md":                "mine\n",
		"shared/base/cm.yaml":            "kind: ConfigMap\n",
		"shared/base/.sourceignore":      "secret.env\n",
		"shared/base/.github/ci.yaml":    "kept: where ignore rules exist, CI folders are not left out by default\n",
		"shared/base/nested/policy.yaml": "kind: Policy\n",
	}
	if diff := cmp.Diff(want, treeFiles(t, loc.Root)); diff != "" {
		t.Errorf("composed tree (-want +got):\n%s", diff)
	}

	again, err := Resolve(t.Context(), t.TempDir(), src, opts)
	if err != nil || again.Root != loc.Root {
		t.Errorf("the same commits composed again: %v, root %s, want %s", err, again.Root, loc.Root)
	}
	src.Includes[0].Source.Revision = sharedSHAs[1]
	moved, err := Resolve(t.Context(), t.TempDir(), src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Root == loc.Root {
		t.Error("a newer commit of the included repository gives the same tree")
	}
	if data, _ := os.ReadFile(filepath.Join(moved.Root, "shared", "base", "cm.yaml")); string(data) != "kind: ConfigMap # v2\n" {
		t.Errorf("the newer include's cm.yaml = %q", data)
	}

	for _, c := range []struct {
		name    string
		mutate  func(*config.Include)
		message string
	}{
		{"a toPath the repository holds", func(i *config.Include) { i.ToPath = "taken" }, `toPath "taken" already exists`},
		{"a fromPath the artifact lacks", func(i *config.Include) { i.FromPath = "nowhere" }, `fromPath "nowhere": not in its artifact`},
		{"a toPath out of the repository", func(i *config.Include) { i.ToPath = "../up" }, `toPath "../up" is not a folder inside`},
		{"a fromPath out of the repository", func(i *config.Include) { i.FromPath = "../../etc" }, `fromPath "../../etc" leaves`},
		{"a revision that is not there", func(i *config.Include) { i.Source.Revision = strings.Repeat("0", 40) }, "include file://"},
	} {
		bad := src
		inc := src.Includes[0]
		c.mutate(&inc)
		bad.Includes = []config.Include{inc}
		_, err := Resolve(t.Context(), t.TempDir(), bad, opts)
		if err == nil || !strings.Contains(err.Error(), c.message) || !strings.Contains(err.Error(), mainSHAs[0]) {
			t.Errorf("%s: error %v, want one naming the commit and %q", c.name, err, c.message)
		}
	}
}

// treeFiles is every file and symlink under root, a symlink as "-> target".
func treeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "-> " + target
			return err
		}
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSubmodulesAreCheckedOutAtTheirRecordedCommits: with
// RecurseSubmodules, a submodule's folder holds its repository at the
// commit the superproject records (not its newest), from the URL
// .gitmodules names (relative to the superproject's), its own submodules
// too; without it the folder is not there, as before.
func TestSubmodulesAreCheckedOutAtTheirRecordedCommits(t *testing.T) {
	base := t.TempDir()
	leafDir := filepath.Join(base, "leaf.git")
	leaf := gitrepo.BareAt(t, leafDir, "", map[string]string{"policy.yaml": "kind: Policy\n"})
	libDir := filepath.Join(base, "lib.git")
	lib := gitrepo.BareAt(t, libDir, "", map[string]string{
		"base/cm.yaml":   "kind: ConfigMap # recorded\n",
		"base/link.yaml": gitrepo.Link("cm.yaml"),
		".gitmodules":    "[submodule \"leaf\"]\n\tpath = policies\n\turl = ../leaf.git\n",
		"policies":       gitrepo.Gitlink(leaf[0]),
	}, map[string]string{"base/cm.yaml": "kind: ConfigMap # newer, not recorded\n"})
	mainDir := filepath.Join(base, "main.git")
	main := gitrepo.BareAt(t, mainDir, "", map[string]string{
		"apps/kustomization.yaml": "resources: [../vendor/lib/base]\n",
		".gitmodules":             "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = ../lib.git\n",
		"vendor/lib":              gitrepo.Gitlink(lib[0]),
	})
	opts := Options{Cache: NewCache(t.TempDir()), Getenv: os.Getenv}
	src := config.Source{Repo: "file://" + mainDir, Revision: main[0], Path: "apps", RecurseSubmodules: true}
	loc, err := Resolve(t.Context(), t.TempDir(), src, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		".gitmodules":                     "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = ../lib.git\n",
		"apps/kustomization.yaml":         "resources: [../vendor/lib/base]\n",
		"vendor/lib/.gitmodules":          "[submodule \"leaf\"]\n\tpath = policies\n\turl = ../leaf.git\n",
		"vendor/lib/base/cm.yaml":         "kind: ConfigMap # recorded\n",
		"vendor/lib/base/link.yaml":       "-> cm.yaml",
		"vendor/lib/policies/policy.yaml": "kind: Policy\n",
	}
	if diff := cmp.Diff(want, treeFiles(t, loc.Root)); diff != "" {
		t.Errorf("tree with submodules (-want +got):\n%s", diff)
	}

	src.RecurseSubmodules = false
	plain, err := Resolve(t.Context(), t.TempDir(), src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plain.Root, "vendor", "lib", "base")); err == nil {
		t.Error("without RecurseSubmodules the submodule is checked out")
	}

	// A submodule .gitmodules does not name is an error naming it.
	broken := gitrepo.BareAt(t, filepath.Join(base, "broken.git"), "", map[string]string{"vendor/x": gitrepo.Gitlink(lib[0]), ".gitmodules": ""})
	_, err = Resolve(t.Context(), t.TempDir(), config.Source{Repo: "file://" + filepath.Join(base, "broken.git"), Revision: broken[0], RecurseSubmodules: true}, opts)
	if err == nil || !strings.Contains(err.Error(), "submodule vendor/x: not in .gitmodules") {
		t.Errorf("a submodule without a URL: %v", err)
	}
}

// TestSubmoduleURLsStayOffThisMachine: .gitmodules is written by anyone who
// can push, so a submodule may not point driftscan at a path of the machine
// it runs on (git refuses file:// submodules by default since
// CVE-2022-39253) unless the repository itself is one, nor at a transport
// it does not speak; relative URLs resolve against the repository's.
func TestSubmoduleURLsStayOffThisMachine(t *testing.T) {
	for _, c := range []struct {
		repo, url, want, err string
	}{
		{"https://git.example/org/app.git", "../lib.git", "https://git.example/org/lib.git", ""},
		{"https://git.example/org/app.git", "./sub/lib.git", "https://git.example/org/app.git/sub/lib.git", ""},
		{"ssh://git@git.example/org/app.git", "../lib.git", "ssh://git@git.example/org/lib.git", ""},
		{"https://git.example/org/app.git", "https://other.example/lib.git", "https://other.example/lib.git", ""},
		{"file:///srv/git/app.git", "../lib.git", "file:///srv/git/lib.git", ""},
		{"https://git.example/org/app.git", "file:///etc/deploy-keys.git", "", "is a path on this machine"},
		{"https://git.example/org/app.git", "/var/lib/secrets.git", "", "is a path on this machine"},
		{"https://git.example/org/app.git", "ext::sh -c touch% /tmp/pwned", "", "not supported"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".gitmodules"), []byte("[submodule \"lib\"]\n\tpath = lib\n\turl = "+c.url+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := submoduleURLs(dir, c.repo)
		switch {
		case c.err == "" && (err != nil || got["lib"] != c.want):
			t.Errorf("%s in %s: %v, %v; want %s", c.url, c.repo, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "submodule lib")):
			t.Errorf("%s in %s: %v, %v; want an error naming the submodule and %q", c.url, c.repo, got, err, c.err)
		}
	}
}

// TestSubmodulesAreBounded: a repository's .gitmodules decides how many
// repositories a scan fetches for it; past 100 in all the source is an app
// error naming the bound, not ten thousand fetches.
func TestSubmodulesAreBounded(t *testing.T) {
	base := t.TempDir()
	lib := gitrepo.BareAt(t, filepath.Join(base, "lib.git"), "", map[string]string{"cm.yaml": "kind: ConfigMap\n"})
	files := map[string]string{}
	var modules strings.Builder
	for i := range 101 {
		p := fmt.Sprintf("vendor/lib%d", i)
		files[p] = gitrepo.Gitlink(lib[0])
		fmt.Fprintf(&modules, "[submodule %q]\n\tpath = %s\n\turl = ../lib.git\n", p, p)
	}
	files[".gitmodules"] = modules.String()
	main := gitrepo.BareAt(t, filepath.Join(base, "main.git"), "", files)
	opts := Options{Cache: NewCache(t.TempDir()), Getenv: os.Getenv}
	_, err := Resolve(t.Context(), t.TempDir(), config.Source{Repo: "file://" + filepath.Join(base, "main.git"), Revision: main[0], RecurseSubmodules: true}, opts)
	if err == nil || !strings.Contains(err.Error(), "more than 100 submodules and includes") {
		t.Errorf("101 submodules: %v, want the bound named", err)
	}
}
