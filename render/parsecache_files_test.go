//go:build linux

package render

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestParseCacheFileIndex: a plain manifest file whose stat is what the
// last render's was is served from the cache without being opened, and
// gives what the parser gives; any change to the file is seen, even one
// that keeps its size and puts its mtime back, and a file changed just
// before its read is never taken on its stamp.
func TestParseCacheFileIndex(t *testing.T) {
	const (
		cmA   = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: \"1\"}\n"
		cmB   = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
		later = time.Hour
	)
	// setup writes a source folder of two files, one in a subfolder,
	// renders it once with the clock an hour on and returns its folder,
	// the cache file and the first render's manifests.
	setup := func(t *testing.T) (dir, cache string, first []Manifest) {
		t.Helper()
		dir, cache = t.TempDir(), filepath.Join(t.TempDir(), "manifests.json")
		writeFile(t, filepath.Join(dir, "a.yaml"), cmA)
		writeFile(t, filepath.Join(dir, "sub", "b.yaml"), cmB)
		got := renderCachedLater(t, Options{Dir: dir}, cache, later)
		if got.err != nil || got.stats != (ParseCacheStats{Parsed: 2}) {
			t.Fatalf("first render: %+v, %v", got.stats, got.err)
		}
		return dir, cache, got.ms
	}
	dataK := func(ms []Manifest) any {
		for _, m := range ms {
			if m.Object.GetName() == "a" {
				return m.Object.Object["data"].(map[string]any)["k"]
			}
		}
		return nil
	}

	t.Run("unchanged files are not opened", func(t *testing.T) {
		dir, cache, first := setup(t)
		for run := range 2 {
			got := renderCachedLater(t, Options{Dir: dir}, cache, later)
			if want := (ParseCacheStats{Hits: 2, Unread: 2}); got.stats != want {
				t.Fatalf("render %d: %+v, want %+v", run+2, got.stats, want)
			}
			// What the parser gives, and the Digests of the bytes read.
			sameManifests(t, "from the file index", withoutDigests(first), got.ms, nil, got.err)
			if !reflect.DeepEqual(digests(got.ms), digests(first)) {
				t.Errorf("digests %v, the first render's %v", digests(got.ms), digests(first))
			}
		}
	})

	edits := map[string]func(t *testing.T, file string){
		"an edit of the same size, its mtime put back": func(t *testing.T, file string) {
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			waitForNextCtime(t, file)
			writeFile(t, file, strings.Replace(cmA, `"1"`, `"2"`, 1))
			if err := os.Chtimes(file, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
		"a new file renamed over it": func(t *testing.T, file string) {
			next := file + ".new"
			writeFile(t, next, strings.Replace(cmA, `"1"`, `"2"`, 1))
			if err := os.Rename(next, file); err != nil {
				t.Fatal(err)
			}
		},
		"a longer file": func(t *testing.T, file string) {
			writeFile(t, file, strings.Replace(cmA, `"1"`, `"2222"`, 1))
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			dir, cache, _ := setup(t)
			edit(t, filepath.Join(dir, "a.yaml"))
			got := renderCachedLater(t, Options{Dir: dir}, cache, later)
			if want := (ParseCacheStats{Hits: 1, Unread: 1, Parsed: 1}); got.stats != want {
				t.Errorf("%+v, want %+v: the edited file read, the other not", got.stats, want)
			}
			if k := dataK(got.ms); k == "1" || k == nil {
				t.Errorf("data.k = %v after the edit: the old bytes were served", k)
			}
		})
	}

	t.Run("a file changed just before its read is read every time", func(t *testing.T) {
		dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.json")
		file := filepath.Join(dir, "a.yaml")
		writeFile(t, file, cmA)
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := stampOf(fi)
		// Each render reads the file half a second after its change.
		justAfter := func() time.Time { return time.Unix(0, st.ctime).Add(500 * time.Millisecond) }
		for run := range 3 {
			got := renderCachedAt(t, Options{Dir: dir}, cache, justAfter)
			if got.stats.Unread != 0 {
				t.Fatalf("render %d: %+v: a file changed half a second before its read was taken on its stamp", run+1, got.stats)
			}
		}
		// Two seconds after, it is kept, and the next render takes it.
		justOver := func() time.Time { return time.Unix(0, st.ctime).Add(2 * time.Second) }
		renderCachedAt(t, Options{Dir: dir}, cache, justOver)
		if got := renderCachedAt(t, Options{Dir: dir}, cache, justOver); got.stats.Unread != 1 {
			t.Errorf("%+v: a file changed two seconds before its read was not taken on its stamp", got.stats)
		}
	})

	t.Run("a symlink is read every time", func(t *testing.T) {
		dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.json")
		writeFile(t, filepath.Join(dir, "real", "a.yml.txt"), cmA)
		if err := os.Symlink(filepath.Join("real", "a.yml.txt"), filepath.Join(dir, "a.yaml")); err != nil {
			t.Fatal(err)
		}
		renderCachedLater(t, Options{Dir: dir}, cache, later)
		got := renderCachedLater(t, Options{Dir: dir}, cache, later)
		if want := (ParseCacheStats{Hits: 1}); got.stats != want || dataK(got.ms) != "1" {
			t.Errorf("%+v, data.k %v; want %+v and the target's object", got.stats, dataK(got.ms), want)
		}
	})

	t.Run("a file with a Secret or an error is not indexed", func(t *testing.T) {
		dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "manifests.json")
		writeFile(t, filepath.Join(dir, "secret.yaml"), "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
		writeFile(t, filepath.Join(dir, "broken.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
		renderCachedLater(t, Options{Dir: dir}, cache, later)
		got := renderCachedLater(t, Options{Dir: dir}, cache, later)
		if want := (ParseCacheStats{Parsed: 2}); got.stats != want || got.err == nil {
			t.Errorf("%+v, %v; want %+v and the broken file's error", got.stats, got.err, want)
		}
	})

	t.Run("a file no longer rendered leaves the index", func(t *testing.T) {
		dir, cache, _ := setup(t)
		if err := os.Remove(filepath.Join(dir, "sub", "b.yaml")); err != nil {
			t.Fatal(err)
		}
		renderCachedLater(t, Options{Dir: dir}, cache, later)
		c, err := OpenParseCache(cache)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for p := range c.files {
			paths = append(paths, p)
		}
		if want := []string{filepath.Join(dir, "a.yaml")}; !reflect.DeepEqual(paths, want) {
			t.Errorf("index holds %v, want %v", paths, want)
		}
	})
}

// TestParseCacheRejectsHostileFileLines: a cache file whose file index is
// not what Save writes (a path that is not absolute, a key of no entry, a
// path twice, a stamp that is no number) is a warning naming the file, and
// every file is read.
func TestParseCacheRejectsHostileFileLines(t *testing.T) {
	file := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: git}\n")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cm.yaml"), string(file))
	key := keyOf(cacheYAML, file)
	good := string(appendFileLine(nil, filepath.Join(dir, "cm.yaml"), &fileEntry{key: key, stamp: fileStamp{size: 1, mtime: 2, ctime: 3, ino: 4}}))
	other := string(appendFileLine(nil, filepath.Join(dir, "cm.yaml"), &fileEntry{key: keyOf(cacheYAML, []byte("x")), stamp: fileStamp{size: 1}}))
	cases := map[string]string{
		"a relative path":           strings.Replace(good, `"`+dir, `"./`+filepath.Base(dir), 1),
		"a key of no entry":         other,
		"a path twice":              good + good,
		"a stamp that is no number": strings.Replace(good, " 2 ", " two ", 1),
		"a Helm key":                "h" + good[1:],
		"no path":                   good[:strings.LastIndex(good, " ")] + "\n",
	}
	for name, lines := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "manifests.json")
			writeCacheFileWith(t, path, file, `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"git"}}]]`, lines)
			c, err := OpenParseCache(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "file 1") && !strings.Contains(err.Error(), "file 2") {
				t.Fatalf("warning %v, want one naming %s and the file line", err, path)
			}
			ms, err := Manifests(t.Context(), Options{Dir: dir, Parsed: c})
			if err != nil || len(ms) != 1 || c.Stats() != (ParseCacheStats{Parsed: 1}) {
				t.Errorf("%d manifests, %v, %+v; want the file parsed", len(ms), err, c.Stats())
			}
		})
	}
	t.Run("the good line reads", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "manifests.json")
		writeCacheFileWith(t, path, file, `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"git"}}]]`, good)
		c, err := OpenParseCache(path)
		if err != nil || len(c.files) != 1 {
			t.Fatalf("%v, %d files", err, len(c.files))
		}
	})
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitForNextCtime returns once a change to file would give it another
// ctime than its last change did (file systems keep it to a clock tick).
func waitForNextCtime(t *testing.T, file string) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	was, _ := stampOf(fi)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		probe := filepath.Join(t.TempDir(), "probe")
		writeFile(t, probe, "x")
		pi, err := os.Stat(probe)
		if err != nil {
			t.Fatal(err)
		}
		if now, _ := stampOf(pi); now.ctime > was.ctime {
			return
		}
	}
	t.Fatal("the clock of the file system did not move in 5 s")
}
