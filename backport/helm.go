package backport

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// helmWriter changes chart values that map to a field one to one, and
// writes a suggested patch for the fields no value maps to.
//
// A value maps to a field one to one when rendering the chart with that
// value set to a probe (a unique string, a unique number, or a boolean's
// opposite) changes exactly that field of exactly that object, to the
// probe; or to the probe with a fixed text around it, as an image
// "nginx:{{ .Values.image.tag }}" does, as long as the live value has the
// same text around it. Only values whose current text is (part of) Git's
// value of the field are probed for a Changed field, and only empty values
// for an Added one. A value set by the app's helm.set, or one that feeds
// two fields, is not used.
type helmWriter struct {
	opts   Options
	root   string // the repository's
	before []render.Manifest
}

// leaf is one scalar (or empty collection) of the chart's values.
type leaf struct {
	path  Path // Field and Index elements
	value any
}

// key is the leaf's path as helm --set writes it: image.tag, env[0].value.
func (l leaf) key() string {
	var b strings.Builder
	for _, e := range l.path {
		if e.IsIndex {
			fmt.Fprintf(&b, "[%d]", e.Index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.Field)
	}
	return b.String()
}

// mapping is how a leaf maps to a field: the field's text is
// prefix + value + suffix.
type mapping struct {
	leaf           leaf
	prefix, suffix string
}

// job is one field to map to a value; reason says why it was not.
type job struct {
	t      *target
	e      *Edit
	p      Path
	reason string
}

func (w *helmWriter) write(ctx context.Context, targets []*target) (*writeSet, error) {
	ws := &writeSet{files: map[string][]byte{}}
	src := w.opts.Helm
	if src == nil {
		src = &config.HelmSource{}
	}
	files, err := render.ValuesFilePaths(w.root, w.opts.SourceDir, src)
	if err != nil {
		return nil, err
	}
	merged, err := w.values(files)
	if err != nil {
		return nil, err
	}
	var jobs, unmapped []job
	for _, t := range targets {
		for _, e := range t.edits {
			if e.Type == report.TypeRemoved {
				unmapped = append(unmapped, job{t, e, e.At, "the field was removed live, and no chart value is probed for a removal"})
				continue
			}
			jobs = append(jobs, job{t: t, e: e, p: e.At})
		}
	}
	found, err := w.probeAll(ctx, src, merged, jobs)
	if err != nil {
		return nil, err
	}
	unmapped = append(unmapped, w.writeValues(ws, files, merged, jobs, found)...)
	return ws, w.suggest(ws, unmapped)
}

// probeAll probes each candidate leaf once, for all the fields it may map
// to, and returns the mappings found for each edit.
func (w *helmWriter) probeAll(ctx context.Context, src *config.HelmSource, merged map[string]any, jobs []job) (map[*Edit][]mapping, error) {
	// What --set and --set-string set is not the values file's to change.
	set := maps.Clone(src.Set)
	if set == nil {
		set = map[string]string{}
	}
	maps.Copy(set, src.SetString)
	leaves := collectLeaves(merged, nil, set)
	candidates := map[string][]job{}
	var order []leaf
	for _, j := range jobs {
		for _, l := range leaves {
			if !candidate(l, j.t, j.p, j.e.Type) {
				continue
			}
			k := l.key()
			if _, ok := candidates[k]; !ok {
				order = append(order, l)
			}
			candidates[k] = append(candidates[k], j)
		}
	}
	found := map[*Edit][]mapping{}
	if len(order) == 0 {
		return found, nil
	}
	for n, l := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		probe := probeValue(l.value, n)
		rendered, err := w.probe(ctx, src, merged, l, probe)
		if err != nil {
			continue // the chart does not render with a probe there: not this value
		}
		for _, j := range candidates[l.key()] {
			if m, ok := w.maps(rendered, j.t, j.p, l, probe); ok {
				found[j.e] = append(found[j.e], m)
			}
		}
	}
	return found, nil
}

// writeValues writes the mapped values into the values file: the app's
// last values file (files, render.ValuesFilePaths), else the chart's
// values.yaml. It returns the jobs it could not write.
func (w *helmWriter) writeValues(ws *writeSet, files []string, merged map[string]any, jobs []job, found map[*Edit][]mapping) []job {
	path := filepath.Join(w.opts.SourceDir, "values.yaml")
	if n := len(files); n > 0 {
		path = files[n-1]
	}
	var unmapped []job
	fail := func(j job, format string, args ...any) {
		j.reason = fmt.Sprintf(format, args...)
		unmapped = append(unmapped, j)
	}
	vf, err := valuesDoc(path)
	if err != nil {
		for _, j := range jobs {
			fail(j, "%v", err)
		}
		return unmapped
	}
	rel, err := filepath.Rel(w.root, path)
	outside := err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
	written := map[string]any{}
	var done []applied
	for _, j := range jobs {
		ms := found[j.e]
		if len(ms) == 0 {
			fail(j, "no chart value maps to this field one to one")
			continue
		}
		// A value that is the whole field first; then one with text around
		// it that the live value has too.
		slices.SortStableFunc(ms, func(a, b mapping) int { return len(a.prefix+a.suffix) - len(b.prefix+b.suffix) })
		var m mapping
		var v any
		ok := false
		for _, c := range ms {
			if v, ok = c.value(j.e.Value); ok {
				m = c
				break
			}
		}
		k := m.leaf.key()
		switch prev, twice := written[k]; {
		case !ok:
			fail(j, "the field is %q + %s + %q, but the live value %q does not have that form", ms[0].prefix, ms[0].leaf.key(), ms[0].suffix, j.e.Live)
			continue
		case twice && !sameValue(prev, v):
			fail(j, "value %s would need two different values", k)
			continue
		case outside:
			fail(j, "value %s maps to the field, but the values file %s is outside the repository", k, path)
			continue
		}
		if err := setValue(vf, merged, m.leaf, v); err != nil {
			fail(j, "cannot write value %s to %s: %v", k, filepath.Base(path), err)
			continue
		}
		written[k] = v
		// The field renders as the live value.
		done = append(done, applied{edit: j.e, target: j.t, path: j.p, value: j.e.Value, file: path, via: "helm value " + k})
	}
	if len(done) == 0 {
		return unmapped
	}
	out, err := vf.bytes()
	if err != nil {
		for _, a := range done {
			fail(job{t: a.target, e: a.edit, p: a.path}, "%s: %v", filepath.Base(path), err)
		}
		return unmapped
	}
	ws.files[path] = out
	ws.applied = append(ws.applied, done...)
	return unmapped
}

// suggest writes a suggested patch per object for the fields no value maps
// to; they are skipped, with the patch named.
func (w *helmWriter) suggest(ws *writeSet, unmapped []job) error {
	names := map[string]bool{}
	byTarget := map[*target][]job{}
	var order []*target
	for _, j := range unmapped {
		if _, ok := byTarget[j.t]; !ok {
			order = append(order, j.t)
		}
		byTarget[j.t] = append(byTarget[j.t], j)
	}
	for _, t := range order {
		jobs := byTarget[t]
		path := filepath.Join(w.opts.SourceDir, patchFileName(t.ref, names, ".patch.yaml"))
		sub := &target{ref: t.ref, manifest: t.manifest}
		for _, j := range jobs {
			sub.edits = append(sub.edits, j.e)
		}
		pd, err := suggestionDoc(path, t.ref, jobs, w.opts.Reason)
		if err != nil {
			return err
		}
		written := writePatch(pd, sub, &writeSet{})
		out, err := pd.render()
		if err != nil || len(written) == 0 {
			for _, j := range jobs {
				ws.skip(j.e, j.reason+"; no patch could be suggested either")
			}
			continue
		}
		ws.files[path] = out
		for _, j := range jobs {
			ws.skipped = append(ws.skipped, Skip{Edit: *j.e, Reason: j.reason + ": a suggested patch was written instead, for a person to finish", Suggestion: path})
		}
	}
	return nil
}

// values merges the chart's values.yaml and the app's values files (files,
// render.ValuesFilePaths) as Helm does: the files override the chart's
// defaults, and a null removes one.
func (w *helmWriter) values(files []string) (map[string]any, error) {
	read := func(path string) (map[string]any, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return map[string]any{}, nil
			}
			return nil, err
		}
		v, err := valueOfText(data)
		if err != nil {
			return nil, fmt.Errorf("values %s: %w", path, err)
		}
		m, _ := v.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		return m, nil
	}
	chart, err := read(filepath.Join(w.opts.SourceDir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	user := map[string]any{}
	for _, f := range files {
		m, err := read(f)
		if err != nil {
			return nil, err
		}
		user = mergeValues(user, m, false)
	}
	return mergeValues(chart, user, true), nil
}

// mergeValues merges src over dst; with coalesce, a null in src removes
// the key, as Helm's coalescing of user values over chart defaults does.
func mergeValues(dst, src map[string]any, coalesce bool) map[string]any {
	out := deepCopy(dst).(map[string]any)
	for k, v := range src {
		if v == nil && coalesce {
			delete(out, k)
			continue
		}
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(dm, sm, coalesce)
				continue
			}
		}
		out[k] = deepCopy(v)
	}
	return out
}

// collectLeaves lists the scalars and empty collections of v, except those
// under a key that helm.set overrides.
func collectLeaves(v any, at Path, set map[string]string) []leaf {
	var out []leaf
	switch t := v.(type) {
	case map[string]any:
		if len(t) > 0 {
			for _, k := range sortedKeys(t) {
				out = append(out, collectLeaves(t[k], append(slices.Clone(at), Element{Field: k}), set)...)
			}
			return out
		}
	case []any:
		if len(t) > 0 {
			for i, c := range t {
				out = append(out, collectLeaves(c, append(slices.Clone(at), Element{Index: i, IsIndex: true}), set)...)
			}
			return out
		}
	}
	l := leaf{path: at, value: v}
	for k := range set {
		if key := l.key(); key == k || strings.HasPrefix(key, k+".") || strings.HasPrefix(key, k+"[") {
			return nil
		}
	}
	return []leaf{l}
}

// candidate reports whether l may map to the field at p of t: for a
// Changed field, l's text is Git's value or a part of it; for an Added one,
// l is empty.
func candidate(l leaf, t *target, p Path, typ report.Type) bool {
	if typ == report.TypeAdded {
		return isEmpty(l.value) || l.value == ""
	}
	old, ok := get(t.before(), p)
	if !ok {
		return false
	}
	lt, ot := report.ValueText(l.value), report.ValueText(old)
	if lt == ot {
		return true
	}
	_, isMap := l.value.(map[string]any)
	_, isList := l.value.([]any)
	return lt != "" && !isMap && !isList && strings.Contains(ot, lt)
}

// probeValue is a value unlike any other for the n-th probe, of l's type.
func probeValue(v any, n int) any {
	switch t := v.(type) {
	case bool:
		return !t
	case int64, float64, int:
		return int64(917_000_001 + n)
	}
	return fmt.Sprintf("driftscan-probe-%d", n)
}

// probe renders the chart with l set to probe through an extra values
// document, merged after the app's values files as one more file would be.
func (w *helmWriter) probe(ctx context.Context, src *config.HelmSource, merged map[string]any, l leaf, probe any) ([]render.Manifest, error) {
	overlay, err := overlayFor(merged, l.path, probe)
	if err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(overlay)
	if err != nil {
		return nil, err
	}
	ro := renderOptions(w.opts)
	ro.Helm = src
	ro.ExtraValues = [][]byte{data}
	return render.Manifests(ctx, ro)
}

// overlayFor is a values map that sets path to v when merged over the
// values: nested maps down to the leaf, or down to the first list, which
// is given whole (lists are not merged).
func overlayFor(merged map[string]any, path Path, v any) (map[string]any, error) {
	out := map[string]any{}
	cur := out
	for i, e := range path {
		if e.IsIndex {
			return nil, errors.New("a list at the top of the values")
		}
		if i+1 < len(path) && path[i+1].IsIndex {
			list, _ := get(merged, path[:i+1])
			whole, err := set(deepCopy(list), path[i+1:], v)
			if err != nil {
				return nil, err
			}
			cur[e.Field] = whole
			return out, nil
		}
		if i == len(path)-1 {
			cur[e.Field] = v
			return out, nil
		}
		next := map[string]any{}
		cur[e.Field] = next
		cur = next
	}
	return out, nil
}

// maps reports whether the probe rendering shows l mapping to the field at
// p of t, one to one.
func (w *helmWriter) maps(rendered []render.Manifest, t *target, p Path, l leaf, probe any) (mapping, bool) {
	m, ok := findManifest(rendered, t.ref)
	if !ok || len(rendered) != len(w.before) {
		return mapping{}, false
	}
	got, ok := get(m.Object.Object, p)
	if !ok {
		return mapping{}, false
	}
	gt, pt := report.ValueText(got), report.ValueText(probe)
	mp := mapping{leaf: l}
	if gt != pt {
		old, _ := get(t.before(), p)
		ot, lt := report.ValueText(old), report.ValueText(l.value)
		matched := false
		for i := strings.Index(ot, lt); i >= 0 && lt != ""; {
			pre, suf := ot[:i], ot[i+len(lt):]
			if gt == pre+pt+suf {
				mp.prefix, mp.suffix, matched = pre, suf, true
				break
			}
			next := strings.Index(ot[i+1:], lt)
			if next < 0 {
				break
			}
			i += next + 1
		}
		if !matched {
			return mapping{}, false
		}
	}
	// Putting Git's value back must give Git's rendering, everywhere.
	restored := deepCopy(m.Object.Object)
	if old, had := get(t.before(), p); had {
		restored, _ = set(restored, p, deepCopy(old))
	} else {
		del(restored, p)
	}
	if !equalJSON(prune(restored), prune(deepCopy(t.before()))) {
		return mapping{}, false
	}
	for _, b := range w.before {
		ref := ObjectRef{APIVersion: b.Object.GetAPIVersion(), Kind: b.Object.GetKind(), Namespace: b.Object.GetNamespace(), Name: b.Object.GetName()}
		if sameObject(ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, t.ref) {
			continue
		}
		a, ok := findManifest(rendered, ref)
		if !ok || !equalJSON(prune(deepCopy(a.Object.Object)), prune(deepCopy(b.Object.Object))) {
			return mapping{}, false
		}
	}
	return mp, true
}

// value is the leaf's new value for the field's live value: the live value
// itself when the leaf renders the whole field, else the part of the live
// text between the prefix and the suffix (false when it lacks them); in
// the leaf's type (see asLeaf).
func (m mapping) value(live any) (any, bool) {
	if m.prefix == "" && m.suffix == "" {
		return asLeaf(live, m.leaf.value), true
	}
	text, ok := live.(string)
	if !ok || !strings.HasPrefix(text, m.prefix) || !strings.HasSuffix(text, m.suffix) || len(text) < len(m.prefix)+len(m.suffix) {
		return nil, false
	}
	return asLeaf(text[len(m.prefix):len(text)-len(m.suffix)], m.leaf.value), true
}

// asLeaf is v in the type of the chart value it replaces, when v is a
// scalar that converts to it and prints the same: a template prints both
// alike, and the values file keeps its author's types (a quoted "3" stays
// quoted, a tag 1.25 written as a number stays a number). Otherwise v as
// it is.
func asLeaf(v, leaf any) any {
	if !isScalar(v) {
		return v
	}
	text := report.ValueText(v)
	var conv any
	switch leaf.(type) {
	case string:
		conv = text
	case bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return v
		}
		conv = b
	case int64, int, float64:
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			conv = n
		} else if f, err := strconv.ParseFloat(text, 64); err == nil {
			conv = f
		} else {
			return v
		}
	default:
		return v
	}
	if report.ValueText(conv) != text {
		return v
	}
	return conv
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, bool, int, int64, float64:
		return true
	}
	return false
}
