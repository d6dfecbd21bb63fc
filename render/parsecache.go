package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/calricon/driftscan/report"
)

// ParseCache remembers what parsing a manifest file gave, by the sha256 of
// its bytes, so that a scan of an unchanged repository reads its objects
// back instead of running the YAML parser again. gopkg.in/yaml.v3 (and
// encoding/json for .json files) stays the only reader of Git's text: an
// entry holds exactly the objects and lines that the parser made of those
// bytes, written by this package and read back as the same Go values
// (int64 and float64, map[string]any, []any, never nil for an empty one).
//
// Only what parsed cleanly is kept: a file with any error, or with an
// object that cannot be written back exactly (NaN, a value of another Go
// type, nesting deeper than maxCacheDepth), is parsed every time, so its
// errors keep their exact text. A file that declares a Secret is never
// kept: its data would otherwise sit in the cache file in clear (the Git
// checkout holds it too, but the cache need not add a copy).
//
// The cache trusts its file only as far as it can check it: a file whose
// header, checksum or layout is wrong is dropped whole (OpenParseCache's
// warning), and an entry that does not decode as this package writes
// entries (deep nesting, a number in another form, a value of the wrong
// shape, an object without kind or name, a Secret) is dropped and its file
// parsed again. It cannot tell a well-formed entry that someone else wrote
// from its own: the cache file belongs in a folder only the scanner can
// write.
//
// A ParseCache is safe for concurrent use. The zero value is not usable;
// a nil *ParseCache caches nothing.
type ParseCache struct {
	path string

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	// dirty: Save has something to write (an entry added or rejected).
	dirty bool
	stats ParseCacheStats
}

// ParseCacheStats count what a ParseCache did since it was opened.
type ParseCacheStats struct {
	// Hits are files (and Helm output documents) read from the cache
	// rather than parsed.
	Hits int
	// Parsed are those the parser read: not in the cache, or not kept in
	// it (see ParseCache).
	Parsed int
	// Rejected are entries of the cache file that did not decode as this
	// package writes them; their files were parsed again.
	Rejected int
}

// cacheKey names what an entry was parsed from: the parse (cacheKind) and
// the sha256 of the bytes.
type cacheKey struct {
	kind cacheKind
	sum  [sha256.Size]byte
}

// cacheKind is which parse of the bytes an entry holds.
type cacheKind byte

const (
	// cacheYAML is a plain manifest file read as YAML (splitYAML).
	cacheYAML cacheKind = 'y'
	// cacheJSON is a plain .json manifest file (splitJSON).
	cacheJSON cacheKind = 'j'
	// cacheHelm is one document of a Helm release's manifest, as
	// helmManifests reads it (lines are 0).
	cacheHelm cacheKind = 'h'
)

// cacheEntry is one file's objects, encoded (parsecache_codec.go).
type cacheEntry struct {
	objects []byte
	// used: looked up or added since the cache was opened; Save keeps
	// only these.
	used bool
}

// parseCacheFormat is the version of what an entry holds and how. Bump it
// whenever a change to the plain parse (renderYAML, splitYAML, splitJSON,
// YAMLNodeValue, document.manifests, toManifest, helmManifests) or to the
// codec can change the objects or lines a file gives: entries of another
// format are dropped. The build's versions of the parsers' modules are
// part of the check too (cacheBuild).
const parseCacheFormat = 1

// MaxParseCacheBytes is the largest cache file OpenParseCache reads; a
// larger one is dropped with a warning. The benchmark's 5,000 objects
// take 2.2 MB.
const MaxParseCacheBytes = 256 << 20

// cacheHeader is the first line of a cache file.
type cacheHeader struct {
	Format int    `json:"format"`
	Build  string `json:"build"`
	// Entries is how many lines follow; CRC32C their checksum (Castagnoli,
	// hex), against a file cut off or damaged on disk.
	Entries int    `json:"entries"`
	CRC32C  string `json:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cacheBuild names the build, which decides how bytes parse
// (BuildIdentity): a cache written by another build is not read (and is
// replaced by the next Save).
var cacheBuild = BuildIdentity

// OpenParseCache reads the cache file at path. A missing file is an empty
// cache. It always returns a usable cache: when the file cannot be read or
// is not a whole cache file of this build (too large, cut off, damaged),
// the cache is empty and err is a warning naming the file; the scan goes
// on and parses everything. A file of another format or build is no
// warning: it is dropped silently, as an upgrade does.
func OpenParseCache(path string) (*ParseCache, error) {
	c := &ParseCache{path: path, entries: map[cacheKey]*cacheEntry{}}
	data, err := ReadCacheFile(path, MaxParseCacheBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case err != nil:
		c.dirty = true
		return c, fmt.Errorf("parse cache %s: %w", path, err)
	}
	entries, stale, err := decodeCacheFile(data)
	switch {
	case err != nil:
		c.dirty = true
		return c, fmt.Errorf("parse cache %s: %w", path, err)
	case stale:
		c.dirty = true
		return c, nil
	}
	c.entries = entries
	return c, nil
}

// ReadCacheFile reads a scan cache file of at most max bytes (this
// package's parse cache, the scanner's verdicts); a larger one is an error
// and is not read past max.
func ReadCacheFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, fmt.Errorf("%d bytes is over the limit of %d", fi.Size(), max)
	}
	data, over, err := readAtMost(f, max)
	if err != nil {
		return nil, err
	}
	if over {
		return nil, fmt.Errorf("over the limit of %d bytes", max)
	}
	return data, nil
}

// decodeCacheFile checks a cache file's header, checksum and layout and
// indexes its entries; their objects are decoded when looked up. stale
// says the file is of another format or build.
func decodeCacheFile(data []byte) (entries map[cacheKey]*cacheEntry, stale bool, err error) {
	head, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil, false, errors.New("no header line")
	}
	var h cacheHeader
	if err := json.Unmarshal(head, &h); err != nil {
		return nil, false, fmt.Errorf("header: %w", err)
	}
	if h.Format != parseCacheFormat || h.Build != cacheBuild() {
		return nil, true, nil
	}
	if got := fmt.Sprintf("%08x", crc32.Checksum(body, castagnoli)); got != h.CRC32C {
		return nil, false, fmt.Errorf("checksum %s, the header says %s: the file is cut off or damaged", got, h.CRC32C)
	}
	if n := bytes.Count(body, []byte("\n")); n != h.Entries || len(body) > 0 && body[len(body)-1] != '\n' {
		return nil, false, fmt.Errorf("%d entries, the header says %d", n, h.Entries)
	}
	entries = make(map[cacheKey]*cacheEntry, h.Entries)
	for i := 0; len(body) > 0; i++ {
		line, rest, _ := bytes.Cut(body, []byte("\n"))
		body = rest
		key, objects, err := splitCacheLine(line)
		if err != nil {
			return nil, false, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if entries[key] != nil {
			return nil, false, fmt.Errorf("entry %d: its key is also an earlier entry's", i+1)
		}
		entries[key] = &cacheEntry{objects: objects}
	}
	return entries, false, nil
}

// A cache line is a JSON array of the key and the objects:
// ["y0123...ef",[[line,{object}],...]], the key being the cacheKind and
// the hex sha256.
const (
	cacheLinePrefix = `["`
	cacheKeyLen     = 1 + 2*sha256.Size
	cacheKeyEnd     = `",`
)

// splitCacheLine cuts a cache line into its key and its encoded objects.
func splitCacheLine(line []byte) (cacheKey, []byte, error) {
	var key cacheKey
	start := len(cacheLinePrefix) + cacheKeyLen + len(cacheKeyEnd)
	if len(line) < start+1 || !bytes.HasPrefix(line, []byte(cacheLinePrefix)) ||
		!bytes.Equal(line[start-len(cacheKeyEnd):start], []byte(cacheKeyEnd)) || line[len(line)-1] != ']' {
		return key, nil, errors.New("not a cache entry")
	}
	text := line[len(cacheLinePrefix) : len(cacheLinePrefix)+cacheKeyLen]
	switch k := cacheKind(text[0]); k {
	case cacheYAML, cacheJSON, cacheHelm:
		key.kind = k
	default:
		return key, nil, fmt.Errorf("unknown kind %q", text[0])
	}
	if n, err := hex.Decode(key.sum[:], text[1:]); err != nil || n != sha256.Size {
		return key, nil, errors.New("the key is not a sha256")
	}
	return key, line[start : len(line)-1], nil
}

// name sets each manifest's Digest: key and its place in ms. Like store,
// it does nothing without a cache (whose key names no bytes).
func (c *ParseCache) name(key cacheKey, ms []Manifest) {
	if c == nil || len(ms) == 0 {
		return
	}
	base := string(key.kind) + hex.EncodeToString(key.sum[:]) + "/"
	for i := range ms {
		ms[i].Digest = base + strconv.Itoa(i)
	}
}

// keyOf is the cache key of data parsed as kind.
func keyOf(kind cacheKind, data []byte) cacheKey {
	h := sha256.New()
	h.Write([]byte{byte(kind)})
	h.Write(data)
	k := cacheKey{kind: kind}
	h.Sum(k.sum[:0])
	return k
}

// lookup returns the manifests cached for key, with File set to file and
// named (name); ok is false when there are none (then the caller parses,
// and calls name and store).
// Every lookup decodes afresh: the caller owns the objects it gets.
func (c *ParseCache) lookup(key cacheKey, file string) (ms []Manifest, ok bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	e := c.entries[key]
	if e != nil {
		e.used = true
	}
	c.mu.Unlock()
	if e != nil {
		if ms, err := decodeObjects(e.objects, file); err == nil {
			c.count(func(s *ParseCacheStats) { s.Hits++ })
			c.name(key, ms)
			return ms, true
		}
		c.mu.Lock()
		if c.entries[key] == e {
			delete(c.entries, key)
		}
		c.dirty = true
		c.stats.Rejected++
		c.mu.Unlock()
	}
	c.count(func(s *ParseCacheStats) { s.Parsed++ })
	return nil, false
}

// store keeps ms as what key parses to, unless it is not to be kept (see
// ParseCache). The caller has not changed ms since the parse.
func (c *ParseCache) store(key cacheKey, ms []Manifest) {
	if c == nil {
		return
	}
	for _, m := range ms {
		if m.Object.GetKind() == "Secret" {
			return
		}
	}
	objects, ok := encodeObjects(ms)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[key] == nil {
		c.entries[key] = &cacheEntry{objects: objects, used: true}
		c.dirty = true
	}
}

func (c *ParseCache) count(f func(*ParseCacheStats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// Stats says what the cache did since it was opened.
func (c *ParseCache) Stats() ParseCacheStats {
	if c == nil {
		return ParseCacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Save writes the entries looked up or added since the cache was opened to
// its file, dropping the others, so the file holds what the last scan
// read and no more. It writes nothing when that is what the file already
// holds. The file is replaced whole (a temporary file in the same folder,
// mode 0600, renamed over it): a reader sees the old file or the new one.
func (c *ParseCache) Save() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]cacheKey, 0, len(c.entries))
	for k, e := range c.entries {
		if e.used {
			keys = append(keys, k)
		} else {
			delete(c.entries, k)
			c.dirty = true
		}
	}
	if !c.dirty {
		return nil
	}
	slices.SortFunc(keys, func(a, b cacheKey) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return bytes.Compare(a.sum[:], b.sum[:])
	})
	var body bytes.Buffer
	for _, k := range keys {
		body.WriteString(cacheLinePrefix)
		body.WriteByte(byte(k.kind))
		body.WriteString(hex.EncodeToString(k.sum[:]))
		body.WriteString(cacheKeyEnd)
		body.Write(c.entries[k].objects)
		body.WriteString("]\n")
	}
	head, err := json.Marshal(cacheHeader{Format: parseCacheFormat, Build: cacheBuild(), Entries: len(keys),
		CRC32C: fmt.Sprintf("%08x", crc32.Checksum(body.Bytes(), castagnoli))})
	if err != nil {
		return fmt.Errorf("save parse cache %s: %w", c.path, err)
	}
	if err := report.WritePrivateFileAtomic(c.path, append(append(head, '\n'), body.Bytes()...)); err != nil {
		return fmt.Errorf("save parse cache %s: %w", c.path, err)
	}
	c.dirty = false
	return nil
}
