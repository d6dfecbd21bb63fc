package scanner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	loadMu  sync.Mutex // held by load
	schemas map[string]*spec.Schema
	failed  map[schema.GroupVersion]error
	// unpublished are group/versions the server has no schema for.
	unpublished map[schema.GroupVersion]bool
	loaded      map[schema.GroupVersion]bool
	// loadedKinds are the kinds whose schemas (and all they refer to) are
	// in schemas; decodedFrom is the bytes each schema was decoded from.
	loadedKinds map[schema.GroupVersionKind]bool
	decodedFrom map[string][]byte
	conv        managedfields.TypeConverter
	deduced     managedfields.TypeConverter
	// kinds indexes schemas by kind, for their published defaults.
	kinds kindSchemas
	// roots are the kinds' types, for walkCompare.
	roots rootTypes

	// What has been read of the server's OpenAPI v3 documents, or is
	// being read (prefetch): the index once, each group/version once.
	fetchMu   sync.Mutex
	fetches   map[schema.GroupVersion]*schemaFetch
	pathsOnce sync.Once
	paths     map[string]openapi.GroupVersion
	pathsErr  error
	// cache waits for the cache of the schemas read for the next scan
	// (nil, or nil returned: none); set before the first fetch.
	cache func() *schemaCache
}

// schemaCache is the cache of the schemas read, nil for none.
func (t *typer) schemaCache() *schemaCache {
	if t.cache == nil {
		return nil
	}
	return t.cache()
}

// schemaFetch is the reading of one group/version's component schemas,
// by name, not decoded; done is closed when components and err are set.
type schemaFetch struct {
	done       chan struct{}
	components map[string]json.RawMessage
	err        error
}

func newTyper(client openapi.Client) *typer {
	return &typer{
		openapi:     client,
		schemas:     map[string]*spec.Schema{},
		failed:      map[schema.GroupVersion]error{},
		unpublished: map[schema.GroupVersion]bool{},
		loaded:      map[schema.GroupVersion]bool{},
		loadedKinds: map[schema.GroupVersionKind]bool{},
		decodedFrom: map[string][]byte{},
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
func (t *typer) fetch(gv schema.GroupVersion) (map[string]json.RawMessage, error) {
	f := t.fetchOf(gv, false)
	<-f.done
	return f.components, f.err
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
			f.components, f.err = componentSchemas(t.openapiPaths, gv, t.schemaCache())
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

// load reads the schemas of kinds not loaded yet (one request per
// group/version, unless the cache or a prefetch has it) and rebuilds the
// converter. Of a group/version's document only the schemas of the kinds
// asked for, and those they refer to, are decoded (neededSchemas): of the
// core group's 258 schemas, ConfigMap and Service need 17. A group/version
// the server publishes no schema for is remembered as unpublished: its
// objects are typed by deduction (toTyped). One whose schema the server
// has but could not be read is remembered as failed: its objects are
// errors, not guesses. Loads take turns (loadMu): a warm scan loads the
// kinds of its list plan while the apps render (scan.loadPlanned), and
// then those of Git's objects. Nothing else reads what load writes before
// the second load has returned.
func (t *typer) load(kinds []schema.GroupVersionKind) error {
	t.loadMu.Lock()
	defer t.loadMu.Unlock()
	byGV := map[schema.GroupVersion][]string{}
	for _, k := range kinds {
		if !t.loadedKinds[k] && !slices.Contains(byGV[k.GroupVersion()], k.Kind) {
			byGV[k.GroupVersion()] = append(byGV[k.GroupVersion()], k.Kind)
		}
	}
	gvs := make([]schema.GroupVersion, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	changed := false
	for _, gv := range gvs {
		if t.unpublished[gv] || t.failed[gv] != nil {
			continue
		}
		components, err := t.fetch(gv)
		switch {
		case errors.Is(err, errUnpublished):
			// The server publishes no schema for it (yet): type by deduction.
			t.unpublished[gv] = true
			continue
		case err != nil:
			t.failed[gv] = fmt.Errorf("read the OpenAPI v3 schema of %s: %w", gv, err)
			continue
		}
		for _, name := range neededSchemas(components, gv, byGV[gv]) {
			raw := components[name]
			if bytes.Equal(t.decodedFrom[name], raw) {
				continue // decoded from another group/version's document
			}
			// The schema's own decoder (kube-openapi's JSON v2) checks
			// the text as it reads; json.Unmarshal would check it first
			// in a pass of its own (3 of a warm 5k scan's 15 ms here).
			s := &spec.Schema{}
			if err := s.UnmarshalJSON(raw); err != nil {
				t.failed[gv] = fmt.Errorf("read the OpenAPI v3 schema of %s: %s: %w", gv, name, err)
				break
			}
			t.schemas[name], t.decodedFrom[name] = s, raw
		}
		if t.failed[gv] != nil {
			continue
		}
		for _, k := range byGV[gv] {
			t.loadedKinds[gv.WithKind(k)] = true
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
	t.roots = rootTypes{}
	return nil
}

// gvkExtension names the kinds a schema describes.
const gvkExtension = "x-kubernetes-group-version-kind"

// neededSchemas names the component schemas that type the kinds of gv: the
// schema of each kind (whose gvkExtension names it) and every schema those
// refer to, through any number of references. It names every component
// when it cannot tell by the text alone: a kind none of the schemas names,
// or a reference written other than as "#/components/schemas/NAME". A
// reference to a schema the document does not hold is left to the
// converter, as it always was.
func neededSchemas(components map[string]json.RawMessage, gv schema.GroupVersion, kinds []string) []string {
	all := func() []string {
		names := make([]string, 0, len(components))
		for name := range components {
			names = append(names, name)
		}
		slices.Sort(names)
		return names
	}
	var todo []string
	found := map[string]bool{}
	for name, raw := range components {
		if !bytes.Contains(raw, []byte(gvkExtension)) {
			continue
		}
		var ext struct {
			GVK []struct{ Group, Version, Kind string } `json:"x-kubernetes-group-version-kind"`
		}
		if json.Unmarshal(raw, &ext) != nil {
			continue
		}
		for _, g := range ext.GVK {
			if g.Group == gv.Group && g.Version == gv.Version && slices.Contains(kinds, g.Kind) {
				todo = append(todo, name)
				found[g.Kind] = true
			}
		}
	}
	if len(found) != len(kinds) {
		return all()
	}
	seen := map[string]bool{}
	for len(todo) > 0 {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		raw, ok := components[name]
		if seen[name] || !ok {
			continue
		}
		seen[name] = true
		refs, ok := schemaRefs(raw)
		if !ok {
			return all()
		}
		todo = append(todo, refs...)
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// schemaRefs are the names raw refers to ("$ref": "#/components/schemas/
// NAME"); false unless each "$ref" key in raw is such a reference with a
// name that has no escapes.
func schemaRefs(raw []byte) ([]string, bool) {
	const prefix = `"#/components/schemas/`
	var refs []string
	for rest := raw; ; {
		i := bytes.Index(rest, []byte(prefix))
		if i < 0 {
			break
		}
		rest = rest[i+len(prefix):]
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return nil, false
		}
		name := rest[:end]
		if bytes.IndexByte(name, '\\') >= 0 {
			return nil, false
		}
		refs = append(refs, string(name))
		rest = rest[end:]
	}
	if bytes.Count(raw, []byte(`"$ref"`)) != len(refs) {
		return nil, false
	}
	return refs, true
}

// errUnpublished: the server publishes no OpenAPI v3 document for a
// group/version.
var errUnpublished = errors.New("no OpenAPI v3 schema published")

// componentSchemas reads the OpenAPI v3 document of gv (one request; index
// is the server's index of them) and returns its component schemas by
// name, not decoded (load decodes those it needs). The document's paths,
// most of its size, are skipped over. The schemas of a document whose
// address names its hash are taken from cache when it has them, and kept
// there.
func componentSchemas(index func() (map[string]openapi.GroupVersion, error), gv schema.GroupVersion, cache *schemaCache) (map[string]json.RawMessage, error) {
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
	if components, ok := cache.get(url); ok {
		cache.keep(url, components)
		return components, nil
	}
	data, err := p.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Components.Schemas != nil {
		cache.keep(url, doc.Components.Schemas)
	}
	return doc.Components.Schemas, nil
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
		c.tr, c.k.NewKey, _ = fieldType(atom.Map, *pe.FieldName)
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
	if c.done {
		return c.k
	}
	a, _ := c.s.Resolve(c.tr)
	return kindOf(c.tr, a, c.k.NewKey)
}

// kindOf is what a node of type tr, which allows a, is (its path's last
// element a new key or not): a collection by its type, not its value, a
// list before a map where the type allows both.
func kindOf(tr smdschema.TypeRef, a smdschema.Atom, newKey bool) nodeKind {
	k := nodeKind{NewKey: newKey}
	if tr.NamedType != nil {
		k.TypeName = *tr.NamedType
	}
	switch {
	case a.List != nil:
		k.Collection = a.List.ElementRelationship != smdschema.Atomic
	case a.Map != nil:
		k.Collection = len(a.Map.Fields) == 0 && a.Map.ElementRelationship != smdschema.Atomic
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
