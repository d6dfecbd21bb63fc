package backport

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// emitter writes new nodes the way this document is written.
func (d *doc) emitter() emitter { return emitter{step: d.step, compact: d.compact} }

// emitter writes nodes in block style, as a person would in this file.
type emitter struct {
	step    int
	compact bool
}

// entry writes "key: value" at indent, with every line indented.
func (e emitter) entry(k, v *yaml.Node, indent int) (string, error) {
	pad := strings.Repeat(" ", indent)
	key, err := scalarText(k)
	if err != nil {
		return "", err
	}
	switch {
	case v.Kind == yaml.ScalarNode:
		text, err := scalarText(v)
		if err != nil {
			return "", err
		}
		return pad + key + ": " + indentRest(text, pad) + comment(v) + "\n", nil
	case v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0:
		text, err := flowText(v)
		return pad + key + ": " + text + comment(v) + "\n", err
	case v.Kind == yaml.MappingNode:
		body, err := e.block(v, indent+e.step)
		return pad + key + ":\n" + body, err
	case v.Kind == yaml.SequenceNode:
		in := indent + e.step
		if e.compact {
			in = indent
		}
		body, err := e.block(v, in)
		return pad + key + ":\n" + body, err
	}
	return "", fmt.Errorf("cannot write a %v node", v.Kind)
}

// item writes "- value" at indent, with every line indented.
func (e emitter) item(v *yaml.Node, indent int) (string, error) {
	pad := strings.Repeat(" ", indent)
	switch {
	case v.Kind == yaml.ScalarNode:
		text, err := scalarText(v)
		return pad + "- " + indentRest(text, pad) + comment(v) + "\n", err
	case v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0:
		text, err := flowText(v)
		return pad + "- " + text + "\n", err
	}
	body, err := e.block(v, indent+2)
	if err != nil {
		return "", err
	}
	return pad + "- " + body[indent+2:], nil
}

func (e emitter) block(n *yaml.Node, indent int) (string, error) {
	var b strings.Builder
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			text, err := e.entry(n.Content[i], n.Content[i+1], indent)
			if err != nil {
				return "", err
			}
			b.WriteString(text)
		}
		return b.String(), nil
	}
	for _, c := range n.Content {
		text, err := e.item(c, indent)
		if err != nil {
			return "", err
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// indentRest indents the lines after the first (a block scalar's body).
func indentRest(text, pad string) string {
	return strings.ReplaceAll(text, "\n", "\n"+pad)
}

func comment(n *yaml.Node) string {
	if n.LineComment == "" {
		return ""
	}
	return " " + n.LineComment
}

// scalarText is a scalar as yaml.v3 writes it, in its style; a block
// scalar comes out over several lines, its body indented by two spaces.
func scalarText(n *yaml.Node) (string, error) {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	out, err := encodeNode(&c)
	return strings.TrimSuffix(out, "\n"), err
}

// flowText is a collection written on one line: {a: b}, [x, y].
func flowText(n *yaml.Node) (string, error) {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	c.Style |= yaml.FlowStyle
	out, err := encodeNode(&c)
	return strings.TrimSuffix(out, "\n"), err
}

func encodeNode(n *yaml.Node) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}
