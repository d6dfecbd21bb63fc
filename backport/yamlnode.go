package backport

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/calricon/driftscan/render"
	"gopkg.in/yaml.v3"
)

// setNode puts val at the resolved path p under *slot, building the maps and
// list items that are missing. A scalar that is replaced by a scalar keeps
// its node (and so its quoting style and comments); anything else gets a
// new node.
func setNode(slot **yaml.Node, p Path, val any) error {
	n := *slot
	if len(p) == 0 {
		replaceNode(slot, val)
		return nil
	}
	e := p[0]
	if isNull(n) {
		// `key:` or `key: null` becomes the collection the path needs.
		n.Kind, n.Value, n.Style = yaml.MappingNode, "", 0
		n.Tag = "!!map"
		if !isField(e) {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
	}
	if isField(e) {
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: not a map in the file", e)
		}
		if i := mapIndex(n, e.Field); i >= 0 {
			return setNode(&n.Content[i+1], p[1:], val)
		}
		child, err := buildNode(p[1:], val)
		if err != nil {
			return err
		}
		n.Content = append(n.Content, stringNode(e.Field), child)
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s: not a list in the file", e)
	}
	if i := nodeItem(n, e); i >= 0 {
		return setNode(&n.Content[i], p[1:], val)
	}
	if e.IsIndex && e.Index != len(n.Content) {
		return fmt.Errorf("%s: the list in the file has %d items", e, len(n.Content))
	}
	item, err := newItemNode(e, p[1:], val)
	if err != nil {
		return err
	}
	n.Content = append(n.Content, item)
	return nil
}

// deleteNode removes the value at the resolved path p under n. A map or
// list that the removal leaves empty is removed too, up to n.
func deleteNode(n *yaml.Node, p Path) error {
	if len(p) == 0 {
		return fmt.Errorf("cannot remove the whole object")
	}
	e := p[0]
	var i int
	switch {
	case isField(e) && n.Kind == yaml.MappingNode:
		if i = mapIndex(n, e.Field); i < 0 {
			return fmt.Errorf("%s: not in the file", e)
		}
		if len(p) == 1 {
			n.Content = slices.Delete(n.Content, i, i+2)
			return nil
		}
		child := n.Content[i+1]
		if err := deleteNode(child, p[1:]); err != nil {
			return err
		}
		if emptyCollection(child) {
			n.Content = slices.Delete(n.Content, i, i+2)
		}
		return nil
	case !isField(e) && n.Kind == yaml.SequenceNode:
		if i = nodeItem(n, e); i < 0 {
			return fmt.Errorf("%s: not in the file", e)
		}
		if len(p) == 1 {
			n.Content = slices.Delete(n.Content, i, i+1)
			return nil
		}
		child := n.Content[i]
		if err := deleteNode(child, p[1:]); err != nil {
			return err
		}
		if emptyCollection(child) {
			n.Content = slices.Delete(n.Content, i, i+1)
		}
		return nil
	}
	return fmt.Errorf("%s: not in the file", e)
}

func emptyCollection(n *yaml.Node) bool {
	return (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && len(n.Content) == 0
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// mapIndex is the index in n.Content of the key named key, or -1.
func mapIndex(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// nodeItem is the index of the item of the sequence n that e selects, or -1.
func nodeItem(n *yaml.Node, e Element) int {
	for i, item := range n.Content {
		v, err := nodeValue(item)
		if err == nil && matches(v, i, e) {
			return i
		}
	}
	return -1
}

// nodeValue decodes a node into JSON types, as the scanner's renderer does.
func nodeValue(n *yaml.Node) (any, error) { return render.YAMLNodeValue(n) }

// replaceNode puts val in *slot.
func replaceNode(slot **yaml.Node, val any) {
	n, nv := *slot, valueNode(val, nil)
	if n.Kind != yaml.ScalarNode || nv.Kind != yaml.ScalarNode {
		if n.Style&yaml.FlowStyle != 0 && nv.Kind != yaml.ScalarNode {
			nv.Style |= yaml.FlowStyle
		}
		*slot = nv
		return
	}
	style := nv.Style
	switch {
	case nv.Tag == "!!str" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 && !strings.Contains(nv.Value, "\n"):
		style = n.Style &^ yaml.TaggedStyle
	case nv.Tag == "!!str" && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && strings.Contains(nv.Value, "\n"):
		style = n.Style &^ yaml.TaggedStyle
	}
	n.Value, n.Tag, n.Style = nv.Value, nv.Tag, style
}

// buildNode builds the nodes for a path that the file does not have yet.
func buildNode(p Path, val any) (*yaml.Node, error) {
	if len(p) == 0 {
		return valueNode(val, nil), nil
	}
	e := p[0]
	if isField(e) {
		child, err := buildNode(p[1:], val)
		if err != nil {
			return nil, err
		}
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{stringNode(e.Field), child}}, nil
	}
	if e.IsIndex && e.Index != 0 {
		return nil, fmt.Errorf("%s: the file has no such list", e)
	}
	item, err := newItemNode(e, p[1:], val)
	if err != nil {
		return nil, err
	}
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{item}}, nil
}

// newItemNode builds the list item that e selects, with val at rest inside.
// A keyed item lists its key fields first.
func newItemNode(e Element, rest Path, val any) (*yaml.Node, error) {
	switch {
	case e.HasValue:
		if len(rest) > 0 {
			return nil, fmt.Errorf("%s: a set item has no fields", e)
		}
		return valueNode(e.Value, nil), nil
	case e.IsIndex:
		return buildNode(rest, val)
	}
	var keys []string
	item := map[string]any{}
	for _, k := range e.Key {
		keys = append(keys, k.Name)
		item[k.Name] = k.Value
	}
	if len(rest) == 0 {
		m, ok := val.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: the item is not a map", e)
		}
		for k, v := range m {
			item[k] = v
		}
		return valueNode(item, keys), nil
	}
	n := valueNode(item, keys)
	if err := setNode(&n, rest, val); err != nil {
		return nil, err
	}
	return n, nil
}

// valueNode builds the node of a JSON-typed value: maps in block style
// with the first keys first and the rest sorted (name first among them),
// empty maps and lists as {} and []. A *yaml.Node is used as it is.
func valueNode(v any, first []string) *yaml.Node {
	switch t := v.(type) {
	case *yaml.Node:
		return t
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if len(t) == 0 {
			n.Style = yaml.FlowStyle
		}
		var rest []string
		for k := range t {
			if !slices.Contains(first, k) {
				rest = append(rest, k)
			}
		}
		slices.SortFunc(rest, func(a, b string) int {
			switch {
			case a == b:
				return 0
			case a == "name":
				return -1
			case b == "name":
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, k := range append(slices.Clone(first), rest...) {
			if c, ok := t[k]; ok {
				n.Content = append(n.Content, stringNode(k), valueNode(c, nil))
			}
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if len(t) == 0 {
			n.Style = yaml.FlowStyle
		}
		for _, c := range t {
			n.Content = append(n.Content, valueNode(c, nil))
		}
		return n
	case string:
		return stringNode(t)
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(t, 10)}
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(t)}
	case float64:
		s := strconv.FormatFloat(t, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}
	}
	return stringNode(fmt.Sprint(v))
}

// yaml11Special matches strings that YAML 1.1 readers (sigs.k8s.io/yaml,
// and so kubectl and Argo CD) take for something other than a string when
// unquoted, even where YAML 1.2 does not: yes/no/on/off, sexagesimal and
// octal numbers.
var yaml11Special = regexp.MustCompile(`^(?i:y|n|yes|no|on|off|true|false|null|~)$|^[-+]?[0-9][0-9_:.eExXoObB+-]*$|^\.(?i:inf|nan)$`)

// stringNode is the node of a string, quoted when a YAML 1.1 reader would
// take it for something else, literal when it has several lines.
func stringNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(strings.TrimRight(s, "\n"), "\n"):
		n.Style = yaml.LiteralStyle
	case yaml11Special.MatchString(s):
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}
