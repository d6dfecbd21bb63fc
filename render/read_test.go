package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadAtMostStopsPastTheLimit: a file is read whole up to the limit and
// refused one byte past it, whether its size is known beforehand (a
// regular file, however it grows after it was listed) or not (a pipe).
func TestReadAtMostStopsPastTheLimit(t *testing.T) {
	const max = 1000
	tests := []struct {
		name     string
		size     int
		wantOver bool
	}{
		{"an empty file", 0, false},
		{"a file of one byte", 1, false},
		{"a file just under the limit", max - 1, false},
		{"a file at the limit", max, false},
		{"a file one byte over the limit", max + 1, true},
		{"a file far over the limit", 10 * max, true},
	}
	for _, tt := range tests {
		content := bytes.Repeat([]byte("x"), tt.size)
		check := func(t *testing.T, f *os.File) {
			t.Helper()
			data, _, over, err := readAtMost(f, max)
			switch {
			case err != nil:
				t.Fatal(err)
			case over != tt.wantOver:
				t.Fatalf("over = %v, want %v", over, tt.wantOver)
			case !over && !bytes.Equal(data, content):
				t.Fatalf("read %d bytes, want the file's %d", len(data), len(content))
			case over && len(data) > max+1:
				t.Fatalf("read %d bytes of a file over the limit, want at most %d", len(data), max+1)
			}
		}
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.yaml")
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			check(t, f)
		})
		t.Run(tt.name+", grown after it was opened", func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.yaml")
			if err := os.WriteFile(p, content[:tt.size/2], 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
			check(t, f)
		})
		t.Run(tt.name+", through a pipe", func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			go func() {
				_, _ = w.Write(content)
				w.Close()
			}()
			check(t, r)
		})
	}
}

// TestAFolderReadsWhatTheRootReads: folder reads a regular file, in the
// source folder or one below it, to the same bytes and stamp as a read
// and a stat through the root, and leaves to the root every file it is
// not to read itself: a symlink (inside the root or out of it), a pipe,
// a folder, a file over the limit, one that is gone, and one in a folder
// reached through a symlink that leaves the root.
func TestAFolderReadsWhatTheRootReads(t *testing.T) {
	const max = 1000
	top, outside := t.TempDir(), t.TempDir()
	write := func(rel string, size int) {
		t.Helper()
		p := filepath.Join(top, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("empty.yaml", 0)
	write("one.yaml", 1)
	write("at-limit.yaml", max)
	write("over.yaml", max+1)
	write("far-over.yaml", 10*max)
	write("sub/deeper/nested.yaml", 300)
	if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("kind: Secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"link-inside.yaml":  "one.yaml",
		"link-outside.yaml": filepath.Join(outside, "secret.yaml"),
		"away":              outside,
	} {
		if err := os.Symlink(target, filepath.Join(top, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(top, "pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(top, "folder.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := testRoot(t, top)
	files := []string{"empty.yaml", "one.yaml", "at-limit.yaml", "over.yaml", "far-over.yaml", "sub/deeper/nested.yaml",
		"link-inside.yaml", "link-outside.yaml", "away/secret.yaml", "pipe.yaml", "folder.yaml", "gone.yaml"}
	listed, _, f, _, err := listFolder(root, top)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The listing holds the regular files and the links to them, and
	// leaves out the pipe, the folders and the link to a folder.
	wantListed := []string{"at-limit.yaml", "empty.yaml", "far-over.yaml", "link-inside.yaml", "link-outside.yaml", "one.yaml", "over.yaml", "sub/deeper/nested.yaml"}
	if diff := cmp.Diff(wantListed, listed); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			data, st, ok := f.readFile(file, max)
			want, fi, err := readLimited(root, file, max)
			fi2, lerr := root.Lstat(file)
			wantStamp, regular := fileStamp{}, false
			if lerr == nil {
				wantStamp, regular = stampOf(fi2)
			}
			if runtime.GOOS != "linux" {
				if ok {
					t.Fatalf("read %q outside Linux, want it left to the root", file)
				}
				return
			}
			readsItself := err == nil && regular && fi != nil
			if ok != readsItself {
				t.Fatalf("folder read it: %v, want %v (through the root: %v)", ok, readsItself, err)
			}
			if ok && (!bytes.Equal(data, want) || st != wantStamp) {
				t.Fatalf("read %d bytes stamped %+v, want the root's %d bytes stamped %+v", len(data), st, len(want), wantStamp)
			}
			if got, ok := f.stat(file); ok != regular || got != wantStamp {
				t.Fatalf("stat %+v (%v), want %+v (%v)", got, ok, wantStamp, regular)
			}
		})
	}
}

// TestASourceOfManyFoldersRendersWhole: a source with more folders than
// folder holds open (maxOpenFolders) renders every file, those past the
// bound read through the root, and holds no more than the bound open.
func TestASourceOfManyFoldersRendersWhole(t *testing.T) {
	top := t.TempDir()
	n := maxOpenFolders + 5
	var files []string
	for i := range n {
		rel := fmt.Sprintf("f%03d/cm.yaml", i)
		files = append(files, rel)
		p := filepath.Join(top, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d}\ndata: {k: v}\n", i)
		if err := os.WriteFile(p, []byte(cm), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := testRoot(t, top)
	listed, _, f, _, err := listFolder(root, top)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, listed); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	open := 0
	for _, d := range f.dirs {
		if d != nil {
			open++
		}
	}
	f.Close()
	if open != maxOpenFolders {
		t.Errorf("%d folders open, want the bound, %d", open, maxOpenFolders)
	}
	ms, err := Manifests(context.Background(), Options{Dir: top})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != n {
		t.Fatalf("%d manifests, want %d", len(ms), n)
	}
	for i, m := range ms {
		if want := fmt.Sprintf("cm-%03d", i); m.Ident().Name != want {
			t.Fatalf("manifest %d is %s, want %s", i, m.Ident().Name, want)
		}
	}
}

// TestAManifestThatIsNoRegularFileHasNoStamp: a file listed as a manifest
// that is a pipe by the time it is read (replaced after the listing) is
// read through the root, to its end, and given no stamp for the parse
// cache's file index; a regular file is stamped as its stat says.
func TestAManifestThatIsNoRegularFileHasNoStamp(t *testing.T) {
	top := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(top, "pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "cm.yaml"), []byte("kind: ConfigMap"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := testRoot(t, top)
	src := &sourceRoot{root: root, dir: "."}
	_, _, f, _, err := listFolder(root, top)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, _, stamped, err := readManifest(f, src, "pipe.yaml")
	if err != nil || stamped || len(data) != 0 {
		t.Fatalf("a pipe: %d bytes, stamped %v, %v; want none, unstamped, no error", len(data), stamped, err)
	}
	data, st, stamped, err := readManifest(f, src, "cm.yaml")
	fi, lerr := os.Lstat(filepath.Join(top, "cm.yaml"))
	if lerr != nil {
		t.Fatal(lerr)
	}
	want, wantStamped := stampOf(fi)
	if err != nil || string(data) != "kind: ConfigMap" || stamped != wantStamped || st != want {
		t.Fatalf("a regular file: %q stamped %v %+v, %v; want its bytes stamped %v %+v", data, stamped, st, err, wantStamped, want)
	}
}

// TestAListingTakesWhatAWalkOfTheFolderTakes: listFolder lists the files a
// walk of the source folder that follows no link to a folder would take
// (filepath.WalkDir's), with what each entry is read from the folder's
// entries rather than stat'ed: hidden files and folders, other
// extensions, a link to a folder, a dangling link and a pipe are left out;
// a link to a regular file and a folder named like a manifest are taken;
// a subfolder holding a chart's or a kustomization's file (a regular file
// or a link to one) is another renderer's input and left out, one where
// that name is a folder or a dangling link is not. The folders that hold
// files are held open (mid, which holds none, is not). A source folder
// holding such a file is said to be that renderer's input, and nothing is
// listed.
func TestAListingTakesWhatAWalkOfTheFolderTakes(t *testing.T) {
	top, outside := t.TempDir(), t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	writeTree(t, top, map[string]string{
		"a.yaml":                           cm,
		"b.yml":                            cm,
		"c.json":                           "{}",
		"README.md":                        "# docs",
		".hidden.yaml":                     cm,
		".git/config.yaml":                 cm,
		"link.yaml":                        "-> a.yaml",
		"dangling.yaml":                    "-> gone.yaml",
		"to-folder.yaml":                   "-> sub",
		"linked-folder":                    "-> sub",
		"sub/z.yaml":                       cm,
		"sub/deeper/y.yaml":                cm,
		"mid/deep/w.yaml":                  cm,
		"folder.yaml/x.yaml":               cm,
		"chart/Chart.yaml":                 "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"chart/templates/t.yaml":           cm,
		"linked-chart/Chart.yaml":          "-> ../chart/Chart.yaml",
		"linked-chart/t.yaml":              cm,
		"kust/kustomization.yml":           "resources: []\n",
		"kust/k.yaml":                      cm,
		"kust2/Kustomization":              "resources: []\n",
		"kust2/k.yaml":                     cm,
		"not-kust/kustomization.yaml/x.md": "a folder by that name",
		"not-kust/n.yaml":                  cm,
		"not-chart/Chart.yaml":             "-> nowhere",
		"not-chart/n.yaml":                 cm,
		"out.yaml":                         "-> " + filepath.Join(outside, "out.yaml"),
	})
	if err := os.WriteFile(filepath.Join(outside, "out.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(top, "pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := testRoot(t, top)
	files, errs, f, other, err := listFolder(root, top)
	if err != nil || len(errs) > 0 || other != "" {
		t.Fatalf("listFolder: %v, %v, other %q", err, errs, other)
	}
	defer f.Close()
	want := []string{"a.yaml", "b.yml", "c.json", "folder.yaml/x.yaml", "link.yaml", "mid/deep/w.yaml", "not-chart/n.yaml", "not-kust/n.yaml", "out.yaml", "sub/deeper/y.yaml", "sub/z.yaml"}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	var held []string
	for dir, d := range f.dirs {
		if d != nil {
			held = append(held, dir)
		}
	}
	slices.Sort(held)
	if diff := cmp.Diff([]string{".", "folder.yaml", "mid/deep", "not-chart", "not-kust", "sub", "sub/deeper"}, held); diff != "" {
		t.Errorf("folders held open (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"chart": "Chart.yaml", "linked-chart": "Chart.yaml", "kust": "kustomization.yml", "kust2": "Kustomization", "not-chart": "", "sub": ""} {
		sub, err := root.OpenRoot(name)
		if err != nil {
			t.Fatal(err)
		}
		files, _, f, other, err := listFolder(sub, filepath.Join(top, name))
		sub.Close()
		if err != nil || other != want {
			t.Errorf("%s: other %q, %v; want %q", name, other, err, want)
		}
		if want != "" && (len(files) > 0 || f != nil) {
			t.Errorf("%s is %s's input, and listed %v", name, want, files)
		}
		if f != nil {
			f.Close()
		}
	}
}

// testRoot opens dir as an os.Root, closed when the test ends.
func testRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}
