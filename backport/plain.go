package backport

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// plainWriter edits the manifests of a folder of plain YAML in place.
type plainWriter struct{ opts Options }

func (w *plainWriter) write(ctx context.Context, targets []*target) (*writeSet, error) {
	ws := &writeSet{files: map[string][]byte{}}
	byFile := map[string][]*target{}
	for _, t := range targets {
		byFile[t.manifest.File] = append(byFile[t.manifest.File], t)
	}
	for _, file := range sortedKeys(byFile) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		abs := filepath.Join(w.opts.SourceDir, filepath.FromSlash(file))
		if strings.HasSuffix(file, ".json") {
			for _, t := range byFile[file] {
				for _, e := range t.edits {
					ws.skip(e, fmt.Sprintf("%s is JSON, which backport does not rewrite: change it by hand", file))
				}
			}
			continue
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		yf := splitFile(data)
		var done []applied
		for _, t := range byFile[file] {
			obj, err := yf.object(t.manifest.Line, t.ref)
			if err != nil {
				for _, e := range t.edits {
					ws.skip(e, fmt.Sprintf("%s:%d: %v", file, t.manifest.Line, err))
				}
				continue
			}
			for _, e := range t.edits {
				a, err := editNode(obj, t, e)
				if err != nil {
					ws.skip(e, fmt.Sprintf("%s:%d: %v", file, t.manifest.Line, err))
					continue
				}
				a.file, a.via = abs, "manifest"
				done = append(done, a)
			}
		}
		out, err := yf.bytes()
		if err != nil {
			for _, a := range done {
				ws.skip(a.edit, fmt.Sprintf("%s: %v", file, err))
			}
			continue
		}
		ws.files[abs] = out
		ws.applied = append(ws.applied, done...)
	}
	return ws, nil
}

// editNode applies e to the object's node.
func editNode(obj *yaml.Node, t *target, e *Edit) (applied, error) {
	p, v := e.At, e.Value
	a := applied{edit: e, target: t, path: p, value: v, remove: e.Type == report.TypeRemoved}
	if a.remove {
		return a, deleteNode(obj, p)
	}
	return a, setNode(&obj, p, v)
}

// yamlFile is a YAML file cut into documents at its "---" lines, each
// parsed when first edited.
type yamlFile struct {
	chunks []render.YAMLDocument
	docs   map[int]*doc
}

func splitFile(data []byte) *yamlFile {
	return &yamlFile{chunks: render.SplitYAMLDocuments(data), docs: map[int]*doc{}}
}

// object finds the node of the object whose document (or List item)
// starts at the 1-based line of the file, and checks it is ref.
func (f *yamlFile) object(line int, ref ObjectRef) (*yaml.Node, error) {
	i := len(f.chunks) - 1
	for i > 0 && f.chunks[i].Line > line {
		i--
	}
	d, ok := f.docs[i]
	if !ok {
		var err error
		if d, err = parseDoc(f.chunks[i].Data); err != nil {
			return nil, err
		}
		f.docs[i] = d
	}
	offset := f.chunks[i].Line - 1
	candidates := []*yaml.Node{d.root}
	if d.root.Kind == yaml.MappingNode {
		if j := mapIndex(d.root, "items"); j >= 0 {
			candidates = append(candidates, d.root.Content[j+1].Content...)
		}
	}
	for _, n := range candidates {
		if n.Line+offset != line || n.Kind != yaml.MappingNode {
			continue
		}
		v, err := nodeValue(n)
		if err != nil {
			return nil, err
		}
		m, _ := v.(map[string]any)
		md, _ := m["metadata"].(map[string]any)
		av, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		if sameObject(av, kind, ns, name, ref) {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no document declaring %s starts at this line", ref)
}

// bytes is the file with its edited documents rewritten.
func (f *yamlFile) bytes() ([]byte, error) {
	var out []byte
	for i, c := range f.chunks {
		d, ok := f.docs[i]
		if !ok || !d.dirty(d.root) {
			out = append(out, c.Data...)
			continue
		}
		text, err := d.render()
		if err != nil {
			return nil, err
		}
		out = append(out, text...)
	}
	return out, nil
}
