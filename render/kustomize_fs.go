package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/redact"
)

// errReadOnly is returned by the write methods of boundedFS.
var errReadOnly = errors.New("the source is read-only to kustomize")

// boundedFS is the filesystem krusty builds with: the disk, seen only
// inside root (symlinks resolved), read-only, and checked before krusty
// reads anything:
//   - a file over MaxManifestBytes, or a YAML file whose aliases expand
//     without bound or that nests too deep, is an error;
//   - a kustomization that names a remote resource, base, component,
//     patch or generator file (a URL, a Git repository) is an error unless
//     remote is set: krusty would fetch it itself, over the network.
//
// Remote clones, when allowed, live in the temporary folder
// (kustomize-*), which is then readable too.
type boundedFS struct {
	disk   filesys.FileSystem
	root   string // absolute, symlinks resolved
	remote bool
	// refused is the first file ReadFile refused: krusty reports a
	// kustomization it could not read as missing, so renderKustomize
	// reports this instead.
	mu      sync.Mutex
	refused error
	// resolved, when not nil, keeps what filepath.EvalSymlinks gave for
	// each path (evalSymlinks): a replay of a build's reads (buildcache.go)
	// resolves one folder for each of its files.
	resolved map[string]resolvedPath
	// helm, when set, is told of every kustomization read, for the charts
	// its helmCharts name (kustomize_helm.go).
	helm *buildHelm
	// virtual are files read from here in place of the disk, by absolute
	// path: the kustomization Flux builds with (flux.go).
	virtual map[string][]byte
	// ignore, when set, matches the files a Flux artifact leaves out of
	// the repository (internal/sourceignore): to krusty they do not exist. A folder
	// is always there: the artifact has it when it has any file below it.
	ignore gitignore.Matcher
}

// ignored says whether the file at r, resolved, is one the artifact
// leaves out.
func (b *boundedFS) ignored(r string) bool {
	if b.ignore == nil {
		return false
	}
	rel, err := filepath.Rel(b.root, r)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return false
	}
	// Matched first, in memory: only a match costs a stat, krusty's other
	// reads none.
	if !b.ignore.Match(strings.Split(rel, string(filepath.Separator)), false) {
		return false
	}
	fi, err := os.Stat(r)
	return err != nil || !fi.IsDir()
}

// virtualFile is the content of the virtual file p, if it is one.
func (b *boundedFS) virtualFile(p string) ([]byte, bool) {
	if b.virtual == nil {
		return nil, false
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, false
	}
	data, ok := b.virtual[abs]
	return data, ok
}

// resolvedPath is what filepath.EvalSymlinks gave for a path.
type resolvedPath struct {
	path string
	err  error
}

// evalSymlinks is filepath.EvalSymlinks of the absolute path p. While
// b.resolved is kept, it is worked out from p's folder's, as kept, and
// one Lstat of p: a name that is no symlink resolves to itself in its
// resolved folder (anything else is resolved afresh).
func (b *boundedFS) evalSymlinks(p string) (string, error) {
	if b.resolved == nil {
		return filepath.EvalSymlinks(p)
	}
	b.mu.Lock()
	r, ok := b.resolved[p]
	b.mu.Unlock()
	if ok {
		return r.path, r.err
	}
	r.path, r.err = "", errNotResolved
	if dir := filepath.Dir(p); dir != p && filepath.IsAbs(p) && filepath.Clean(p) == p {
		if d, err := b.evalSymlinks(dir); err == nil {
			in := filepath.Join(d, filepath.Base(p))
			if fi, err := os.Lstat(in); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
				r.path, r.err = in, nil
			}
		}
	}
	if r.err != nil {
		r.path, r.err = filepath.EvalSymlinks(p)
	}
	b.mu.Lock()
	b.resolved[p] = r
	b.mu.Unlock()
	return r.path, r.err
}

// errNotResolved stands for a path evalSymlinks has not worked out yet.
var errNotResolved = errors.New("not resolved")

// refuse records err as the reason a read failed, and returns it.
func (b *boundedFS) refuse(err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refused == nil {
		b.refused = err
	}
	return err
}

// Refused is the first refusal, or nil.
func (b *boundedFS) Refused() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refused
}

func newBoundedFS(root string, remote bool) (*boundedFS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	return &boundedFS{disk: filesys.MakeFsOnDisk(), root: abs, remote: remote}, nil
}

// resolve is p, absolute with every symlink of its existing part resolved;
// an error when that is outside the root.
func (b *boundedFS) resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if b.helm != nil {
		if in, ok := b.helm.fetched(abs); ok {
			return in, nil
		}
	}
	rest := ""
	at := abs
	for {
		r, err := b.evalSymlinks(at)
		if err == nil {
			at = filepath.Join(r, rest)
			break
		}
		parent := filepath.Dir(at)
		if parent == at {
			return "", err
		}
		rest = filepath.Join(filepath.Base(at), rest)
		at = parent
	}
	if !b.allowed(at) {
		return "", b.refuse(fmt.Errorf("%s is outside the repository %s: kustomize reads only inside it", p, b.root))
	}
	if b.ignored(at) {
		return "", &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w: the Flux artifact leaves it out (.sourceignore or the GitRepository's spec.ignore)", fs.ErrNotExist)}
	}
	return at, nil
}

func (b *boundedFS) allowed(p string) bool {
	if within(b.root, p) {
		return true
	}
	if b.remote {
		tmp, err := filepath.EvalSymlinks(os.TempDir())
		if err == nil && within(tmp, p) && strings.HasPrefix(filepath.Base(firstBelow(tmp, p)), "kustomize-") {
			return true
		}
	}
	return false
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// firstBelow is the component of p right below dir.
func firstBelow(dir, p string) string {
	rel, _ := filepath.Rel(dir, p)
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return first
}

func (b *boundedFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (b *boundedFS) Mkdir(string) error                  { return errReadOnly }
func (b *boundedFS) MkdirAll(string) error               { return errReadOnly }
func (b *boundedFS) WriteFile(string, []byte) error      { return errReadOnly }

// RemoveAll removes only a remote clone, which krusty cleans up.
func (b *boundedFS) RemoveAll(p string) error {
	r, err := b.resolve(p)
	if err != nil || within(b.root, r) {
		return errReadOnly
	}
	return b.disk.RemoveAll(r)
}

func (b *boundedFS) Open(p string) (filesys.File, error) {
	r, err := b.resolve(p)
	if err != nil {
		return nil, err
	}
	return b.disk.Open(r)
}

func (b *boundedFS) IsDir(p string) bool {
	if _, ok := b.virtualFile(p); ok {
		return false
	}
	r, err := b.resolve(p)
	return err == nil && b.disk.IsDir(r)
}

func (b *boundedFS) Exists(p string) bool {
	if _, ok := b.virtualFile(p); ok {
		return true
	}
	r, err := b.resolve(p)
	return err == nil && b.disk.Exists(r)
}

func (b *boundedFS) ReadDir(p string) ([]string, error) {
	r, err := b.resolve(p)
	if err != nil {
		return nil, err
	}
	names, err := b.disk.ReadDir(r)
	if err != nil || b.ignore == nil {
		return names, err
	}
	return slices.DeleteFunc(names, func(n string) bool { return b.ignored(filepath.Join(r, n)) }), nil
}

// CleanedAbs is kyaml's fsOnDisk.CleanedAbs (the folder of p, and its file
// name when p is a file; symlinks resolved), written out here so that its
// symlinks resolve through evalSymlinks, inside the root.
func (b *boundedFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	if _, ok := b.virtualFile(p); ok {
		d, err := b.resolve(filepath.Dir(p))
		return filesys.ConfirmedDir(d), filepath.Base(p), err
	}
	if _, err := b.resolve(p); err != nil {
		return "", "", err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", "", fmt.Errorf("abs path error on '%s' : %v", p, err)
	}
	if b.helm != nil {
		if in, ok := b.helm.fetched(abs); ok {
			// Where kustomize expects it, as if pulled there.
			if fi, err := os.Stat(in); err == nil && fi.IsDir() {
				return filesys.ConfirmedDir(abs), "", nil
			}
			return filesys.ConfirmedDir(filepath.Dir(abs)), filepath.Base(abs), nil
		}
	}
	deLinked, err := b.evalSymlinks(abs)
	if err != nil {
		return "", "", fmt.Errorf("evalsymlink failure on '%s' : %w", p, err)
	}
	if fi, err := os.Stat(deLinked); err == nil && fi.IsDir() {
		return filesys.ConfirmedDir(deLinked), "", nil
	}
	d := filepath.Dir(deLinked)
	if _, err := b.resolve(d); err != nil {
		return "", "", err
	}
	return filesys.ConfirmedDir(d), filepath.Base(deLinked), nil
}

func (b *boundedFS) Glob(pattern string) ([]string, error) {
	matches, err := b.disk.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		if _, err := b.resolve(m); err == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func (b *boundedFS) Walk(p string, fn filepath.WalkFunc) error {
	r, err := b.resolve(p)
	if err != nil {
		return err
	}
	if b.ignore == nil {
		return b.disk.Walk(r, fn)
	}
	return b.disk.Walk(r, func(p string, fi fs.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && b.ignored(p) {
			return nil
		}
		return fn(p, fi, err)
	})
}

// ReadFile reads a file inside the root within MaxManifestBytes, and
// checks it before krusty does (see boundedFS).
func (b *boundedFS) ReadFile(p string) ([]byte, error) {
	r, data, err := b.readRaw(p)
	if err != nil {
		return nil, err
	}
	if err := b.check(p, r, data); err != nil {
		return nil, err
	}
	return data, nil
}

// readRaw reads the file p inside the root within MaxManifestBytes and
// returns its resolved path and its bytes, unchecked.
func (b *boundedFS) readRaw(p string) (string, []byte, error) {
	if data, ok := b.virtualFile(p); ok {
		return p, data, nil
	}
	r, err := b.resolve(p)
	if err != nil {
		return "", nil, err
	}
	f, err := os.Open(r)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	data, _, over, err := readAtMost(f, MaxManifestBytes)
	if err != nil {
		return "", nil, err
	}
	if over {
		return "", nil, b.refuse(fmt.Errorf("%s: over the limit of %d bytes for a file kustomize reads", b.rel(p), MaxManifestBytes))
	}
	return r, data, nil
}

// check checks data, the bytes of p (resolved: r), as ReadFile does before
// krusty reads them; its result depends on r and data alone.
func (b *boundedFS) check(p, r string, data []byte) error {
	if err := yamlBomb(data); err != nil {
		return b.refuse(fmt.Errorf("%s: %w", b.rel(p), err))
	}
	if !isKustomizationFile(r) || b.remote && b.helm == nil {
		return nil
	}
	var k types.Kustomization
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		return nil // krusty reports it
	}
	if !b.remote {
		if err := offline(&k); err != nil {
			return b.refuse(fmt.Errorf("%s: %w", b.rel(p), err))
		}
	}
	if b.helm != nil {
		if err := b.helm.kustomization(p, r, &k); err != nil {
			return b.refuse(fmt.Errorf("%s: %w", b.rel(p), err))
		}
	}
	return nil
}

// rel is p relative to the root, for errors.
func (b *boundedFS) rel(p string) string {
	if rel, err := filepath.Rel(b.root, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return p
}

// yamlBomb decodes data as the plain renderer does (gopkg.in/yaml.v3, which
// bounds alias expansion and nesting) and returns the error when data is
// YAML that expands without bound or nests too deep. Data that is not YAML
// at all (a generator's binary input) is no concern here. Data that cannot
// be either is not decoded (cannotBomb).
func yamlBomb(data []byte) error {
	if cannotBomb(data) {
		return nil
	}
	return decodeBomb(data)
}

// decodeBomb is yamlBomb's decode.
func decodeBomb(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var v any
		err := dec.Decode(&v)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err == nil:
			continue
		case strings.Contains(err.Error(), "excessive aliasing"), strings.Contains(err.Error(), "exceeded max depth"):
			return fmt.Errorf("refused: %w", err)
		}
		return nil
	}
}

// yamlMaxDepth is yaml.v3's bound on nesting, in flow collections (its
// max_flow_level) and in block indentation (max_indents) alike.
const yamlMaxDepth = 10000

// cannotBomb reports whether data can be neither of yamlBomb's refusals,
// by its bytes alone: with no '*' it holds no alias, so nothing expands;
// yaml.v3 nests a flow collection one level for each '[' or '{', and a
// block one level for each greater column of a line, so with fewer of
// those than its bound, and no line as long, it cannot nest too deep.
// Most files a kustomization reads are such, and are spared a decode.
func cannotBomb(data []byte) bool {
	if bytes.IndexByte(data, '*') >= 0 {
		return false
	}
	flow := bytes.Count(data, []byte{'['}) + bytes.Count(data, []byte{'{'})
	if flow >= yamlMaxDepth {
		return false
	}
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n')
		if n < 0 {
			n = len(data)
		}
		if n >= yamlMaxDepth {
			return false
		}
		data = data[min(n+1, len(data)):]
	}
	return true
}

func isKustomizationFile(p string) bool {
	base := filepath.Base(p)
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if base == n {
			return true
		}
	}
	return false
}

// offline says which remote reference a kustomization makes, if any.
func offline(k *types.Kustomization) error {
	var refs []string
	// krusty still reads the deprecated fields, so they are checked too.
	//lint:ignore SA1019 krusty reads bases
	for _, list := range [][]string{k.Resources, k.Bases, k.Components, k.Crds, k.Configurations, k.Generators, k.Transformers, k.Validators} {
		refs = append(refs, list...)
	}
	//lint:ignore SA1019 krusty reads patchesStrategicMerge
	for _, p := range k.PatchesStrategicMerge {
		refs = append(refs, string(p))
	}
	//lint:ignore SA1019 krusty reads patchesJson6902
	for _, p := range append(k.Patches, k.PatchesJson6902...) {
		refs = append(refs, p.Path)
	}
	for _, r := range k.Replacements {
		refs = append(refs, r.Path)
	}
	refs = append(refs, k.OpenAPI["path"])
	gens := make([]types.GeneratorArgs, 0, len(k.ConfigMapGenerator)+len(k.SecretGenerator))
	for _, g := range k.ConfigMapGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range gens {
		for _, f := range g.FileSources {
			if _, p, ok := strings.Cut(f, "="); ok {
				f = p
			}
			refs = append(refs, f)
		}
		refs = append(refs, g.EnvSources...)
		refs = append(refs, g.EnvSource)
	}
	for _, r := range refs {
		if isRemoteRef(r) {
			return fmt.Errorf("names the remote resource %q: kustomize renders offline, from the repository only (--kustomize-remote allows remote resources)", redactRef(r))
		}
	}
	return nil
}

// isRemoteRef reports whether krusty would fetch ref over the network
// rather than read it from disk: a URL (http, https, ssh, file, git::...),
// a scp-like user@host:path, or a github.com/org/repo path. It errs on the
// side of remote; inline YAML (a multi-line entry) is not a reference.
func isRemoteRef(ref string) bool {
	if ref == "" || strings.Contains(ref, "\n") {
		return false
	}
	r := strings.ToLower(strings.TrimSpace(ref))
	r = strings.TrimPrefix(r, "git::")
	first, _, _ := strings.Cut(r, "/")
	return strings.Contains(r, "://") ||
		strings.HasPrefix(r, "github.com/") || strings.HasPrefix(r, "github.com:") ||
		strings.Contains(first, "@")
}

// redactRef is a remote reference as an error may show it.
func redactRef(ref string) string { return redact.URL(ref) }
