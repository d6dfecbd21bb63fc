package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kustomizeScan builds opts with the cache file at path, as a scan does,
// and saves the cache.
func kustomizeScan(t *testing.T, opts Options, path string) ([]Manifest, ParseCacheStats, error) {
	t.Helper()
	c, err := OpenParseCache(path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	opts.Parsed = c
	ms, buildErr := Manifests(t.Context(), opts)
	if err := c.Save(); err != nil {
		t.Fatalf("save: %v", err)
	}
	return ms, c.Stats(), buildErr
}

// TestAnUnchangedKustomizationIsNotBuiltAgain: a scan whose kustomization
// reads what the last build read (its files, its bases', its patches',
// its generators' inputs, wherever they are in the repository) takes that
// build's objects from the cache without building; a change to any of
// those files, a new resource, a file gone or turned into a link out of the
// repository builds again, with what a build without the cache gives,
// errors included.
func TestAnUnchangedKustomizationIsNotBuiltAgain(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(repo, os.DirFS(renderFixture(t, "kustomize"))); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "base", "app.properties"), "level=info\n")
	edit := func(file, old, new string) {
		t.Helper()
		editFile(t, filepath.Join(repo, filepath.FromSlash(file)), old, new)
	}
	edit("base/kustomization.yaml", "  - service.yaml\n", "  - service.yaml\nconfigMapGenerator:\n  - name: web-config\n    files: [app.properties]\n")
	opts := Options{Dir: filepath.Join(repo, "overlays", "prod"), Root: repo}
	path := filepath.Join(t.TempDir(), "manifests.json")

	// check scans opts twice: the first builds (unless built says the
	// cache holds the build already), the second reads the build from the
	// cache; both give what a build without a cache gives.
	check := func(what string, built bool) {
		t.Helper()
		want, wantErr := uncached(t, opts)
		for i, wantBuilds := range []int{0, 1} {
			if i == 0 && built {
				wantBuilds = 1
			}
			if wantErr != nil {
				wantBuilds = 0
			}
			got, stats, err := kustomizeScan(t, opts, path)
			sameOutput(t, what, want, got, wantErr, err)
			if stats.Kustomizations != wantBuilds {
				t.Errorf("%s, scan %d: %d builds read from the cache, want %d", what, i+1, stats.Kustomizations, wantBuilds)
			}
		}
	}
	check("first", false)
	edit("base/deployment.yaml", "nginx", "nginx-mirror")
	check("a base's resource edited", false)
	edit("overlays/prod/replicas.yaml", "replicas: 3", "replicas: 5")
	check("a patch edited", false)
	edit("overlays/prod/kustomization.yaml", `newTag: "1.26"`, `newTag: "1.27"`)
	check("the overlay edited", false)
	edit("base/app.properties", "info", "debug")
	check("a generator's input edited", false)
	writeFile(t, filepath.Join(repo, "base", "pdb.yaml"), "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\nspec:\n  minAvailable: 1\n")
	edit("base/kustomization.yaml", "  - service.yaml\n", "  - service.yaml\n  - pdb.yaml\n")
	check("a resource added", false)

	service := filepath.Join(repo, "base", "service.yaml")
	data, err := os.ReadFile(service)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(service); err != nil {
		t.Fatal(err)
	}
	check("a resource gone", false)
	outside := filepath.Join(t.TempDir(), "service.yaml")
	writeFile(t, outside, string(data))
	if err := os.Symlink(outside, service); err != nil {
		t.Fatal(err)
	}
	check("a resource linked from outside the repository", false)
	if err := os.Remove(service); err != nil {
		t.Fatal(err)
	}
	writeFile(t, service, string(data))
	check("the resource back", false)
}

// TestAKustomizationThatCannotBeReplayedIsBuiltEveryTime: a build that
// makes a Secret, and one that may fetch remote resources, are built on
// every scan, and the Secret's data is not in the cache file.
func TestAKustomizationThatCannotBeReplayedIsBuiltEveryTime(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), "resources: [cm.yaml]\nsecretGenerator:\n  - name: creds\n    literals: [password=from-git-literal]\n")
	writeFile(t, filepath.Join(dir, "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n")
	path := filepath.Join(t.TempDir(), "manifests.json")
	for scan := 1; scan <= 2; scan++ {
		if ms, stats, err := kustomizeScan(t, Options{Dir: dir}, path); err != nil || len(ms) != 2 || stats.Kustomizations != 0 {
			t.Errorf("a Secret made, scan %d: %d objects, %+v, %v; want it built", scan, len(ms), stats, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "from-git-literal") {
		t.Error("the cache file holds the Secret's data")
	}

	plain := filepath.Join(t.TempDir(), "plain")
	writeFile(t, filepath.Join(plain, "kustomization.yaml"), "resources: [cm.yaml]\n")
	writeFile(t, filepath.Join(plain, "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n")
	for scan := 1; scan <= 2; scan++ {
		if _, stats, err := kustomizeScan(t, Options{Dir: plain, KustomizeRemote: true}, path); err != nil || stats.Kustomizations != 0 {
			t.Errorf("remote resources allowed, scan %d: %+v, %v; want it built", scan, stats, err)
		}
	}
}

// TestABuildEntryThatDoesNotDecodeIsDropped: an entry that is not one this
// build writes is dropped, and the kustomization is built.
func TestABuildEntryThatDoesNotDecodeIsDropped(t *testing.T) {
	opts := Options{Dir: renderFixture(t, "kustomize/base")}
	want, wantErr := uncached(t, opts)
	for name, broken := range map[string]string{
		"not an entry":               `{}`,
		"a read of no known kind":    `[[["z","/x","t"]],[]]`,
		"objects that do not decode": `[[],[[0,{"kind":"ConfigMap"}]]]`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "manifests.json")
			kustomizeScan(t, opts, path)
			c, key := entryOf(t, path, cacheKustomize)
			c.entries[key].objects = []byte(broken)
			o := opts
			o.Parsed = c
			got, err := Manifests(t.Context(), o)
			sameOutput(t, name, want, got, wantErr, err)
			if st := c.Stats(); st.Kustomizations != 0 || st.Rejected != 1 {
				t.Errorf("stats %+v, want the entry rejected and the kustomization built", st)
			}
		})
	}
}

// TestAReplayResolvesPathsAsEvalSymlinksDoes: the folder-by-folder
// resolution a replay keeps gives what filepath.EvalSymlinks gives, for
// folders and files reached through links to folders, links to files,
// chains of links, and paths that do not exist.
func TestAReplayResolvesPathsAsEvalSymlinksDoes(t *testing.T) {
	top := t.TempDir()
	writeFile(t, filepath.Join(top, "real", "sub", "a.yaml"), "a")
	writeFile(t, filepath.Join(top, "other", "b.yaml"), "b")
	for link, target := range map[string]string{
		"linked":             "real",
		"real/sub/to-b.yaml": "../../other/b.yaml",
		"chain":              "linked",
		"real/up":            "..",
		"dangling":           "nowhere",
	} {
		if err := os.Symlink(target, filepath.Join(top, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	b, err := newBoundedFS(top, false)
	if err != nil {
		t.Fatal(err)
	}
	b.resolved = map[string]resolvedPath{}
	for _, p := range []string{
		"real/sub/a.yaml", "linked/sub/a.yaml", "chain/sub/a.yaml", "real/sub/to-b.yaml", "chain/sub/to-b.yaml",
		"real/up/other/b.yaml", "linked/up/linked/sub", "dangling", "dangling/x", "real/missing.yaml", "missing/a.yaml", ".",
	} {
		abs := filepath.Join(top, filepath.FromSlash(p))
		for range 2 { // worked out, then kept
			want, wantErr := filepath.EvalSymlinks(abs)
			got, err := b.evalSymlinks(abs)
			if got != want || (err == nil) != (wantErr == nil) {
				t.Errorf("%s: %q, %v; EvalSymlinks gives %q, %v", p, got, err, want, wantErr)
			}
		}
	}
}
