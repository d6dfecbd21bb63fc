package render

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/estate"
)

// BenchmarkRenderPlainPerObject renders a generated plain-YAML folder of
// half Deployments, half ConfigMaps (one file of two documents per pair) and
// reports the cost per object, at two sizes to show it stays flat: parsed
// (cache=none), and read from a warm ParseCache as a scan of an unchanged
// repository does (cache=warm: each render opens the cache file, renders
// and saves, which writes nothing).
func BenchmarkRenderPlainPerObject(b *testing.B) {
	for _, n := range []int{100, 1000} {
		cfg := estate.Write(b, b.TempDir(), "bench", 1, n)
		opts := Options{Dir: filepath.Join(cfg.Dir, cfg.Apps[0].Source.Path)}
		b.Run(fmt.Sprintf("objects=%d/cache=none", n), func(b *testing.B) {
			benchmarkRender(b, opts, n, "")
		})
		b.Run(fmt.Sprintf("objects=%d/cache=warm", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "manifests.jsonl")
			warm, err := OpenParseCache(path)
			if err != nil {
				b.Fatal(err)
			}
			opts := opts
			opts.Parsed = warm
			if _, err := Manifests(b.Context(), opts); err != nil {
				b.Fatal(err)
			}
			if err := warm.Save(); err != nil {
				b.Fatal(err)
			}
			benchmarkRender(b, opts, n, path)
		})
	}
}

// BenchmarkRenderPlainApps renders 40 plain apps of 25 files (50 objects)
// each from a warm ParseCache, one folder after another as a scan's apps
// are, and reports the CPU time per app: what listing a folder, opening it
// and stat'ing its files costs beside reading them from the cache.
func BenchmarkRenderPlainApps(b *testing.B) {
	const apps, perApp = 40, 50
	cfg := estate.Write(b, b.TempDir(), "bench", apps, perApp)
	path := filepath.Join(b.TempDir(), "manifests.json")
	render := func(c *ParseCache) {
		n := 0
		for _, app := range cfg.Apps {
			ms, err := Manifests(b.Context(), Options{Dir: filepath.Join(cfg.Dir, app.Source.Path), Root: cfg.Dir, Parsed: c, Lazy: true})
			if err != nil {
				b.Fatal(err)
			}
			n += len(ms)
		}
		if n != apps*perApp {
			b.Fatalf("rendered %d objects, want %d", n, apps*perApp)
		}
	}
	fill, err := OpenParseCache(path)
	if err != nil {
		b.Fatal(err)
	}
	render(fill)
	if err := fill.Save(); err != nil {
		b.Fatal(err)
	}
	warm, err := OpenParseCache(path)
	if err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime()
	for b.Loop() {
		render(warm)
	}
	if s := warm.Stats(); s.Parsed != 0 {
		b.Fatalf("the warm cache parsed %d files", s.Parsed)
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N*apps), "cpu-ns/app")
}

// BenchmarkRenderHelm renders the web fixture chart in process with prod
// values, as a scan does for a Helm app: rendered (cache=none), and read
// whole from a warm ParseCache as a scan of an unchanged chart does
// (cache=warm, rendercache.go).
func BenchmarkRenderHelm(b *testing.B) {
	benchmarkRenderCached(b, Options{
		Dir:         benchFixture(b, "render", "helm", "web"),
		Namespace:   "shop",
		Helm:        &config.HelmSource{ValuesFiles: []string{"values-prod.yaml"}},
		KubeVersion: "v1.37.2",
		APIVersions: []string{"example.com/v1"},
	}, func(s ParseCacheStats) int { return s.Charts })
}

// BenchmarkRenderKustomize builds the prod overlay of the kustomize fixture
// with krusty, as a scan does for a Kustomize app: built (cache=none), and
// read from a warm ParseCache after replaying the build's reads
// (cache=warm, buildcache.go).
func BenchmarkRenderKustomize(b *testing.B) {
	benchmarkRenderCached(b, Options{Dir: benchFixture(b, "render", "kustomize", "overlays", "prod"), Root: benchFixture(b, "render"), Namespace: "shop"},
		func(s ParseCacheStats) int { return s.Kustomizations })
}

// benchmarkRenderCached runs benchmarkRender on opts without a cache and
// with a warm one, filled as a scan fills it (two renders, a save); hits
// says how many whole renders a cache's stats count, one a render warm.
func benchmarkRenderCached(b *testing.B, opts Options, hits func(ParseCacheStats) int) {
	b.Run("cache=none", func(b *testing.B) { benchmarkRender(b, opts, 0, "") })
	b.Run("cache=warm", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "manifests.json")
		fill, err := OpenParseCache(path)
		if err != nil {
			b.Fatal(err)
		}
		opts := opts
		opts.Parsed = fill
		for range 2 {
			if _, err := Manifests(b.Context(), opts); err != nil {
				b.Fatal(err)
			}
		}
		if err := fill.Save(); err != nil {
			b.Fatal(err)
		}
		check, err := OpenParseCache(path)
		if err != nil {
			b.Fatal(err)
		}
		opts.Parsed = check
		if _, err := Manifests(b.Context(), opts); err != nil || hits(check.Stats()) != 1 {
			b.Fatalf("a warm cache rendered again: %+v, %v", check.Stats(), err)
		}
		benchmarkRender(b, opts, 0, path)
	})
}

// benchmarkRender renders opts b.N times and reports ns/object, and the
// process's CPU time per object (cpu-ns/object: the garbage collector's
// included, and steadier than wall time on a shared machine); want is the
// number of objects expected, 0 for any. With a cache path, each render
// opens that ParseCache and saves it, and must parse nothing.
func benchmarkRender(b *testing.B, opts Options, want int, cache string) {
	b.Helper()
	var objects int
	cpu := cpuTime()
	for b.Loop() {
		if cache != "" {
			c, err := OpenParseCache(cache)
			if err != nil {
				b.Fatal(err)
			}
			opts.Parsed = c
		}
		ms, err := Manifests(b.Context(), opts)
		if err != nil {
			b.Fatal(err)
		}
		if cache != "" {
			if err := opts.Parsed.Save(); err != nil {
				b.Fatal(err)
			}
			if s := opts.Parsed.Stats(); s.Parsed != 0 {
				b.Fatalf("the warm cache parsed %d files", s.Parsed)
			}
		}
		objects = len(ms)
	}
	if objects == 0 || (want > 0 && objects != want) {
		b.Fatalf("rendered %d objects, want %d", objects, want)
	}
	cpu = cpuTime() - cpu
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*objects), "ns/object")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*objects), "cpu-ns/object")
	b.ReportMetric(float64(objects), "objects")
}

// benchFixture returns the absolute path of a shared fixture folder.
func benchFixture(b *testing.B, parts ...string) string {
	b.Helper()
	dir, err := filepath.Abs(filepath.Join(append([]string{"..", "fixtures"}, parts...)...))
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// cpuTime is the user and system CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParseCacheSave writes the parse cache of 5,000 plain files, as
// a scan does after its first render or any change to Git's files: the
// whole file is written anew.
func BenchmarkParseCacheSave(b *testing.B) {
	const apps, perApp = 100, 50
	cfg := estate.Write(b, b.TempDir(), "bench", apps, perApp)
	c, err := OpenParseCache(filepath.Join(b.TempDir(), "manifests.json"))
	if err != nil {
		b.Fatal(err)
	}
	for _, app := range cfg.Apps {
		if _, err := Manifests(b.Context(), Options{Dir: filepath.Join(cfg.Dir, app.Source.Path), Root: cfg.Dir, Parsed: c, Lazy: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		c.dirty = true
		if err := c.Save(); err != nil {
			b.Fatal(err)
		}
	}
}
