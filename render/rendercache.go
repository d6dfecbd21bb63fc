package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"

	"github.com/calricon/driftscan/config"
	jsoniter "github.com/json-iterator/go"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// A chart's output is a function of its files, the values given to it,
// the release and the capabilities, as long as its templates call no
// function whose result changes from one render to the next (now, the
// rand and gen functions, ...). The parse cache keeps such an output by a
// key of all of those inputs (cacheRender), as the list of its documents'
// own entries, so a scan of an unchanged chart renders nothing: on the
// prometheus-community charts a render takes 4-9 ms of template work for
// a handful of objects, where a plain manifest file takes microseconds.
//
// What a chart's text says of its output (settlement, read from every
// template action, {{ ... }}, in the files of the chart and its subcharts
// and in the values given):
//   - an action names one of unsettledFuncs: two renders may differ. The
//     scanner renders such a chart twice, to find the fields that do, and
//     its output is never kept;
//   - none does, but one calls tpl, which evaluates text that may be put
//     together at render time and so name one after all: rendered twice,
//     and kept when the two renders in one process gave the same output;
//   - none does and none calls tpl: every render gives the same output, as
//     Go templates call no function they are not given by name. Rendered
//     once (Manifest.Settled), and kept.
//
// A chart given values from Secrets is never kept (the parse cache keeps
// nothing of its output), nor one whose output holds a Secret or a
// document with an error.

// cacheRender is a chart's output: its documents' keys (renderedDoc).
const cacheRender cacheKind = 'r'

// renderedDoc is one document of a chart's output: the template it came
// from and the key of its entry (cacheHelm).
type renderedDoc struct {
	file string
	key  cacheKey
}

// chartInput is what a chart render reads besides its files' bytes,
// for the check of its text (settled).
type chartInput struct {
	key    cacheKey
	values [][]byte // the values files, the extra values and the set values
	// lookup: Helm's lookup reads the cluster (Options.Lookup).
	lookup bool
}

// chartInputs reads what a render of the chart whose files are files
// takes in and returns its key; false when one of those inputs cannot be
// read (the render then says why).
func chartInputs(src *sourceRoot, files []*archive.BufferedFile, opts Options) (chartInput, bool) {
	var in chartInput
	h := sha256.New()
	part := func(tag byte, b []byte) {
		var n [binary.MaxVarintLen64 + 1]byte
		n[0] = tag
		h.Write(n[:1+binary.PutUvarint(n[1:], uint64(len(b)))])
		h.Write(b)
	}
	part('k', []byte("helm-render 1"))
	for _, f := range files {
		part('f', []byte(f.Name))
		part('d', f.Data)
	}
	helm := opts.Helm
	if helm == nil {
		helm = &config.HelmSource{}
	}
	vfs, err := src.valuesFiles(helm)
	if err != nil {
		return chartInput{}, false
	}
	for _, f := range vfs {
		part('v', []byte(f.name))
		part('w', f.data)
		in.values = append(in.values, f.data)
	}
	for _, data := range opts.ExtraValues {
		part('x', data)
		in.values = append(in.values, data)
	}
	inline, err := inlineValues(helm)
	if err != nil {
		return chartInput{}, false
	}
	if inline != nil {
		part('i', inline)
		in.values = append(in.values, inline)
	}
	keys := make([]string, 0, len(helm.Set))
	for k := range helm.Set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		part('s', []byte(k))
		part('t', []byte(helm.Set[k]))
		in.values = append(in.values, []byte(helm.Set[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(helm.SetString)) {
		part('y', []byte(k))
		part('Y', []byte(helm.SetString[k]))
		in.values = append(in.values, []byte(helm.SetString[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(helm.SetFiles)) {
		data, err := setFile(src, helm.SetFiles[k])
		if err != nil {
			return chartInput{}, false
		}
		part('F', []byte(k))
		part('G', data)
		in.values = append(in.values, data)
	}
	if helm.SkipSchemaValidation {
		part('S', nil) // the same output, but not the same error
	}
	if helm.SkipCRDs {
		part('c', nil)
	}
	part('V', []byte(helm.ChartVersion))
	part('M', []byte(helm.VersionMetadata))
	if helm.ValuesFilesReplaceDefaults {
		part('D', nil)
	}
	part('r', []byte(releaseName(opts)))
	part('n', []byte(opts.ReleaseNamespace()))
	part('K', []byte(opts.KubeVersion))
	if in.lookup = opts.Lookup != nil; in.lookup {
		part('L', nil)
	}
	for _, v := range opts.APIVersions {
		part('a', []byte(v))
	}
	in.key = cacheKey{kind: cacheRender}
	h.Sum(in.key.sum[:0])
	return in, true
}

// settlement is what a chart's text says of its renders' output.
type settlement uint8

const (
	// mayDiffer: an action names a function of unsettledFuncs.
	mayDiffer settlement = iota
	// mayAssemble: none does, but one calls tpl.
	mayAssemble
	// settles: none does, and none calls tpl.
	settles
)

// settlement is the least settlement of any file of ch (its subcharts
// too) or of the values given.
func (in chartInput) settlement(ch *chart.Chart) settlement {
	least := settles
	for _, v := range in.values {
		least = min(least, textSettlement(v, in.lookup))
	}
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		for _, files := range [][]*common.File{c.Raw, c.Templates, c.Files} {
			for _, f := range files {
				if least == mayDiffer {
					return
				}
				least = min(least, textSettlement(f.Data, in.lookup))
			}
		}
		for _, d := range c.Dependencies() {
			walk(d)
		}
	}
	walk(ch)
	return least
}

// unsettledFuncs are the template functions (sprig's and Helm's) whose
// result is not a function of their arguments: the clock (the date
// functions read it when given no time), randomness, and key generation.
// sprig's keys and values give a map's keys and values in Go's map order,
// which changes from one call to the next (prometheus-pushgateway takes
// `first (keys .Values.webConfiguration.basicAuthUsers)`). Helm's lookup
// and getHostByName return nothing without a cluster and DNS, as driftscan
// renders unless Options.Lookup is set, and env is not in Helm's map.
var unsettledFuncs = map[string]bool{
	"keys": true, "values": true,
	"now": true, "ago": true, "date": true, "date_in_zone": true, "dateInZone": true,
	"htmlDate": true, "htmlDateInZone": true, "durationRound": true,
	"randAlphaNum": true, "randAlpha": true, "randAscii": true, "randNumeric": true,
	"randBytes": true, "randInt": true, "uuidv4": true, "shuffle": true,
	"genPrivateKey": true, "genCA": true, "genCAWithKey": true, "genSelfSignedCert": true,
	"genSelfSignedCertWithKey": true, "genSignedCert": true, "genSignedCertWithKey": true,
	"encryptAES": true, "bcrypt": true, "htpasswd": true,
}

// textSettlement is the settlement of text: every identifier between "{{"
// and the next "}}" is read, wherever it stands (a field of that name
// counts too). With lookup, Helm's lookup reads the cluster, so a text
// that names it may differ too.
func textSettlement(text []byte, lookup bool) settlement {
	least := settles
	for {
		i := bytes.Index(text, []byte("{{"))
		if i < 0 {
			return least
		}
		text = text[i+2:]
		end := bytes.Index(text, []byte("}}"))
		if end < 0 {
			end = len(text)
		}
		action := text[:end]
		text = text[end:]
		for j := 0; j < len(action); {
			if !identStart(action[j]) {
				j++
				continue
			}
			k := j + 1
			for k < len(action) && (identStart(action[k]) || '0' <= action[k] && action[k] <= '9') {
				k++
			}
			switch name := string(action[j:k]); {
			case unsettledFuncs[name], lookup && name == "lookup":
				return mayDiffer
			case name == "tpl":
				least = mayAssemble
			}
			j = k
		}
	}
}

func identStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// pendingRender is the first render of a chart in this process, by its
// key: the sha256 of its output, or differed when a later render gave
// another.
type pendingRender struct {
	sum      [sha256.Size]byte
	differed bool
}

// rendering notes a render of the chart of key, whose text's settlement is
// s, that gave manifest, whose documents the cache holds as docs (nil when
// it does not hold them all). The output of a chart that settles is kept
// at once, and that of one that may differ never. Of one that may
// assemble, the first render of a key is remembered; a second one that
// gives the same manifest keeps the output; one that gives another
// manifest stops the key being kept in this process.
func (c *ParseCache) rendering(key cacheKey, manifest string, docs []renderedDoc, s settlement) {
	if c == nil || s == mayDiffer || docs == nil {
		return
	}
	if s == settles {
		c.keepRendered(key, docs)
		return
	}
	sum := sha256.Sum256([]byte(manifest))
	c.mu.Lock()
	p, seen := c.pending[key]
	switch {
	case !seen:
		c.pending[key] = &pendingRender{sum: sum}
		c.mu.Unlock()
		return
	case p.differed:
		c.mu.Unlock()
		return
	case p.sum != sum:
		p.differed = true
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.keepRendered(key, docs)
}

// keepRendered keeps docs as the output of the chart of key.
func (c *ParseCache) keepRendered(key cacheKey, docs []renderedDoc) {
	if data, ok := encodeRendered(docs); ok {
		c.add(key, data)
	}
}

// rendered returns the output of the chart of key as an earlier render
// gave it, its manifests lazy as lookup's; false when the cache does not
// hold it whole (then an entry that does not decode is dropped).
func (c *ParseCache) rendered(key cacheKey, lazy bool) ([]Manifest, bool) {
	e := c.entry(key)
	if e == nil {
		return nil, false
	}
	docs, ok := decodeRendered(e.objects)
	var out []Manifest
	for _, d := range docs {
		if !ok {
			break
		}
		var ms []Manifest
		ms, ok = c.served(d.key, d.file, lazy)
		out = append(out, ms...)
	}
	if !ok {
		c.drop(key, e)
		return nil, false
	}
	c.count(func(s *ParseCacheStats) { e.used = true; s.Charts++ })
	for i := range out {
		out[i].settled = true
	}
	return out, true
}

// encodeRendered writes docs as a render entry: [["file","h<hex>"],...].
func encodeRendered(docs []renderedDoc) ([]byte, bool) {
	return encodeWith(func(s *jsoniter.Stream) bool {
		s.WriteArrayStart()
		for i, d := range docs {
			if i > 0 {
				s.WriteMore()
			}
			s.WriteArrayStart()
			if !encodeValue(s, d.file, 0) {
				return false
			}
			s.WriteMore()
			s.WriteString(string(d.key.kind) + hex.EncodeToString(d.key.sum[:]))
			s.WriteArrayEnd()
		}
		s.WriteArrayEnd()
		return true
	})
}

// decodeRendered reads a render entry (encodeRendered); false when it is
// not one this build writes.
func decodeRendered(data []byte) ([]renderedDoc, bool) {
	d := cacheDecoder{data: data}
	v, err := d.value(0)
	if err != nil || d.next() != 0 || d.i != len(d.data) {
		return nil, false
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	docs := make([]renderedDoc, 0, len(list))
	for _, item := range list {
		pair, ok := item.([]any)
		if !ok || len(pair) != 2 {
			return nil, false
		}
		file, ok1 := pair[0].(string)
		text, ok2 := pair[1].(string)
		if !ok1 || !ok2 || len(text) != cacheKeyLen || cacheKind(text[0]) != cacheHelm {
			return nil, false
		}
		k := cacheKey{kind: cacheHelm}
		if n, err := hex.Decode(k.sum[:], []byte(text[1:])); err != nil || n != sha256.Size {
			return nil, false
		}
		docs = append(docs, renderedDoc{file: file, key: k})
	}
	return docs, true
}
