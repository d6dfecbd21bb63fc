package backport

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/calricon/driftscan/render"
	"gopkg.in/yaml.v3"
)

// This file writes an edited YAML document back as text that differs from
// the original only where the edit is: a changed scalar is replaced where
// it stands, new map keys and list items are inserted after the last line
// of their map or list in the file's own indentation, removed ones are cut
// with the comment lines right above them, and a flow collection ({a: b})
// that changed is rewritten on its line. Every other byte of the file stays
// as it was: comments, blank lines, key order, quoting, list indentation.
// Only when a change does not fit one of these shapes is the whole document
// re-encoded with gopkg.in/yaml.v3, which keeps comments and key order but
// drops blank lines and normalizes indentation.

// snapshot is a node as parsed, before any edit.
type snapshot struct {
	kind       yaml.Kind
	style      yaml.Style
	tag, value string
	content    []*yaml.Node
}

func takeSnapshots(n *yaml.Node, into map[*yaml.Node]snapshot) {
	into[n] = snapshot{kind: n.Kind, style: n.Style, tag: n.Tag, value: n.Value, content: slices.Clone(n.Content)}
	for _, c := range n.Content {
		takeSnapshots(c, into)
	}
}

// doc is one YAML document of a file, parsed for editing.
type doc struct {
	text []byte
	// root is the document's content node (under the DocumentNode).
	root     *yaml.Node
	document *yaml.Node
	snap     map[*yaml.Node]snapshot
	lines    []int // byte offset where each line starts; lines[0] is line 1
	step     int   // indentation of nested maps
	compact  bool  // lists under a key start at the key's column
}

func parseDoc(text []byte) (*doc, error) {
	var document yaml.Node
	if err := yaml.Unmarshal(text, &document); err != nil {
		return nil, err
	}
	if document.Kind != yaml.DocumentNode || len(document.Content) == 0 {
		return nil, errors.New("empty document")
	}
	d := &doc{text: text, document: &document, root: document.Content[0], snap: map[*yaml.Node]snapshot{}, step: 2}
	takeSnapshots(d.root, d.snap)
	d.lines = []int{0}
	for i, b := range text {
		if b == '\n' && i+1 < len(text) {
			d.lines = append(d.lines, i+1)
		}
	}
	d.detectStyle(d.root)
	return d, nil
}

// detectStyle reads the indentation of nested maps and lists under keys.
func (d *doc) detectStyle(n *yaml.Node) {
	var stepSeen, seqSeen bool
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				switch {
				case v.Style&yaml.FlowStyle != 0:
				case v.Kind == yaml.MappingNode && len(v.Content) > 0 && !stepSeen && v.Line > k.Line:
					if s := v.Column - k.Column; s > 0 {
						d.step, stepSeen = s, true
					}
				case v.Kind == yaml.SequenceNode && !seqSeen && v.Line > k.Line:
					d.compact, seqSeen = v.Column == k.Column, true
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
}

// render returns the document's text after the edits made to its nodes.
func (d *doc) render() ([]byte, error) {
	want, err := nodeValue(d.root)
	if err != nil {
		return nil, err
	}
	if out, err := d.surgical(); err == nil {
		if got, err := valueOfText(out); err == nil && reflect.DeepEqual(got, want) {
			return out, nil
		}
	}
	out, err := d.reencode()
	if err != nil {
		return nil, err
	}
	got, err := valueOfText(out)
	if err != nil || !reflect.DeepEqual(got, want) {
		return nil, fmt.Errorf("the edited document does not read back as edited: %v", err)
	}
	return out, nil
}

func valueOfText(text []byte) (any, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(text, &n); err != nil {
		return nil, err
	}
	if len(n.Content) == 0 {
		return nil, nil
	}
	return nodeValue(n.Content[0])
}

// reencode writes the whole document with yaml.v3, which writes the
// comments before the content itself, after the "---" marker the document
// started with.
func (d *doc) reencode() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(d.step)
	if err := enc.Encode(d.document); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	var head []byte
	if render.IsYAMLDocumentMarker(bytes.TrimRight(d.text[:d.lineEnd(1)], "\r\n")) {
		head = slices.Clone(d.text[:d.lineEnd(1)])
	}
	return d.newlines(append(head, b.Bytes()...)), nil
}

// textEdit replaces text[start:end] with text.
type textEdit struct {
	start, end int
	text       string
}

// errRegion says that a node's change cannot be written in place: the
// caller rewrites the whole map entry or list item that holds it.
var errRegion = errors.New("rewrite the region")

func (d *doc) surgical() ([]byte, error) {
	var edits []textEdit
	if err := d.node(d.root, len(d.text), &edits); err != nil {
		return nil, err
	}
	slices.SortStableFunc(edits, func(a, b textEdit) int { return a.start - b.start })
	var out []byte
	pos := 0
	for _, e := range edits {
		if e.start < pos {
			return nil, errors.New("overlapping edits")
		}
		out = append(out, d.text[pos:e.start]...)
		out = append(out, d.newlines([]byte(e.text))...)
		pos = e.end
	}
	return append(out, d.text[pos:]...), nil
}

// newlines turns \n into \r\n in files that use \r\n.
func (d *doc) newlines(b []byte) []byte {
	if !bytes.Contains(d.text, []byte("\r\n")) {
		return b
	}
	return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

// dirty reports whether n or anything under it changed.
func (d *doc) dirty(n *yaml.Node) bool {
	s, ok := d.snap[n]
	if !ok || s.kind != n.Kind || s.style != n.Style || s.tag != n.Tag || s.value != n.Value || !slices.Equal(s.content, n.Content) {
		return true
	}
	for _, c := range n.Content {
		if d.dirty(c) {
			return true
		}
	}
	return false
}

// node writes the edits of n, whose region in the text ends at end.
func (d *doc) node(n *yaml.Node, end int, edits *[]textEdit) error {
	s, ok := d.snap[n]
	if !ok || s.kind != n.Kind || (s.style&yaml.FlowStyle) != (n.Style&yaml.FlowStyle) {
		return errRegion
	}
	if !d.dirty(n) {
		return nil
	}
	switch {
	case n.Kind == yaml.ScalarNode:
		start := d.offset(n.Line, n.Column)
		stop, ok := d.scalarEnd(start, s)
		if !ok {
			return errRegion
		}
		text, err := scalarText(n)
		if err != nil || strings.Contains(text, "\n") {
			return errRegion
		}
		stop, text = d.keepCommentColumn(start, stop, text)
		*edits = append(*edits, textEdit{start, stop, text})
		return nil
	case n.Style&yaml.FlowStyle != 0:
		start := d.offset(n.Line, n.Column)
		stop, ok := d.flowEnd(start)
		if !ok {
			return errRegion
		}
		text, err := flowText(n)
		if err != nil {
			return err
		}
		stop, text = d.keepCommentColumn(start, stop, text)
		*edits = append(*edits, textEdit{start, stop, text})
		return nil
	case n.Kind == yaml.MappingNode:
		return d.mapping(n, s, end, edits)
	case n.Kind == yaml.SequenceNode:
		return d.sequence(n, s, end, edits)
	}
	return errRegion
}

// mapping writes the edits of a block map: removed keys cut, changed values
// recursed into (or their entry rewritten), new keys inserted at its end.
func (d *doc) mapping(n *yaml.Node, s snapshot, end int, edits *[]textEdit) error {
	if len(s.content) == 0 {
		return errRegion
	}
	cur := map[*yaml.Node]*yaml.Node{}
	var kept, added []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if _, orig := d.snap[k]; !orig {
			added = append(added, k, n.Content[i+1])
			continue
		}
		if len(added) > 0 {
			return errRegion // an original key after a new one
		}
		cur[k] = n.Content[i+1]
		kept = append(kept, k)
	}
	var origKeys []*yaml.Node
	for i := 0; i+1 < len(s.content); i += 2 {
		origKeys = append(origKeys, s.content[i])
	}
	if !isSubsequence(kept, origKeys) {
		return errRegion
	}
	col := s.content[0].Column
	indent := col - 1
	last := -1
	for i := 0; i+1 < len(s.content); i += 2 {
		k, v := s.content[i], s.content[i+1]
		start := d.offset(k.Line, k.Column)
		next := end
		if i+2 < len(s.content) {
			next = d.lineStart(s.content[i+2].Line)
		}
		stop := d.regionEnd(k.Line, next, col)
		last = stop
		cv, present := cur[k]
		if !present {
			if !d.lineStartsAt(start) {
				return errRegion
			}
			*edits = append(*edits, textEdit{d.commentsAbove(k.Line, col), stop, ""})
			continue
		}
		if cv == v {
			err := d.node(v, stop, edits)
			if err == nil {
				continue
			}
			if !errors.Is(err, errRegion) {
				return err
			}
		}
		text, err := d.emitter().entry(k, cv, indent)
		if err != nil {
			return err
		}
		*edits = append(*edits, textEdit{start, stop, strings.TrimPrefix(text, strings.Repeat(" ", indent))})
	}
	if len(added) > 0 {
		var b strings.Builder
		for i := 0; i+1 < len(added); i += 2 {
			text, err := d.emitter().entry(added[i], added[i+1], indent)
			if err != nil {
				return err
			}
			b.WriteString(text)
		}
		*edits = append(*edits, d.insertion(last, b.String()))
	}
	return nil
}

// sequence writes the edits of a block list: removed items cut, changed
// ones recursed into (or rewritten), new items appended.
func (d *doc) sequence(n *yaml.Node, s snapshot, end int, edits *[]textEdit) error {
	if len(s.content) == 0 {
		return errRegion
	}
	present := map[*yaml.Node]bool{}
	var kept, added []*yaml.Node
	for _, c := range n.Content {
		if _, orig := d.snap[c]; orig {
			if len(added) > 0 {
				return errRegion
			}
			present[c] = true
			kept = append(kept, c)
			continue
		}
		added = append(added, c)
	}
	if !isSubsequence(kept, s.content) {
		return errRegion
	}
	dashes := make([]int, len(s.content))
	for i, item := range s.content {
		off, ok := d.dash(item)
		if !ok {
			return errRegion
		}
		dashes[i] = off
	}
	dashCol := d.column(dashes[0])
	indent := dashCol - 1
	last := -1
	for i, item := range s.content {
		next := end
		if i+1 < len(s.content) {
			next = d.lineStart(d.lineOf(dashes[i+1]))
		}
		line := d.lineOf(dashes[i])
		stop := d.regionEnd(line, next, dashCol)
		last = stop
		if !present[item] {
			if !d.lineStartsAt(dashes[i]) {
				return errRegion
			}
			*edits = append(*edits, textEdit{d.commentsAbove(line, dashCol), stop, ""})
			continue
		}
		err := d.node(item, stop, edits)
		if err == nil {
			continue
		}
		if !errors.Is(err, errRegion) {
			return err
		}
		text, err := d.emitter().item(item, indent)
		if err != nil {
			return err
		}
		*edits = append(*edits, textEdit{dashes[i], stop, strings.TrimPrefix(text, strings.Repeat(" ", indent))})
	}
	if len(added) > 0 {
		var b strings.Builder
		for _, item := range added {
			text, err := d.emitter().item(item, indent)
			if err != nil {
				return err
			}
			b.WriteString(text)
		}
		*edits = append(*edits, d.insertion(last, b.String()))
	}
	return nil
}

func isSubsequence(sub, of []*yaml.Node) bool {
	j := 0
	for _, n := range of {
		if j < len(sub) && sub[j] == n {
			j++
		}
	}
	return j == len(sub)
}

// insertion inserts text at off, the end of a region.
func (d *doc) insertion(off int, text string) textEdit {
	if off > 0 && d.text[off-1] != '\n' {
		text = "\n" + text
	}
	return textEdit{off, off, text}
}
