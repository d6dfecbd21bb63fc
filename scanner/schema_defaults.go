package scanner

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The server publishes, in its OpenAPI schema, the default of a field
// where the type declares one: a few built-in fields (a container port's
// protocol: TCP) and every default of a CRD's structural schema. Where one
// is published, a key live has inside an atomic value and Git does not is a
// default only if it holds that value; anything else was written by
// someone, or was left over from what Git declared before.

// oaNode is a place in a kind's OpenAPI schema; the zero value is a place
// the schema does not describe, where nothing is known.
type oaNode struct {
	t *typer
	s *spec.Schema
}

// schemaAt returns the schema of gvk at path, or the zero oaNode.
func (t *typer) schemaAt(gvk schema.GroupVersionKind, path fieldpath.Path) oaNode {
	n := oaNode{t: t, s: t.kindSchema(gvk)}
	for _, pe := range path {
		if pe.FieldName != nil {
			n = n.field(*pe.FieldName)
		} else {
			n = n.items()
		}
	}
	return n
}

// kindSchemas indexes the loaded schemas by the kind they describe.
type kindSchemas struct {
	once   sync.Once
	byKind map[schema.GroupVersionKind]*spec.Schema
}

func (t *typer) kindSchema(gvk schema.GroupVersionKind) *spec.Schema {
	t.kinds.once.Do(func() {
		t.kinds.byKind = map[schema.GroupVersionKind]*spec.Schema{}
		for _, s := range t.schemas {
			list, _ := s.Extensions["x-kubernetes-group-version-kind"].([]any)
			for _, item := range list {
				m, _ := item.(map[string]any)
				g, _ := m["group"].(string)
				v, _ := m["version"].(string)
				k, _ := m["kind"].(string)
				t.kinds.byKind[schema.GroupVersionKind{Group: g, Version: v, Kind: k}] = s
			}
		}
	})
	return t.kinds.byKind[gvk]
}

// resolve follows $ref and a single allOf, as the server writes them.
func (n oaNode) resolve() oaNode {
	for i := 0; n.s != nil && i < 8; i++ {
		switch {
		case n.s.Ref.String() != "":
			name := strings.TrimPrefix(n.s.Ref.String(), "#/components/schemas/")
			n.s = n.t.schemas[name]
		case len(n.s.AllOf) == 1 && len(n.s.Properties) == 0:
			d := n.s.Default
			n.s = &n.s.AllOf[0]
			if d != nil {
				// The default sits next to the allOf that names the type.
				c := *n.s
				c.Default = d
				n.s = &c
			}
		default:
			return n
		}
	}
	return n
}

func (n oaNode) field(name string) oaNode {
	if n.s == nil {
		return n
	}
	// The default of a field is written on the property itself, so keep it
	// while resolving the property's type.
	r := n.resolve()
	if r.s == nil {
		return r
	}
	if p, ok := r.s.Properties[name]; ok {
		return oaNode{t: n.t, s: &p}
	}
	if ap := r.s.AdditionalProperties; ap != nil && ap.Schema != nil {
		return oaNode{t: n.t, s: ap.Schema}
	}
	return oaNode{t: n.t}
}

func (n oaNode) items() oaNode {
	r := n.resolve()
	if r.s == nil || r.s.Items == nil || r.s.Items.Schema == nil {
		return oaNode{t: n.t}
	}
	return oaNode{t: n.t, s: r.s.Items.Schema}
}

// published returns the default the schema publishes for this place, and
// whether it publishes one that means something: the server's published
// zero values ("", 0, false, {}) only say a field is required.
func (n oaNode) published() (any, bool) {
	if n.s == nil {
		return nil, false
	}
	d := n.s.Default
	if d == nil {
		d = n.resolve().s.Default
	}
	if d == nil || zeroValue(d) {
		return nil, false
	}
	return d, true
}

// defaultsHold reports whether every key of extra (what live has inside an
// atomic value beyond Git's, as within returns it) that Git does not
// declare either has no published default or holds it.
func defaultsHold(n oaNode, extra, git any) bool {
	if n.s == nil {
		return true
	}
	switch e := extra.(type) {
	case map[string]any:
		g, _ := git.(map[string]any)
		for k, v := range e {
			child := n.field(k)
			if gv, declared := g[k]; declared {
				if !defaultsHold(child, v, gv) {
					return false
				}
				continue
			}
			if d, ok := child.published(); ok && !equivalent(d, v, "") {
				return false
			}
		}
	case []any:
		g, _ := git.([]any)
		for i, v := range e {
			var gi any
			if i < len(g) {
				gi = g[i]
			}
			if !defaultsHold(n.items(), v, gi) {
				return false
			}
		}
	}
	return true
}
