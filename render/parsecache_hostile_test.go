package render

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/bounded"
)

// writeCacheFile writes a cache file of this build whose one entry, for
// the bytes of a YAML file, holds objects as given: a well-formed file
// around whatever entry a test wants to feed the decoder.
func writeCacheFile(t *testing.T, path string, file []byte, objects string) {
	t.Helper()
	writeCacheFileWith(t, path, file, objects, "")
}

// writeCacheFileWith is writeCacheFile with fileLines (whole lines) as its
// file index.
func writeCacheFileWith(t *testing.T, path string, file []byte, objects, fileLines string) {
	t.Helper()
	key := keyOf(cacheYAML, file)
	body := cacheLinePrefix + string(key.kind) + hex.EncodeToString(key.sum[:]) + cacheKeyEnd + objects + "]\n" + fileLines
	head, err := json.Marshal(cacheHeader{Format: parseCacheFormat, Build: cacheBuild(), Entries: 1, Files: strings.Count(fileLines, "\n"),
		CRC32C: fmt.Sprintf("%08x", crc32.Checksum([]byte(body), castagnoli))})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(append(head, '\n'), body...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestParseCacheRejectsHostileEntries: an entry in a well-formed cache
// file that is not what this package writes (too deep, a number of a
// thousand digits or in another form, the wrong shape, an object the
// parser would refuse, a Secret) is not trusted: the file is parsed
// again and renders as it is in Git, within bounds. A lazy render
// (Options.Lazy), which decodes only what names an object (Ident), checks
// the rest as closely: it refuses the same entries, wherever in the object
// the fault is.
func TestParseCacheRejectsHostileEntries(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	file := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: git}\ndata: {from: git}\n")
	obj := func(spec string) string {
		return `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cached"},"spec":` + spec + `}]]`
	}
	cases := map[string]string{
		"nesting past the bound":         obj(strings.Repeat("[", maxCacheDepth+1) + strings.Repeat("]", maxCacheDepth+1)),
		"nesting of a million levels":    obj(strings.Repeat(`{"a":`, 1_000_000) + "1" + strings.Repeat("}", 1_000_000)),
		"an integer of a million digits": obj("1" + strings.Repeat("0", 1_000_000)),
		"an integer past int64":          obj("9223372036854775808"),
		"a float past float64":           obj("1e400"),
		"a float written another way":    obj("1.50"),
		"an integral float without .0":   obj("5e0"),
		"an integer with a leading zero": obj("007"),
		"an integer with a plus":         obj("+7"),
		"a number that is no number":     obj("1-2"),
		"a key twice":                    obj(`{"a":1,"a":2}`),
		"a key twice deep in a list":     obj(`{"a":[{"b":{"c":1,"c":2}}]}`),
		"a key twice, once escaped":      obj(`{"a":1,"\u0061":2}`),
		"a key twice after sixteen":      obj(`{` + sixteenKeys + `,"k3":0}`),
		"a key twice in metadata":        `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cached","name":"x"}}]]`,
		"apiVersion twice":               `[[1,{"apiVersion":"v1","kind":"ConfigMap","apiVersion":"v2","metadata":{"name":"cached"}}]]`,
		"spec twice":                     `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cached"},"spec":1,"spec":2}]]`,
		"an escape that is none":         obj(`"\x"`),
		"half a surrogate pair":          obj(`"\ud800"`),
		"a raw control character":        obj("\"a\tb\""),
		"a literal cut short":            obj(`tru`),
		"invalid UTF-8":                  obj("\"\xff\""),
		"an object that is a list":       `[[1,["apiVersion","v1"]]]`,
		"entries that are not an array":  `{"a":1}`,
		"an entry of three fields":       `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}},3]]`,
		"an entry of one field":          `[[1]]`,
		"a line that is negative":        `[[-1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]]`,
		"a line that is a string":        `[["1",{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]]`,
		"an object without a name":       `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}]]`,
		"an object without a kind":       `[[1,{"apiVersion":"v1","metadata":{"name":"x"}}]]`,
		"metadata that is a string":      `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":"x"}]]`,
		"metadata that is null":          `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":null}]]`,
		"an apiVersion that is a number": `[[1,{"apiVersion":1,"kind":"ConfigMap","metadata":{"name":"x"}}]]`,
		"a kind that is empty":           `[[1,{"apiVersion":"v1","kind":"","metadata":{"name":"x"}}]]`,
		"a name that is a number":        `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":1}}]]`,
		"a key twice in annotations":     `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","annotations":{"a":"1","a":"2"}}}]]`,
		"a Secret":                       `[[1,{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"data":{"k":"dg=="}}]]`,
		"trailing text":                  obj("1") + `,[]`,
		"a truncated value":              `[[1,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"`,
	}
	for name, objects := range cases {
		for _, lazy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/lazy=%t", name, lazy), func(t *testing.T) {
				dir, path := t.TempDir(), filepath.Join(t.TempDir(), "manifests.jsonl")
				if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), file, 0o644); err != nil {
					t.Fatal(err)
				}
				writeCacheFile(t, path, file, objects)
				start := time.Now()
				got := renderCached(t, Options{Dir: dir, Lazy: lazy}, path)
				if took := time.Since(start); took > 10*time.Second {
					t.Errorf("took %s", took)
				}
				if got.openErr != nil {
					t.Fatalf("open: %v", got.openErr)
				}
				if got.err != nil || len(got.ms) != 1 || got.ms[0].Ident().Name != "git" {
					t.Fatalf("rendered %v, %v; want Git's object", renderSummary(got.ms), got.err)
				}
				if want := (ParseCacheStats{Parsed: 1, Rejected: 1}); got.stats != want {
					t.Errorf("%+v, want %+v", got.stats, want)
				}
				if again := renderCached(t, Options{Dir: dir, Lazy: lazy}, path); again.stats != (ParseCacheStats{Hits: 1}) || again.ms[0].Ident().Name != "git" {
					t.Errorf("after Save: %+v, %v; want Git's object from the replaced entry", again.stats, renderSummary(again.ms))
				}
			})
		}
	}
}

// sixteenKeys are the members "k0":0 to "k15":0 of an object: as many as
// a lazy render compares one by one before it keeps keys in a map.
var sixteenKeys = func() string {
	var b strings.Builder
	for i := range 16 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	return b.String()
}()

// TestParseCacheReadsItsOwnEntry: writeCacheFile's layout is the one Save
// writes, so the rejections above are the decoder's and not the layout's.
func TestParseCacheReadsItsOwnEntry(t *testing.T) {
	file := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: git}\n")
	dir, path := t.TempDir(), filepath.Join(t.TempDir(), "manifests.jsonl")
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	writeCacheFile(t, path, file, `[[7,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cached"},"spec":{"f":1.5,"g":5.0,"i":-3,"s":[],"m":{}}}]]`)
	got := renderCached(t, Options{Dir: dir}, path)
	if got.openErr != nil || got.err != nil || got.stats != (ParseCacheStats{Hits: 1}) {
		t.Fatalf("%+v, %v, %v", got.stats, got.openErr, got.err)
	}
	if m := got.ms[0]; m.Line != 7 || m.Object.GetName() != "cached" {
		t.Errorf("read line %d, %s", m.Line, m.Object.GetName())
	}
}
