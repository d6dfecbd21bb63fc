package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/calricon/driftscan/config"
	"github.com/gobwas/glob"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FileError is a problem with one file of a source folder, or with one
// document in it.
type FileError struct {
	// File is relative to the source folder, with forward slashes.
	File string
	// Line is 1-based; 0 when the position is not known.
	Line int
	Err  error
}

// Error reads "apps/web/deploy.yaml:12: object has kind Deployment but no
// metadata.name".
func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// MaxManifestBytes is the largest manifest file the plain renderer reads;
// the API server itself refuses objects over about 1.5 MiB.
const MaxManifestBytes = 8 << 20

// renderYAML reads the plain manifests under dir: every file whose name ends
// in .yaml, .yml or .json, in all subfolders, in the byte order of their
// slash-separated paths. A file holds any number of documents: YAML
// documents separated by "---" lines, or JSON values one after another.
//
// What is not a manifest is skipped without an error:
//   - hidden files and folders (a name starting with ".");
//   - a subfolder holding a Chart.yaml, kustomization.yaml,
//     kustomization.yml or Kustomization: it is another renderer's input,
//     and its files are templates or patches rather than objects;
//   - files of other extensions (README.md, NOTES.txt, ...);
//   - empty files and documents, and those holding only comments;
//   - a document with neither apiVersion nor kind (a Helm values file, a
//     tool's config, a JSON schema, a top-level list or scalar);
//   - a kustomize document (apiVersion kustomize.config.k8s.io/...).
//
// A document whose kind ends in "List" and that has an items array (v1
// List, ConfigMapList, ...) stands for its items, as it does for kubectl;
// each item must be a whole object.
//
// Each of these is an error naming the file and line, and the documents
// around it are still returned:
//   - malformed YAML or JSON;
//   - a Git LFS pointer in place of the file (its content is in LFS
//     storage, which driftscan does not read; as a scalar document it
//     would otherwise be skipped, and its objects silently not compared);
//   - an object with apiVersion but no kind, or kind but no apiVersion;
//   - an object with kind but neither metadata.name nor
//     metadata.generateName.
//
// A Manifest's Line is the line of the document's first key (for JSON the
// line of its opening brace). YAML is read as YAML 1.2 (gopkg.in/yaml.v3):
// an unquoted yes or on is a string, not a boolean.
func renderYAML(ctx context.Context, opts Options) ([]Manifest, error) {
	src, err := openRoot(opts)
	if errors.As(err, new(*fs.PathError)) {
		return nil, fmt.Errorf("read %s: %w", opts.Dir, err)
	}
	if err != nil {
		return nil, err
	}
	defer src.Close()
	// The source folder is listed, and each file opened, in a root of its
	// own, so that opening it is one openat rather than one per folder
	// from the repository's top; a file that cannot be opened there (a
	// symlink to elsewhere in the repository) is opened again from the
	// top, which also says why when it cannot be.
	dir := src.root
	if src.dir != "." {
		d, err := src.root.OpenRoot(src.dir)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", opts.Dir, err)
		}
		defer d.Close()
		dir = d
	}
	files, errs, folders, other, err := listFolder(dir, opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.Directory != nil {
		if files, err = directoryFiles(files, opts.Directory); err != nil {
			return nil, fmt.Errorf("read %s: %w", opts.Dir, err)
		}
	}
	switch other {
	case "":
	case "Chart.yaml":
		opts.Helm = &config.HelmSource{ReleaseName: opts.ReleaseName}
		return renderHelm(ctx, opts)
	default:
		opts.Kustomize = &config.KustomizeSource{}
		return renderKustomize(ctx, opts)
	}
	defer folders.Close()
	// The file index of the parse cache knows a file by its absolute path:
	// the folder's, clean, and the file's, a clean relative path (names
	// from the folders' entries), joined without a filepath.Join to clean.
	abs := ""
	if opts.Parsed != nil {
		if a, err := filepath.Abs(opts.Dir); err == nil {
			abs = strings.TrimSuffix(a, string(filepath.Separator)) + string(filepath.Separator)
		}
	}
	// Each file is read and parsed on its own, by up to fileWorkers at a
	// time, and the results are put in file order: a file's open, read and
	// close took as long as parsing it on the machines we measure on, so
	// one at a time left a core waiting on the kernel.
	type parsedFile struct {
		ms   []Manifest
		errs []*FileError
	}
	results := make([]parsedFile, len(files))
	one := func(i int) {
		file := files[i]
		at := ""
		if abs != "" {
			at = abs + filepath.FromSlash(file)
			if ms, ok := opts.Parsed.unchanged(folders, file, at, opts.Lazy); ok {
				results[i].ms = ms
				return
			}
		}
		read := opts.Parsed.clock()
		data, st, stamped, err := readManifest(folders, src, file)
		if err != nil {
			results[i].errs = []*FileError{{File: file, Err: err}}
			return
		}
		if opts.Directory != nil && bytes.Contains(data, skipFileRendering) {
			return // Argo CD leaves it out
		}
		ms, docErrs, key := parseFile(opts.Parsed, file, data, opts.Lazy)
		if opts.Directory != nil && len(ms) == 0 && len(docErrs) > 0 && !looksLikeManifest(data) {
			return // Argo CD takes it for an unrelated file, and leaves it out
		}
		if len(docErrs) == 0 && stamped && at != "" {
			opts.Parsed.remember(at, st, key, read)
		}
		results[i] = parsedFile{ms: ms, errs: docErrs}
	}
	// The workers take the files in turn rather than a goroutine each: a
	// new goroutine's stack starts small and grows by copying as the
	// decoders recurse, which cost a warm scan more CPU than its reads
	// (copystack was 11% of a warm 5k scan with a goroutine a file).
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(fileWorkers, len(files)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				one(i)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := 0
	for _, r := range results {
		n += len(r.ms)
	}
	out := make([]Manifest, 0, n)
	for _, r := range results {
		out = append(out, r.ms...)
		for _, e := range r.errs {
			errs = append(errs, e)
		}
	}
	return out, errors.Join(errs...)
}

// looksLikeManifest says whether a file that does not parse looks like a
// manifest to an Argo CD directory source (argo-cd reposerver/repository
// getObjsFromYAMLOrJSON): it holds apiVersion:, kind: and metadata:. One
// that does not, and of which no object parsed, is an unrelated file that
// Argo CD leaves out; one that does is an error there as here.
func looksLikeManifest(data []byte) bool {
	return bytes.Contains(data, []byte("apiVersion:")) && bytes.Contains(data, []byte("kind:")) && bytes.Contains(data, []byte("metadata:"))
}

// lfsPointer begins a Git LFS pointer file: the repository holds it in
// place of the file, whose content is in LFS storage (Argo CD checks it out
// with a repository's enableLfs; driftscan reads Git objects only).
var lfsPointer = []byte("version https://git-lfs.github.com/spec/v1\n")

var errLFSPointer = errors.New("a Git LFS pointer, not the file: driftscan reads the repository's Git objects, not LFS storage, so its manifests are not compared")

// fileWorkers is how many files of one source folder are read and parsed
// at once.
const fileWorkers = 4

// parseFile reads the manifests of one file's bytes, from cache when it
// holds them, and keeps them there when they parsed without an error.
// The errors are sorted by line and name the file. key is the cache's key
// of the bytes (zero without a cache). lazy is ParseCache.lookup's.
func parseFile(cache *ParseCache, file string, data []byte, lazy bool) (_ []Manifest, _ []*FileError, key cacheKey) {
	kind := cacheYAML
	if strings.HasSuffix(file, ".json") {
		kind = cacheJSON
	}
	if cache != nil {
		key = keyOf(kind, data)
		if ms, ok := cache.lookup(key, file, lazy); ok {
			return ms, nil, key
		}
	}
	if bytes.HasPrefix(data, lfsPointer) {
		// A scalar document, which would be skipped as no object.
		return nil, []*FileError{{File: file, Line: 1, Err: errLFSPointer}}, key
	}
	var docs []document
	var docErrs []*FileError
	if kind == cacheJSON {
		docs, docErrs = splitJSON(data)
	} else {
		docs, docErrs = splitYAML(data)
	}
	var out []Manifest
	for _, doc := range docs {
		ms, objErrs := doc.manifests(file)
		out = append(out, ms...)
		docErrs = append(docErrs, objErrs...)
	}
	cache.name(key, out)
	if len(docErrs) == 0 {
		cache.store(key, out)
		return out, nil, key
	}
	slices.SortStableFunc(docErrs, func(a, b *FileError) int { return a.Line - b.Line })
	for _, e := range docErrs {
		e.File = file
	}
	return out, docErrs, key
}

// readManifest reads the manifest file at file (a slash path relative to
// dir, the source folder's root) and stamps it with what the stat of the
// regular file it read says (for a symlink within the source folder, its
// target's). folder reads what it can; the rest is read through dir's
// root, and when that fails (a symlink to elsewhere in the repository)
// through src's root, which also says why when it cannot be read: a
// symlink that leaves the root is an error.
func readManifest(dir *folder, src *sourceRoot, file string) (data []byte, st fileStamp, stamped bool, err error) {
	if data, st, stamped = dir.readFile(file, MaxManifestBytes); stamped {
		return data, st, true, nil
	}
	data, fi, err := readLimited(dir.root, file, MaxManifestBytes)
	if err == nil {
		if fi != nil {
			st, stamped = stampOf(fi)
		}
		return data, st, stamped, nil
	}
	if dir.root == src.root {
		return nil, fileStamp{}, false, err
	}
	// Not the file at its path but a symlink's target: no stamp.
	data, _, err = readLimited(src.root, path.Join(src.dir, file), MaxManifestBytes)
	return data, fileStamp{}, false, err
}

// readLimited reads the file p of root, failing when it holds more than max
// bytes (checked while reading, not only by a Stat before).
//
// The file is opened with O_NONBLOCK, which does nothing to a regular file
// (open(2)) but spares the four fcntl calls the os package otherwise makes
// around its attempt to poll it.
func readLimited(root *os.Root, p string, max int64) ([]byte, fs.FileInfo, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, fi, over, err := readAtMost(f, max)
	if err != nil {
		return nil, nil, err
	}
	if over {
		return nil, nil, fmt.Errorf("over the limit of %d bytes for a manifest file", max)
	}
	return data, fi, nil
}

// readAtMost reads f to its end, or to one byte past max: over says f held
// more than max bytes (readSized). fi is the fstat of a regular f, taken
// before the reads (nil when it failed or f is not regular).
func readAtMost(f *os.File, max int64) (data []byte, fi fs.FileInfo, over bool, err error) {
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		fi, size = st, st.Size()
	}
	data, over, err = readSized(f, size, max)
	return data, fi, over, err
}

// readSized reads r to its end, or to one byte past max: over says it held
// more than max bytes. size is what fstat said of a regular file (-1 when
// nothing did). The buffer is that size and one byte more, so nothing is
// copied, and a read that fills it to size is the whole file as of that
// read: no second read looks for its end. A file that grew is read on to
// its end; one of unknown size starts in 512 bytes.
func readSized[R io.Reader](r R, size, max int64) (data []byte, over bool, err error) {
	capacity := int64(512)
	if size >= 0 {
		capacity = size + 1
	}
	data = make([]byte, 0, min(capacity, max+1))
	for {
		if int64(len(data)) > max {
			return data, true, nil
		}
		if len(data) == cap(data) {
			data = slices.Grow(data, 1)
		}
		room := data[len(data):min(int64(cap(data)), max+1)]
		n, err := r.Read(room)
		data = data[:len(data)+n]
		switch {
		case err == io.EOF || err == nil && size > 0 && int64(len(data)) == size:
			return data, int64(len(data)) > max, nil
		case err != nil:
			return data, false, err
		}
	}
}

// isOtherRendererInput reports whether the folder is a Helm chart or a
// kustomization.
func isOtherRendererInput(dir string) bool {
	for _, name := range renderers {
		if exists(filepath.Join(dir, name)) {
			return true
		}
	}
	return false
}

// document is one decoded YAML document or JSON value.
type document struct {
	// line is where the document starts, 1-based.
	line int
	// value holds only JSON types: map[string]any, []any, string, int64,
	// float64, bool and nil.
	value any
	// itemLines are the lines of the entries of a top-level items list, when
	// known.
	itemLines []int
}

// manifests turns a document into the objects it declares: none, one, or
// the items of a List.
func (d document) manifests(file string) ([]Manifest, []*FileError) {
	obj, ok := d.value.(map[string]any)
	if !ok {
		return nil, nil
	}
	apiVersion, _ := obj["apiVersion"].(string)
	if strings.HasPrefix(apiVersion, "kustomize.config.k8s.io/") {
		return nil, nil
	}
	kind, _ := obj["kind"].(string)
	items, isList := obj["items"].([]any)
	if !isList || !strings.HasSuffix(kind, "List") {
		m, skip, err := toManifest(obj, false)
		switch {
		case err != nil:
			return nil, []*FileError{{File: file, Line: d.line, Err: err}}
		case skip:
			return nil, nil
		}
		return []Manifest{{Object: m, File: file, Line: d.line}}, nil
	}
	var out []Manifest
	var errs []*FileError
	for i, item := range items {
		line := d.line
		if i < len(d.itemLines) {
			line = d.itemLines[i]
		}
		obj, ok := item.(map[string]any)
		if !ok {
			errs = append(errs, &FileError{File: file, Line: line, Err: fmt.Errorf("%s item %d is not an object", kind, i)})
			continue
		}
		m, _, err := toManifest(obj, true)
		if err != nil {
			errs = append(errs, &FileError{File: file, Line: line, Err: err})
			continue
		}
		out = append(out, Manifest{Object: m, File: file, Line: line})
	}
	return out, errs
}

// toManifest checks that obj is a whole object. With neither apiVersion nor
// kind it is no object at all: skipped, or an error when mustBeObject.
func toManifest(obj map[string]any, mustBeObject bool) (u *unstructured.Unstructured, skip bool, err error) {
	apiVersion, hasAPIVersion := obj["apiVersion"]
	kind, hasKind := obj["kind"]
	if !hasAPIVersion && !hasKind {
		if mustBeObject {
			return nil, false, errors.New("object has no apiVersion and no kind")
		}
		return nil, true, nil
	}
	av, ok := apiVersion.(string)
	if hasAPIVersion && (!ok || av == "") {
		return nil, false, fmt.Errorf("apiVersion %v is not a string", apiVersion)
	}
	k, ok := kind.(string)
	if hasKind && (!ok || k == "") {
		return nil, false, fmt.Errorf("kind %v is not a string", kind)
	}
	switch {
	case !hasAPIVersion:
		return nil, false, fmt.Errorf("object has kind %s but no apiVersion", k)
	case !hasKind:
		return nil, false, fmt.Errorf("object has apiVersion %s but no kind", av)
	}
	u = &unstructured.Unstructured{Object: obj}
	if _, ok := obj["metadata"].(map[string]any); obj["metadata"] != nil && !ok {
		return nil, false, fmt.Errorf("object has kind %s but its metadata is not a map", k)
	}
	if u.GetName() == "" && u.GetGenerateName() == "" {
		return nil, false, fmt.Errorf("object has kind %s but no metadata.name", k)
	}
	return u, false, nil
}

// splitJSON decodes the JSON values in data, one after another. Decoding
// stops at the first malformed value, and at one with invalid UTF-8 or a
// key twice in an object (strictJSON), as the YAML reader stops.
func splitJSON(data []byte) ([]document, []*FileError) {
	var docs []document
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := int(dec.InputOffset())
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			line := lineAt(data, len(data))
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line = lineAt(data, int(se.Offset)-1)
			}
			return docs, []*FileError{{Line: line, Err: err}}
		}
		start += len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n"))
		if off, err := strictJSON(raw); err != nil {
			return docs, []*FileError{{Line: lineAt(data, start+off), Err: err}}
		}
		var v any
		if err := utiljson.Unmarshal(raw, &v); err != nil {
			return docs, []*FileError{{Line: lineAt(data, start), Err: err}}
		}
		docs = append(docs, document{line: lineAt(data, start), value: v})
	}
}

// lineAt is the 1-based line of the byte at offset.
func lineAt(data []byte, offset int) int {
	offset = min(max(offset, 0), len(data))
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// splitYAML decodes the YAML documents in data. Each chunk between document
// markers is decoded on its own, so a malformed document does not hide the
// ones after it.
func splitYAML(data []byte) ([]document, []*FileError) {
	var docs []document
	var errs []*FileError
	for _, c := range SplitYAMLDocuments(data) {
		if m, line, ok := fastDocument(c.Data); ok {
			docs = append(docs, document{line: line + c.Line - 1, value: m})
			continue
		}
		dec := yaml.NewDecoder(bytes.NewReader(c.Data))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if err == io.EOF {
				break
			}
			if err != nil {
				errs = append(errs, yamlErrors(err, c.Line)...)
				break
			}
			if len(n.Content) == 0 {
				continue
			}
			root := n.Content[0]
			if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
				continue
			}
			line := root.Line + c.Line - 1
			v, err := YAMLNodeValue(root)
			if err != nil {
				errs = append(errs, yamlErrors(err, c.Line)...)
				continue
			}
			docs = append(docs, document{line: line, value: v, itemLines: itemLines(root, c.Line-1)})
		}
	}
	return docs, errs
}

// YAMLDocument is one document of a YAML file: the part that starts at a
// document marker (or at the top of the file).
type YAMLDocument struct {
	// Line is the 1-based line in the file where Data starts.
	Line int
	Data []byte
}

// SplitYAMLDocuments cuts data before every document marker: a line that starts
// with "---" and a space, a tab or its end. Such a line ends a document
// whatever the context (YAML 1.2.2, section 9.1.4), so the cut is exact.
// Leading comments and directives stay with the marker that follows them.
func SplitYAMLDocuments(data []byte) []YAMLDocument {
	var chunks []YAMLDocument
	cur := YAMLDocument{Line: 1}
	start, content := 0, false
	line := 1
	for off := 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off + 1
		}
		text := bytes.TrimRight(data[off:end], "\r\n")
		if IsYAMLDocumentMarker(text) {
			if content {
				cur.Data = data[start:off]
				chunks = append(chunks, cur)
				cur, start = YAMLDocument{Line: line}, off
			}
			content = true
		} else if t := bytes.TrimSpace(text); len(t) > 0 && t[0] != '#' && t[0] != '%' {
			content = true
		}
		off = end
	}
	cur.Data = data[start:]
	return append(chunks, cur)
}

// IsYAMLDocumentMarker reports whether a line (without its newline) starts a
// new YAML document: "---" followed by a space, a tab or the end of the line.
func IsYAMLDocumentMarker(line []byte) bool {
	return bytes.HasPrefix(line, []byte("---")) &&
		(len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

// yamlLine matches one gopkg.in/yaml.v3 error message that has a position,
// and yamlAtLine a line that message points back to.
var (
	yamlLine   = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlAtLine = regexp.MustCompile(`at line (\d+)`)
)

// yamlErrors turns a gopkg.in/yaml.v3 error into file errors with lines in
// the file, for a chunk that starts at line first.
func yamlErrors(err error, first int) []*FileError {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []*FileError
	for _, msg := range msgs {
		line := first
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			line, msg = max(n+first-1, first), m[2]
		}
		msg = yamlAtLine.ReplaceAllStringFunc(msg, func(at string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(at, "at line "))
			return fmt.Sprintf("at line %d", n+first-1)
		})
		errs = append(errs, &FileError{Line: line, Err: errors.New(msg)})
	}
	return errs
}

// itemLines are the file lines of the entries of a mapping's items list.
func itemLines(root *yaml.Node, offset int) []int {
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "items" || root.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		var lines []int
		for _, item := range root.Content[i+1].Content {
			lines = append(lines, item.Line+offset)
		}
		return lines
	}
	return nil
}

// skipFileRendering marks a file an Argo CD directory source leaves out.
var skipFileRendering = []byte("+argocd:skip-file-rendering")

// directoryFiles are the files (slash paths relative to the folder) an
// Argo CD directory source reads (argo-cd reposerver
// getPotentiallyValidManifests): the folder's own unless d.Recurse, then
// not matching d.Exclude and matching d.Include, with Argo CD's glob
// (gobwas/glob, no separators: '*' crosses folders).
func directoryFiles(files []string, d *config.DirectorySource) ([]string, error) {
	var include, exclude glob.Glob
	var err error
	if d.Include != "" {
		if include, err = glob.Compile(d.Include); err != nil {
			return nil, fmt.Errorf("directory.include %q: %w", d.Include, err)
		}
	}
	if d.Exclude != "" {
		if exclude, err = glob.Compile(d.Exclude); err != nil {
			return nil, fmt.Errorf("directory.exclude %q: %w", d.Exclude, err)
		}
	}
	var out []string
	for _, f := range files {
		rel := filepath.FromSlash(f)
		switch {
		case !d.Recurse && strings.Contains(f, "/"):
		case exclude != nil && exclude.Match(rel):
		case include != nil && !include.Match(rel):
		default:
			out = append(out, f)
		}
	}
	return out, nil
}
