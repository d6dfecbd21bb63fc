package backport

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// valuesFile is the values file being edited.
type valuesFile struct {
	path string
	doc  *doc
	// fresh is set when the file does not exist yet.
	fresh *yaml.Node
}

func valuesDoc(path string) (*valuesFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && strings.TrimSpace(stripComments(string(data))) == "") {
		return &valuesFile{path: path, fresh: &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}}, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := parseDoc(data)
	if err != nil {
		return nil, fmt.Errorf("values %s: %w", path, err)
	}
	if d.root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values %s: not a map", path)
	}
	return &valuesFile{path: path, doc: d}, nil
}

var commentLine = regexp.MustCompile(`(?m)^\s*#.*$`)

func stripComments(s string) string { return commentLine.ReplaceAllString(s, "") }

func (vf *valuesFile) root() **yaml.Node {
	if vf.fresh != nil {
		return &vf.fresh
	}
	return &vf.doc.root
}

// setValue writes v at l's path. Where the file lacks a list on the way,
// the whole list is written, from the merged values.
func setValue(vf *valuesFile, merged map[string]any, l leaf, v any) error {
	root := vf.root()
	for i, e := range l.path {
		if !e.IsIndex {
			continue
		}
		nodeHas, err := nodeGet(*root, l.path[:i])
		if err != nil || !nodeHas {
			list, _ := get(merged, l.path[:i])
			whole, err := set(deepCopy(list), l.path[i:], v)
			if err != nil {
				return err
			}
			return setNode(root, l.path[:i], whole)
		}
	}
	return setNode(root, l.path, v)
}

// nodeGet reports whether the node has a value at p.
func nodeGet(n *yaml.Node, p Path) (bool, error) {
	v, err := nodeValue(n)
	if err != nil {
		return false, err
	}
	_, ok := get(v, p)
	return ok, nil
}

func (vf *valuesFile) bytes() ([]byte, error) {
	if vf.fresh != nil {
		var b strings.Builder
		b.WriteString("# Values written by driftscan backport.\n")
		text, err := emitter{step: 2}.block(vf.fresh, 0)
		if err != nil {
			return nil, err
		}
		b.WriteString(text)
		return []byte(b.String()), nil
	}
	return vf.doc.render()
}

// suggestionDoc starts (or extends) the suggested patch of an object, with
// a header that says why it exists and that it is not applied.
func suggestionDoc(path string, ref ObjectRef, jobs []job, reason string) (*doc, error) {
	if _, err := os.Stat(path); err == nil {
		return patchDoc(path, ref, ref.Name, reason)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Suggested by driftscan backport, NOT applied: live changes to %s/%s\n", ref.Kind, ref.Name)
	b.WriteString("# that no value of this chart renders one to one:\n")
	for _, j := range jobs {
		fmt.Fprintf(&b, "#   %s (%s by %s): %s\n", j.e.Path, strings.ToLower(string(j.e.Type)), managerOr(j.e.Manager), j.reason)
	}
	if reason != "" {
		fmt.Fprintf(&b, "# Reason: %s\n", oneLine(reason))
	}
	b.WriteString("# Change the chart so that it renders these fields, or apply this\n")
	b.WriteString("# strategic-merge patch after rendering (a kustomize post-renderer).\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", ref.APIVersion, ref.Kind, ref.Name)
	return parseDoc([]byte(b.String()))
}
