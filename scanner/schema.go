package scanner

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// typer types objects with the server's own OpenAPI v3 schema, so list types
// and merge keys (containers by name, ports by port and protocol) are the
// server's. It fetches the schema of each group/version once.
type typer struct {
	openapi openapi.Client
	schemas map[string]*spec.Schema
	failed  map[schema.GroupVersion]error
	// unpublished are group/versions the server has no schema for.
	unpublished map[schema.GroupVersion]bool
	loaded      map[schema.GroupVersion]bool
	conv        managedfields.TypeConverter
	deduced     managedfields.TypeConverter
	// kinds indexes schemas by kind, for their published defaults.
	kinds kindSchemas

	// What has been read of the server's OpenAPI v3 documents, or is
	// being read (prefetch): the index once, each group/version once.
	fetchMu   sync.Mutex
	fetches   map[schema.GroupVersion]*schemaFetch
	pathsOnce sync.Once
	paths     map[string]openapi.GroupVersion
	pathsErr  error
	// cache keeps the schemas read for the next scan (nil: none); set
	// before the first fetch.
	cache *schemaCache
}

// schemaFetch is the reading of one group/version's component schemas;
// done is closed when schemas and err are set.
type schemaFetch struct {
	done    chan struct{}
	schemas map[string]*spec.Schema
	err     error
}

func newTyper(client openapi.Client) *typer {
	return &typer{
		openapi:     client,
		schemas:     map[string]*spec.Schema{},
		failed:      map[schema.GroupVersion]error{},
		unpublished: map[schema.GroupVersion]bool{},
		loaded:      map[schema.GroupVersion]bool{},
		deduced:     managedfields.NewDeducedTypeConverter(),
		fetches:     map[schema.GroupVersion]*schemaFetch{},
	}
}

// prefetch starts reading the schemas of gv in the background, unless they
// are read or being read already: the scan asks for each group/version as
// soon as an app that declares it is rendered, so the documents are read
// while the other apps render, and still before anything is listed.
func (t *typer) prefetch(gv schema.GroupVersion) { t.fetchOf(gv, true) }

// fetch returns the component schemas of gv, reading them unless a prefetch
// has or is.
func (t *typer) fetch(gv schema.GroupVersion) (map[string]*spec.Schema, error) {
	f := t.fetchOf(gv, false)
	<-f.done
	return f.schemas, f.err
}

func (t *typer) fetchOf(gv schema.GroupVersion, background bool) *schemaFetch {
	t.fetchMu.Lock()
	f, ok := t.fetches[gv]
	if !ok {
		f = &schemaFetch{done: make(chan struct{})}
		t.fetches[gv] = f
	}
	t.fetchMu.Unlock()
	if !ok {
		read := func() {
			defer close(f.done)
			f.schemas, f.err = componentSchemas(t.openapiPaths, gv, t.cache)
		}
		if background {
			go read()
		} else {
			read()
		}
	}
	return f
}

// openapiPaths is the server's OpenAPI v3 index, read once.
func (t *typer) openapiPaths() (map[string]openapi.GroupVersion, error) {
	t.pathsOnce.Do(func() { t.paths, t.pathsErr = t.openapi.Paths() })
	return t.paths, t.pathsErr
}

// load fetches the schemas of the group/versions not loaded yet (one request
// each) and rebuilds the converter. A group/version the server publishes no
// schema for is remembered as unpublished: its objects are typed by
// deduction (toTyped). One whose schema the server has but could not be read
// is remembered as failed: its objects are errors, not guesses.
func (t *typer) load(gvs []schema.GroupVersion) error {
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	changed := false
	for _, gv := range gvs {
		if t.loaded[gv] || t.unpublished[gv] {
			continue
		}
		schemas, err := t.fetch(gv)
		switch {
		case errors.Is(err, errUnpublished):
			// The server publishes no schema for it (yet): type by deduction.
			t.unpublished[gv] = true
			continue
		case err != nil:
			t.failed[gv] = fmt.Errorf("read the OpenAPI v3 schema of %s: %w", gv, err)
			continue
		}
		for name, s := range schemas {
			t.schemas[name] = s
		}
		t.loaded[gv] = true
		changed = true
	}
	if !changed && t.conv != nil {
		return nil
	}
	conv, err := managedfields.NewTypeConverter(t.schemas, false)
	if err != nil {
		return fmt.Errorf("build type converter: %w", err)
	}
	t.conv = conv
	t.kinds = kindSchemas{}
	return nil
}

// errUnpublished: the server publishes no OpenAPI v3 document for a
// group/version.
var errUnpublished = errors.New("no OpenAPI v3 schema published")

// componentSchemas reads the OpenAPI v3 document of gv (one request; index
// is the server's index of them) and
// returns its component schemas, as openapi3.Root's GVSpec would. Only the
// components are decoded: the document's paths, most of its size, are
// skipped over, so loading the core group's schema does not build (and
// leave to the collector) every operation of every core resource. The
// schemas of a document whose address names its hash are taken from cache
// when it has them, and kept there.
func componentSchemas(index func() (map[string]openapi.GroupVersion, error), gv schema.GroupVersion, cache *schemaCache) (map[string]*spec.Schema, error) {
	paths, err := index()
	if err != nil {
		return nil, err
	}
	p, ok := paths[openapiPath(gv)]
	if !ok {
		return nil, errUnpublished
	}
	url := p.ServerRelativeURL()
	if !strings.Contains(url, "hash=") {
		cache = nil
	}
	if raw, ok := cache.get(url); ok {
		var schemas map[string]*spec.Schema
		if err := json.Unmarshal(raw, &schemas); err == nil && schemas != nil {
			cache.keep(url, raw)
			return schemas, nil
		}
	}
	data, err := p.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Components struct {
			Schemas json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Components.Schemas) == 0 {
		return nil, nil
	}
	var schemas map[string]*spec.Schema
	if err := json.Unmarshal(doc.Components.Schemas, &schemas); err != nil {
		return nil, err
	}
	if schemas != nil {
		cache.keep(url, doc.Components.Schemas)
	}
	return schemas, nil
}

// toTyped types obj with the server schema, or by deduction when the server
// publishes none for its group/version (lists are then compared as atomic
// values). A schema that could not be read is an error: comparing by
// deduction then would report false drift.
func (t *typer) toTyped(obj map[string]any, gv schema.GroupVersion) (*typed.TypedValue, error) {
	if err := t.failed[gv]; err != nil {
		return nil, err
	}
	u := unstructuredOf(obj)
	if t.conv != nil && t.loaded[gv] {
		tv, err := t.conv.ObjectToTyped(u, typed.AllowDuplicates)
		if err == nil {
			return tv, nil
		}
		return nil, fmt.Errorf("type %s: %w", u.GetObjectKind().GroupVersionKind().Kind, err)
	}
	return t.deduced.ObjectToTyped(u, typed.AllowDuplicates)
}

// liveTyped types a live object with the type Git's object was typed with
// (toTyped), without walking it to validate it against the schema first:
// a built-in kind is what the API server encoded from its own Go type,
// which is what its published schema describes, so the walk could only
// agree (at 5,000 objects it was a quarter of the typing and compare).
// A custom resource is validated as Git's side is: it is stored as it was
// sent, and its CRD's schema may have changed since.
func (t *typer) liveTyped(obj map[string]any, gvk schema.GroupVersionKind, like *typed.TypedValue) (*typed.TypedValue, error) {
	if !scheme.Scheme.Recognizes(gvk) {
		return t.toTyped(obj, gvk.GroupVersion())
	}
	//lint:ignore SA1019 deprecated because validation became cheap; it is not (see above), and this value needs none.
	return typed.AsTypedUnvalidated(value.NewValueInterface(obj), like.Schema(), like.TypeRef()), nil
}

// nodeKind says what the last element of a path is, by the schema.
type nodeKind struct {
	// NewKey: a keyed or set list item, or a key of a map (not a field of a
	// struct).
	NewKey bool
	// Collection: the node itself is a map of keys or a non-atomic list, so
	// what was added is its items rather than the node.
	Collection bool
	// TypeName is the named type of the node, for example
	// io.k8s.apimachinery.pkg.api.resource.Quantity; "" when unnamed.
	TypeName string
}

// kindAt walks the schema of tv along path.
func kindAt(tv *typed.TypedValue, path fieldpath.Path) nodeKind {
	c := cursorAt(tv)
	for _, pe := range path {
		c = c.step(pe)
	}
	return c.kind()
}

// kindCursor is kindAt's walk one path element at a time, so that a walk
// of a set's tree resolves each node's type from its parent's.
type kindCursor struct {
	s  *smdschema.Schema
	tr smdschema.TypeRef
	k  nodeKind
	// done: the path left the schema; k is the kind of every path below.
	done bool
}

// cursorAt is the cursor at the root of tv.
func cursorAt(tv *typed.TypedValue) kindCursor {
	return kindCursor{s: tv.Schema(), tr: tv.TypeRef()}
}

// step is the cursor at the child pe.
func (c kindCursor) step(pe fieldpath.PathElement) kindCursor {
	if c.done {
		return c
	}
	atom, ok := c.s.Resolve(c.tr)
	if !ok {
		return kindCursor{k: nodeKind{NewKey: pe.FieldName == nil}, done: true}
	}
	switch {
	case pe.FieldName != nil:
		if atom.Map == nil {
			return kindCursor{done: true}
		}
		if sf, ok := atom.Map.FindField(*pe.FieldName); ok {
			c.tr, c.k.NewKey = sf.Type, false
		} else {
			c.tr, c.k.NewKey = atom.Map.ElementType, true
		}
	default:
		if atom.List == nil {
			return kindCursor{k: nodeKind{NewKey: true}, done: true}
		}
		c.tr = atom.List.ElementType
		// An item of an atomic list is not a key of its own.
		c.k.NewKey = atom.List.ElementRelationship != smdschema.Atomic
	}
	return c
}

// kind is what the node at the cursor is.
func (c kindCursor) kind() nodeKind {
	k := c.k
	if c.done {
		return k
	}
	if c.tr.NamedType != nil {
		k.TypeName = *c.tr.NamedType
	}
	if atom, ok := c.s.Resolve(c.tr); ok {
		switch {
		case atom.List != nil:
			k.Collection = atom.List.ElementRelationship != smdschema.Atomic
		case atom.Map != nil:
			k.Collection = len(atom.Map.Fields) == 0 && atom.Map.ElementRelationship != smdschema.Atomic
		}
	}
	return k
}

// schemaID names the server's schema of gv as the scan types with it: the
// address of its OpenAPI v3 document, which carries the document's hash,
// or "deduced" when the server publishes none. "" when it was not read.
func (t *typer) schemaID(gv schema.GroupVersion) string {
	if t.failed[gv] != nil {
		return ""
	}
	if t.unpublished[gv] {
		return "deduced"
	}
	if !t.loaded[gv] {
		return ""
	}
	paths, err := t.openapiPaths()
	if err != nil {
		return ""
	}
	p, ok := paths[openapiPath(gv)]
	if !ok {
		return ""
	}
	// An API server that names no hash in the address (before 1.27) gives
	// nothing to tell a changed schema by: nothing is cached for it.
	url := p.ServerRelativeURL()
	if !strings.Contains(url, "hash=") {
		return ""
	}
	return url
}

// openapiPath is gv's key in the server's OpenAPI v3 index.
func openapiPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}
