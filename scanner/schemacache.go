package scanner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// schemaCache keeps, between scans, the component schemas of the server's
// OpenAPI v3 documents that a scan typed with, by the address of each
// document. The address carries the document's hash (the API server names
// a new one whenever a CRD's schema changes), so a warm scan takes the
// schemas of an unchanged group/version from the cache instead of fetching
// the whole document (2.4 MB for core, apps and a CRD, two thirds of it the
// paths, which the scan never reads) and decoding it. An address without
// a hash (servers before 1.27) is never cached.
//
// The file holds what the server published, no object's values. It is as
// trusted as the verdicts beside it: whoever can write it can make the scan
// type objects wrongly, as they can make it skip them.
type schemaCache struct {
	path, build string
	old         map[string]map[string]json.RawMessage

	mu      sync.Mutex
	kept    map[string]map[string]json.RawMessage
	changed bool
}

// schemaFormat is the cache file's format; a file of another is ignored.
const schemaFormat = 1

// schemaFileName is the cache file in Options.CacheDir.
const schemaFileName = "openapi.json"

// schemaFileMax bounds the cache file read; the bench's three documents
// keep 0.8 MB of schemas.
const schemaFileMax = 256 << 20

// schemaFile is the cache file: each document's components.schemas (each
// schema as the server wrote it, by name), by the document's address.
type schemaFile struct {
	Format int                                   `json:"format"`
	Build  string                                `json:"build"`
	Docs   map[string]map[string]json.RawMessage `json:"docs"`
}

// openSchemaCache reads the cache in dir. A missing file is an empty
// cache, and so is one of another format or build; one that cannot be read
// is an empty cache and an error naming it (the scan fetches every
// document and writes the file anew).
func openSchemaCache(dir string) (*schemaCache, error) {
	c := &schemaCache{path: filepath.Join(dir, schemaFileName), build: render.BuildIdentity(),
		old: map[string]map[string]json.RawMessage{}, kept: map[string]map[string]json.RawMessage{}, changed: true}
	data, err := render.ReadCacheFile(c.path, schemaFileMax)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read the schema cache %s: %w", c.path, err)
	}
	var file schemaFile
	if err := verdictJSON.Unmarshal(data, &file); err != nil {
		return c, fmt.Errorf("the schema cache %s is no cache file (%v): not used", c.path, err)
	}
	if file.Format != schemaFormat || file.Build != c.build {
		return c, nil
	}
	c.old, c.changed = file.Docs, false
	if c.old == nil {
		c.old = map[string]map[string]json.RawMessage{}
	}
	return c, nil
}

// get returns the schemas kept for the document at url. A nil cache has
// none.
func (c *schemaCache) get(url string) (map[string]json.RawMessage, bool) {
	if c == nil {
		return nil, false
	}
	raw, ok := c.old[url]
	return raw, ok
}

// keep keeps the schemas of the document at url for the next scan.
func (c *schemaCache) keep(url string, components map[string]json.RawMessage) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.old[url]; !ok {
		c.changed = true
	}
	c.kept[url] = components
}

// save writes the documents this scan kept, and only those, unless they
// are what the file holds. The file is replaced whole.
func (c *schemaCache) save() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.changed && len(c.kept) == len(c.old) {
		return nil
	}
	data, err := verdictJSON.Marshal(schemaFile{Format: schemaFormat, Build: c.build, Docs: c.kept})
	if err != nil {
		return err
	}
	if err := report.WritePrivateFileAtomic(c.path, data); err != nil {
		return fmt.Errorf("the schema cache: %w", err)
	}
	return nil
}
