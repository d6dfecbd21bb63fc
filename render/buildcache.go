package render

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"sync"

	jsoniter "github.com/json-iterator/go"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// A kustomize build is a function of what krusty reads from the disk (it
// has no clock, no randomness, and renders offline with exec plugins off),
// but which files it reads only the build knows: bases, components,
// patches and generator inputs anywhere in the repository. So the parse
// cache keeps a build of a kustomization folder together with every read
// krusty made through boundedFS (recordingFS) and what each gave: a
// file's SHA-256 or its error, whether a path exists or is a folder, a
// folder's names, a glob's matches. A later scan makes the same reads
// again, through the same bounds; when every one gives what it gave, the
// build's objects are read from the cache instead of building again (the
// reads are a few stats and reads, where krusty takes milliseconds for
// a handful of objects, under a lock that makes builds one at a time).
//
// A build is not kept when it named a remote resource (Options.
// KustomizeRemote), used a way of reading that cannot be replayed (Open,
// Walk), failed, or made a Secret (a secretGenerator's data).

// cacheKustomize names a kustomization folder's build: the key of the
// entry is the folder and the root (one entry a folder, replaced when the
// build changes); the Digest of its objects is their encoded bytes' hash.
const cacheKustomize cacheKind = 'k'

// fsRead is one read krusty made, and what it gave (readResult).
type fsRead struct {
	op           byte
	path, result string
}

// The reads recordingFS records, by op.
const (
	readIsDir      = 'd'
	readExists     = 'e'
	readDir        = 'l'
	readCleanedAbs = 'c'
	readGlob       = 'g'
	readFile       = 'r'
)

// readResult makes the read op of path on b and returns what it gave as
// text ("" for an op that is not one of the above).
func readResult(b *boundedFS, op byte, path string) string {
	switch op {
	case readIsDir:
		return boolText(b.IsDir(path))
	case readExists:
		return boolText(b.Exists(path))
	case readDir:
		return listText(b.ReadDir(path))
	case readCleanedAbs:
		d, f, err := b.CleanedAbs(path)
		return listText([]string{string(d), f}, err)
	case readGlob:
		return listText(b.Glob(path))
	case readFile:
		// Unchecked: what ReadFile's check gives depends on the resolved
		// path and the bytes alone, and the record holds those only for a
		// read that passed it.
		return fileText(b.readRaw(path))
	}
	return ""
}

// fileText is a file's resolved path and the SHA-256 of its bytes, or the
// error reading it.
func fileText(resolved string, data []byte, err error) string {
	if err != nil {
		return "!" + err.Error()
	}
	sum := sha256.Sum256(data)
	return resolved + "\x00" + hex.EncodeToString(sum[:])
}

func boolText(v bool) string {
	if v {
		return "t"
	}
	return "f"
}

// listText is names, NUL-separated, or the error.
func listText(names []string, err error) string {
	if err != nil {
		return "!" + err.Error()
	}
	return strings.Join(names, "\x00")
}

// recordingFS is boundedFS keeping every read krusty makes (reads), and
// whether krusty also read in a way a replay cannot check (unreplayed).
type recordingFS struct {
	*boundedFS
	mu         sync.Mutex
	reads      []fsRead
	unreplayed bool
}

func (r *recordingFS) note(op byte, path, result string) {
	r.mu.Lock()
	r.reads = append(r.reads, fsRead{op: op, path: path, result: result})
	r.mu.Unlock()
}

func (r *recordingFS) IsDir(p string) bool {
	v := r.boundedFS.IsDir(p)
	r.note(readIsDir, p, boolText(v))
	return v
}

func (r *recordingFS) Exists(p string) bool {
	v := r.boundedFS.Exists(p)
	r.note(readExists, p, boolText(v))
	return v
}

func (r *recordingFS) ReadDir(p string) ([]string, error) {
	names, err := r.boundedFS.ReadDir(p)
	r.note(readDir, p, listText(names, err))
	return names, err
}

func (r *recordingFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	d, f, err := r.boundedFS.CleanedAbs(p)
	r.note(readCleanedAbs, p, listText([]string{string(d), f}, err))
	return d, f, err
}

func (r *recordingFS) Glob(pattern string) ([]string, error) {
	matches, err := r.boundedFS.Glob(pattern)
	r.note(readGlob, pattern, listText(matches, err))
	return matches, err
}

func (r *recordingFS) ReadFile(p string) ([]byte, error) {
	resolved, data, err := r.readRaw(p)
	if err == nil {
		err = r.check(p, resolved, data)
	}
	r.note(readFile, p, fileText(resolved, data, err))
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Open and Walk hand krusty what the record cannot check again.
func (r *recordingFS) Open(p string) (filesys.File, error) {
	r.unrecorded()
	return r.boundedFS.Open(p)
}

func (r *recordingFS) Walk(p string, fn filepath.WalkFunc) error {
	r.unrecorded()
	return r.boundedFS.Walk(p, fn)
}

func (r *recordingFS) unrecorded() {
	r.mu.Lock()
	r.unreplayed = true
	r.mu.Unlock()
}

// buildKey is the key of the entry of the kustomization in dir, built
// with root as boundedFS's root.
func buildKey(dir, root string) cacheKey {
	k := cacheKey{kind: cacheKustomize}
	k.sum = sha256.Sum256([]byte("kustomize 1\x00" + dir + "\x00" + root))
	return k
}

// built returns the objects of the build of key when every read recorded
// with it gives what it gave (read through b), lazy as lookup's; false
// when the cache holds no such build (then an entry that does not decode
// is dropped).
func (c *ParseCache) built(key cacheKey, b *boundedFS, lazy bool) ([]Manifest, bool) {
	e := c.entry(key)
	if e == nil {
		return nil, false
	}
	reads, objects, ok := decodeBuild(e.objects)
	var ms []Manifest
	if ok {
		b.resolved = map[string]resolvedPath{}
		defer func() { b.resolved = nil }()
		for _, rd := range reads {
			if readResult(b, rd.op, rd.path) != rd.result {
				return nil, false // the inputs changed: build again
			}
		}
		var err error
		ms, err = decodeObjects(objects, ".", lazy)
		ok = err == nil
	}
	if !ok {
		c.drop(key, e)
		return nil, false
	}
	c.count(func(s *ParseCacheStats) { e.used = true; s.Kustomizations++ })
	c.name(builtObjects(objects), ms)
	return ms, true
}

// builtObjects names a build's objects by their encoded bytes (Digest).
func builtObjects(objects []byte) cacheKey {
	return cacheKey{kind: cacheKustomize, sum: sha256.Sum256(objects)}
}

// storeBuild keeps ms as the build of key, made with the reads of fsys,
// unless it is not to be kept (see above), and names ms by their bytes.
func (c *ParseCache) storeBuild(key cacheKey, fsys *recordingFS, ms []Manifest) {
	if c == nil || fsys.unreplayed || fsys.remote {
		return
	}
	objects, ok := keepable(ms)
	if !ok {
		return
	}
	data, ok := encodeBuild(fsys.reads, objects)
	if !ok {
		return
	}
	c.name(builtObjects(objects), ms)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = &cacheEntry{objects: data, used: true}
	c.dirty = true
}

// encodeBuild writes a build entry: [[["r","path","result"],...],objects].
func encodeBuild(reads []fsRead, objects []byte) ([]byte, bool) {
	return encodeWith(func(s *jsoniter.Stream) bool {
		s.WriteArrayStart()
		s.WriteArrayStart()
		for i, rd := range reads {
			if i > 0 {
				s.WriteMore()
			}
			s.WriteArrayStart()
			for j, v := range []string{string(rd.op), rd.path, rd.result} {
				if j > 0 {
					s.WriteMore()
				}
				if !encodeValue(s, v, 0) {
					return false
				}
			}
			s.WriteArrayEnd()
		}
		s.WriteArrayEnd()
		s.WriteMore()
		s.WriteRaw(string(objects))
		s.WriteArrayEnd()
		return true
	})
}

// decodeBuild reads a build entry (encodeBuild) into its reads and its
// encoded objects; false when it is not one this build writes.
func decodeBuild(data []byte) ([]fsRead, []byte, bool) {
	d := cacheDecoder{data: data}
	if !d.take('[') {
		return nil, nil, false
	}
	v, err := d.value(1)
	list, ok := v.([]any)
	if err != nil || !ok || !d.take(',') || d.next() != '[' || len(data) == 0 || data[len(data)-1] != ']' {
		return nil, nil, false
	}
	objects := data[d.i : len(data)-1]
	reads := make([]fsRead, 0, len(list))
	for _, item := range list {
		fields, ok := item.([]any)
		if !ok || len(fields) != 3 {
			return nil, nil, false
		}
		op, ok1 := fields[0].(string)
		path, ok2 := fields[1].(string)
		result, ok3 := fields[2].(string)
		if !ok1 || !ok2 || !ok3 || len(op) != 1 || strings.IndexByte("decglr", op[0]) < 0 {
			return nil, nil, false
		}
		reads = append(reads, fsRead{op: op[0], path: path, result: result})
	}
	return reads, objects, true
}
