package backport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/report"
)

// kustomizeWriter writes a strategic-merge patch per object next to the
// overlay's kustomization and lists it under patches: the bases, which
// other overlays share, are not touched.
type kustomizeWriter struct{ opts Options }

func (w *kustomizeWriter) write(ctx context.Context, targets []*target) (*writeSet, error) {
	kpath := kustomizationFile(w.opts.SourceDir)
	if kpath == "" {
		return nil, fmt.Errorf("no kustomization in %s", w.opts.SourceDir)
	}
	data, err := os.ReadFile(kpath)
	if err != nil {
		return nil, err
	}
	kdoc, err := parseDoc(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(kpath), err)
	}
	kval, err := nodeValue(kdoc.root)
	if err != nil {
		return nil, err
	}
	k, _ := kval.(map[string]any)
	prefix, _ := k["namePrefix"].(string)
	suffix, _ := k["nameSuffix"].(string)

	ws := &writeSet{files: map[string][]byte{}}
	names := map[string]bool{}
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		base := strings.TrimSuffix(strings.TrimPrefix(t.ref.Name, prefix), suffix)
		file := patchFileName(t.ref, names, ".yaml")
		path := filepath.Join(w.opts.SourceDir, file)
		pd, err := patchDoc(path, t.ref, base, w.opts.Reason)
		if err != nil {
			return nil, err
		}
		done := writePatch(pd, t, ws)
		if len(done) == 0 {
			continue
		}
		out, err := pd.render()
		if err != nil {
			for _, a := range done {
				ws.skip(a.edit, fmt.Sprintf("%s: %v", file, err))
			}
			continue
		}
		for i := range done {
			done[i].file, done[i].via = path, "kustomize patch"
		}
		ws.files[path] = out
		ws.applied = append(ws.applied, done...)
		if listed(k, file) {
			continue
		}
		// target selects the object as the overlay sees it, before its own
		// namePrefix and nameSuffix.
		tgt := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if g := t.ref.group(); g != "" {
			tgt.Content = append(tgt.Content, stringNode("group"), stringNode(g))
		}
		tgt.Content = append(tgt.Content, stringNode("kind"), stringNode(t.ref.Kind), stringNode("name"), stringNode(regexp.QuoteMeta(base)))
		entry := Path{{Field: "patches"}, {Key: []KeyField{{Name: "path", Value: file}}}}
		if err := setNode(&kdoc.root, entry, map[string]any{"path": file, "target": tgt}); err != nil {
			return nil, fmt.Errorf("%s: add %s to patches: %w", filepath.Base(kpath), file, err)
		}
	}
	if kdoc.dirty(kdoc.root) {
		out, err := kdoc.render()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(kpath), err)
		}
		ws.files[kpath] = out
	}
	return ws, nil
}

// patchFileName is driftscan-hotfix-<kind>-<name><ext>, with the namespace
// added when two objects would share a name.
func patchFileName(ref ObjectRef, used map[string]bool, ext string) string {
	name := "driftscan-hotfix-" + strings.ToLower(ref.Kind) + "-" + ref.Name + ext
	if used[name] && ref.Namespace != "" {
		name = "driftscan-hotfix-" + strings.ToLower(ref.Kind) + "-" + ref.Namespace + "-" + ref.Name + ext
	}
	used[name] = true
	return name
}

// patchDoc reads the patch a previous backport wrote, to extend it, or
// starts one.
func patchDoc(path string, ref ObjectRef, name, reason string) (*doc, error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		d, err := parseDoc(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		return d, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Live changes to %s/%s, carried back to Git by driftscan backport.\n", ref.Kind, ref.Name)
	if reason != "" {
		fmt.Fprintf(&b, "# Reason: %s\n", oneLine(reason))
	}
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", ref.APIVersion, ref.Kind, name)
	return parseDoc([]byte(b.String()))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// listed reports whether the kustomization lists file as a patch.
func listed(k map[string]any, file string) bool {
	patches, _ := k["patches"].([]any)
	for _, p := range patches {
		if m, ok := p.(map[string]any); ok && m["path"] == file {
			return true
		}
	}
	legacy, _ := k["patchesStrategicMerge"].([]any)
	for _, p := range legacy {
		if p == file {
			return true
		}
	}
	return false
}

// writePatch writes t's edits into the strategic-merge patch pd. List items
// are addressed by their keys (containers by name), as the patch merges
// them; a list addressed by position or a set of values is written whole.
// With t.fallback every list is written whole, for kinds whose lists the
// patch does not merge by key (custom resources without a schema).
func writePatch(pd *doc, t *target, ws *writeSet) []applied {
	want := deepCopy(t.before())
	var done []applied
	for _, e := range t.edits {
		p, v := e.At, e.Value
		var err error
		a := applied{edit: e, target: t, path: p, value: v, remove: e.Type == report.TypeRemoved}
		if a.remove {
			del(want, p)
		} else if want, err = set(want, p, deepCopy(v)); err != nil {
			ws.skip(e, err.Error())
			continue
		}
		pp, pv := patchValue(p, v, a.remove, want, t.fallback)
		if err := setNode(&pd.root, pp, pv); err != nil {
			ws.skip(e, fmt.Sprintf("write the patch: %v", err))
			continue
		}
		done = append(done, a)
	}
	return done
}

// patchValue is where and what a strategic-merge patch sets for one edit.
func patchValue(p Path, v any, remove bool, want any, whole bool) (Path, any) {
	for j, e := range p {
		if e.IsIndex || e.HasValue || (whole && e.Key != nil) {
			list, _ := get(want, p[:j])
			items, ok := list.([]any)
			if !ok || e.Key == nil {
				return p[:j], deepCopy(list)
			}
			// Write each item's key fields first, as people do.
			var keys []string
			for _, k := range e.Key {
				keys = append(keys, k.Name)
			}
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, item := range items {
				n.Content = append(n.Content, valueNode(item, keys))
			}
			return p[:j], n
		}
	}
	if !remove {
		return p, v
	}
	last := p[len(p)-1]
	if last.Key != nil {
		item := map[string]any{"$patch": "delete"}
		for _, k := range last.Key {
			item[k.Name] = k.Value
		}
		return p, item
	}
	return p, nil
}
