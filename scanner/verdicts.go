package scanner

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	jsoniter "github.com/json-iterator/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// A scheduled scan mostly finds what the last one found: objects in sync
// that nobody touched since. The verdict cache (Options.CacheDir) remembers
// each object found with no drift, by what was compared: a hash of Git's
// object as the applier sends it (with its kind, the version listed and the
// server's schema for it), and the live object's uid and resourceVersion.
// The API server gives an object a new resourceVersion on every write, so
// while both stay the same, so does the comparison, and the next scan marks
// the object in sync from its page's bytes without decoding or comparing
// it. An object whose differences were all dismissed as no drift (the
// defaults the server fills in, a webhook's sidecar) is remembered with
// how many were dismissed for which reason, and with what its
// classification read besides the object: the webhooks, its autoscalers,
// its namespace's labels, the app's appliers, rules and reconciler
// (classifyContext); a change to any of them compares it again. Anything
// else is compared as always: an object with drift (ignored or not), one
// whose Git side or schema changed, every object when an audit log is read
// (attribution comes from outside the object), and every verdict older than
// verdictMaxAge. The cache holds names, hashes, uids and resourceVersions:
// no value of any object.

// verdictFormat is the cache file's format; a file of another is ignored.
// Bump it whenever what a verdict depends on changes in a way the hash
// does not see (normalization, diff, what counts as a difference).
const verdictFormat = 1

// verdictMaxAge bounds how long a verdict is trusted without a compare: a
// CRD's conversion webhook may change what the server serves without a
// write to the object, so every object is compared afresh at least daily.
const verdictMaxAge = 24 * time.Hour

// verdictFileMax bounds the cache file read: about 265 bytes a verdict
// (1.3 MB for the benchmark's 4,750).
const verdictFileMax = 256 << 20

// verdictFileName is the cache file in Options.CacheDir.
const verdictFileName = "verdicts.json"

// verdictJSON writes and reads the schema cache.
var verdictJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// verdictFile is the cache file.
type verdictFile struct {
	Format int `json:"format"`
	// Build is the driftscan build that wrote it (buildIdentity), Server
	// the API server's address and version: verdicts of another build or
	// server are not used.
	Build    string    `json:"build"`
	Server   string    `json:"server"`
	Verdicts []verdict `json:"verdicts"`
}

// verdict is one object found in sync.
type verdict struct {
	Group     string `json:"g,omitempty"`
	Kind      string `json:"k"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"n"`
	// Git is the hash of what was compared on Git's side (gitHash).
	Git             string `json:"git"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"rv"`
	// Owner is the object's Options.OwnerLabel value.
	Owner string `json:"owner,omitempty"`
	// Dismissed counts the differences dismissed as no drift, by reason,
	// and Context is the hash of what their classification read besides
	// the object (classifyHash); both empty for an object with none.
	Dismissed report.Dismissed `json:"dismissed,omitempty"`
	Context   string           `json:"ctx,omitempty"`
	// At is when it was compared, in Unix seconds.
	At int64 `json:"at"`
}

func (v verdict) key() objectKey { return objectKey{v.Group, v.Kind, v.Namespace, v.Name} }

// verdicts is the cache of one scan: what it read, and what it keeps.
// What it read stays in the file's order, in one slice (a verdict is over
// the 128 bytes a map holds in place, so a map of them made an allocation
// of each), found by the declared object it is on (link): one lookup of
// each verdict's key, into the map of declared objects the scan has
// anyway, rather than an index of its own built and looked up for every
// object listed.
type verdicts struct {
	path, build, server string
	now                 time.Time
	old                 []verdict
	// of is, for each declared object (scan.objects, by index), 1 + the
	// index in old of the verdict on it, or 0 for none.
	of []int32

	mu sync.Mutex
	// reused marks the verdicts of old kept again (marked of them, the
	// objects marked in sync), and recorded are the ones this scan found;
	// a recorded verdict takes the place of a reused one on the same
	// object.
	reused   []bool
	marked   int
	recorded map[objectKey]verdict
	changed  bool
}

// openVerdicts reads the cache in dir for a scan of server at now. A
// missing file is an empty cache; one that cannot be read, or is of
// another format, build or server, is an empty cache too, and the error
// says why (the scan compares everything and writes it anew).
func openVerdicts(dir, server string, now time.Time) (*verdicts, error) {
	v := &verdicts{path: filepath.Join(dir, verdictFileName), build: render.BuildIdentity(), server: server, now: now,
		recorded: map[objectKey]verdict{}, changed: true}
	data, err := render.ReadCacheFile(v.path, verdictFileMax)
	if errors.Is(err, os.ErrNotExist) {
		return v, nil
	}
	if err != nil {
		return v, fmt.Errorf("read the scan cache %s: %w", v.path, err)
	}
	file, err := decodeVerdictFile(data)
	if err != nil {
		return v, fmt.Errorf("the scan cache %s is no cache file (%v): not used", v.path, err)
	}
	if file.Format != verdictFormat || file.Build != v.build || file.Server != server {
		return v, nil // written anew for this build and server
	}
	v.changed = false
	v.old, v.reused = file.Verdicts, make([]bool, len(file.Verdicts))
	return v, nil
}

// link finds the verdict read on each of n declared objects, whose
// indexes declared gives by key. It is called once, before lookup.
func (v *verdicts) link(declared map[objectKey]int, n int) {
	v.of = make([]int32, n)
	for i := range v.old {
		if di, ok := declared[v.old[i].key()]; ok && di < n {
			v.of[di] = int32(i + 1)
		}
	}
}

// on is the index in old of the verdict read on declared object di, -1
// for none.
func (v *verdicts) on(di int) int {
	if di < 0 || di >= len(v.of) {
		return -1
	}
	return int(v.of[di]) - 1
}

// lookup returns the verdict on declared object di if one holds for this
// Git side and live object, but for its context (verdict.Context), which
// the caller checks. It points into what was read, which nothing changes.
func (v *verdicts) lookup(di int, git, uid, rv string) *verdict {
	i := v.on(di)
	if i < 0 {
		return nil
	}
	e := &v.old[i]
	if git == "" || uid == "" || rv == "" || e.Git != git || e.UID != uid || e.ResourceVersion != rv {
		return nil
	}
	if age := v.now.Sub(time.Unix(e.At, 0)); age < 0 || age >= verdictMaxAge {
		return nil
	}
	return e
}

// reuse keeps the verdict on declared object di, which lookup found and
// which held, for the next scan.
func (v *verdicts) reuse(di int) {
	i := v.on(di)
	if i < 0 {
		return
	}
	v.mu.Lock()
	if !v.reused[i] {
		v.reused[i] = true
		v.marked++
	}
	v.mu.Unlock()
}

// record keeps the verdict e, just found, with this scan's time.
func (v *verdicts) record(e verdict) {
	if e.Git == "" || e.UID == "" || e.ResourceVersion == "" {
		return
	}
	e.At = v.now.Unix()
	v.mu.Lock()
	v.recorded[e.key()] = e
	v.changed = true
	v.mu.Unlock()
}

// reusedCount is how many objects inSync marked in sync.
func (v *verdicts) reusedCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.marked
}

// save writes the verdicts kept by this scan, and only those: an object
// gone from Git or found with a difference leaves the cache. It writes
// nothing when they are what it read, and otherwise replaces the file at
// once (a temporary file renamed over it), so a scan that dies midway or
// a scan running beside it never leaves half a file.
func (v *verdicts) save() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.changed && v.marked == len(v.old) {
		return nil
	}
	file := verdictFile{Format: verdictFormat, Build: v.build, Server: v.server, Verdicts: make([]verdict, 0, v.marked+len(v.recorded))}
	recorded := make([]verdict, 0, len(v.recorded))
	for _, e := range v.recorded {
		recorded = append(recorded, e)
	}
	slices.SortFunc(recorded, cmpVerdicts)
	// The file is in key order, as this wrote it: what is kept of it is
	// merged with what this scan found, rather than all of it sorted again
	// (about half of saving 20,000 verdicts when one changed). A file in
	// another order is sorted whole.
	inOrder := slices.IsSortedFunc(v.old, cmpVerdicts)
	for i := range v.old {
		e := &v.old[i]
		if _, again := v.recorded[e.key()]; !v.reused[i] || again {
			continue
		}
		for inOrder && len(recorded) > 0 && cmpVerdicts(recorded[0], *e) < 0 {
			file.Verdicts, recorded = append(file.Verdicts, recorded[0]), recorded[1:]
		}
		file.Verdicts = append(file.Verdicts, *e)
	}
	file.Verdicts = append(file.Verdicts, recorded...)
	if !inOrder {
		slices.SortFunc(file.Verdicts, cmpVerdicts)
	}
	if err := report.WritePrivateFileAtomic(v.path, encodeVerdictFile(file)); err != nil {
		return fmt.Errorf("the scan cache: %w", err)
	}
	return nil
}

// cmpVerdicts orders verdicts as the file keeps them, by cmpKey.
func cmpVerdicts(a, b verdict) int { return cmpKey(a.key(), b.key()) }

func cmpKey(a, b objectKey) int {
	return cmp.Or(strings.Compare(a.group, b.group), strings.Compare(a.kind, b.kind), strings.Compare(a.ns, b.ns), strings.Compare(a.name, b.name))
}

// openCache reads the verdict cache of Options.CacheDir while the apps
// render; the function it returns waits for it (nil without a cache).
func (s *scan) openCache() func() *verdicts {
	if s.opts.CacheDir == "" {
		return func() *verdicts { return nil }
	}
	done := make(chan *verdicts, 1)
	go func() {
		v, err := openVerdicts(s.opts.CacheDir, s.cacheServer(), s.opts.Now())
		if err != nil {
			s.opts.Logger.Warn("the scan cache is not used: every object is compared", "err", err)
		}
		done <- v
	}()
	return sync.OnceValue(func() *verdicts { return <-done })
}

// hashDesired hashes the content of each desired object (contentHash), a
// few at a time, so that a page's objects wait for no hashing. An object
// parsed through the parse cache is not hashed: its Digest names the
// bytes it was parsed from and its place among their objects, and what
// the scan did to it since is a function of what else the verdict is on.
// Only two things change an object between its parse and its compare:
// the app's applier (appliedAs, in gitHash) and addDesired's namespace,
// the object's own key's. So one Digest, with the same key and gitHash,
// is one object as compared.
func (s *scan) hashDesired() {
	if s.verdicts == nil {
		return
	}
	var wg sync.WaitGroup
	workers := max(1, s.opts.Workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(s.objects); i += workers {
				if d := &s.objects[i]; d.digest == "" {
					if obj, err := d.git(); err == nil {
						d.content = contentHash(obj.Object)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// contentKey is what names d's content in gitHash: its content hash, or
// for an object parsed through the parse cache "parsed " and its Digest
// (hashDesired), apart from contentHash's sums, which are raw bytes.
func (d *desired) contentKey() (prefix, content string) {
	if d.digest != "" {
		return "parsed ", d.digest
	}
	return "", d.content
}

// cachedVerdict looks up the verdict on declared object di and the live
// object h heads. It returns the hash of Git's side ("" without a cache)
// and the verdict, when one holds but maybe for its classification context
// (verdictHolds checks that, once compare's gather has read it); nil when
// the object must be compared.
func (s *scan) cachedVerdict(di int, h itemHead) (git string, v *verdict) {
	if s.verdicts == nil {
		return "", nil
	}
	// The key names the schema: it is known once loaded (prepareAhead).
	if s.prepared() != nil {
		return "", nil
	}
	d := &s.objects[di]
	gvk := d.mapping.GroupVersionKind
	prefix, content := d.contentKey()
	git = gitHash(prefix, content, gvk, d.mapping.Resource, s.schemaIDs[gvk.GroupVersion()], s.cfg.Apps[d.app].AppliedAs, s.opts.OwnerLabel)
	e := s.verdicts.lookup(di, git, h.Metadata.UID, h.Metadata.ResourceVersion)
	if e == nil {
		return git, nil
	}
	if len(e.Dismissed) > 0 && (s.opts.ExplainDismissed || len(s.auditPaths()) > 0) {
		// Each dismissal is listed, or attributed from the audit log
		// (classifyHash): compare it.
		return git, nil
	}
	return git, e
}

// verdictHolds says whether v, found by cachedVerdict, holds in this
// scan's classification context; a compare worker asks, once gather is done.
func (s *scan) verdictHolds(d desired, v verdict) bool {
	if len(v.Dismissed) == 0 {
		return true
	}
	ctx := s.classifyHash(d)
	return ctx != "" && ctx == v.Context
}

// useVerdict marks declared object di in sync as verdict v says, and
// counts what v dismissed: it is not decoded or compared.
func (s *scan) useVerdict(di int, v *verdict) {
	for reason, n := range v.Dismissed {
		s.dismissed.addN(reason, n)
	}
	s.verdicts.reuse(di)
	d := &s.objects[di]
	ro := &s.r.Apps[d.app].Objects[d.object]
	ro.Status, ro.Owner = report.StatusInSync, v.Owner
}

// recordVerdict keeps in the cache that d, compared with the live object
// f, has no drift, dismissed having counted the differences that were none.
func (s *scan) recordVerdict(d desired, f foundObject, ro *report.Object, dismissed report.Dismissed) {
	if s.verdicts == nil || len(ro.Findings) > 0 {
		return
	}
	e := verdict{Group: d.key.group, Kind: d.key.kind, Namespace: d.key.ns, Name: d.key.name,
		Git: f.git, UID: f.uid, ResourceVersion: f.resourceVersion, Owner: ro.Owner}
	if len(dismissed) > 0 {
		if e.Context = s.classifyHash(d); e.Context == "" {
			return
		}
		e.Dismissed = dismissed
	}
	s.verdicts.record(e)
}

// classifyHash is the hash of what classifying d's differences reads
// besides the two objects: the mutating webhooks and d's app's appliers,
// rules and reconciler tracking (appContexts), d's autoscalers, its
// namespace's labels, and the fields that differ between its chart's two
// renders. "" when an audit log is read: attribution then comes from
// outside the cluster's state, and is never taken from the cache.
func (s *scan) classifyHash(d desired) string {
	if s.audit != nil || d.app >= len(s.cc.apps) || s.cc.apps[d.app] == "" {
		return ""
	}
	// Most objects share their app's and namespace's answer: hashing the
	// namespace's labels again for each was 10 ms of a warm 5k scan.
	shared := len(s.cc.scalers[d.key]) == 0 && d.unstable == nil
	an := appNamespace{d.app, d.key.ns}
	if shared {
		if h, ok := s.nsContexts.Load(an); ok {
			return h.(string)
		}
	}
	h := newValueHasher()
	h.str(s.cc.apps[d.app])
	labels := map[string]any{}
	for k, v := range s.cc.nsLabels[d.key.ns] {
		labels[k] = v
	}
	h.value(labels)
	for _, sc := range s.cc.scalers[d.key] {
		h.str(sc.Kind)
		h.str(sc.Name)
	}
	if d.unstable != nil {
		h.str(d.unstable.String())
	}
	sum := hex.EncodeToString(h.sum())
	if shared {
		s.nsContexts.Store(an, sum)
	}
	return sum
}

// appNamespace keys classifyHash's shared answers.
type appNamespace struct {
	app int
	ns  string
}

// appContexts hashes, for each app, what the classification of any of its
// objects reads: the webhooks (webhooksID) and the app's appliers, rules
// and tracking. "" for every app when the webhooks could not be read.
func (s *scan) appContexts(webhooks string) []string {
	out := make([]string, len(s.cfg.Apps))
	if webhooks == "" {
		return out
	}
	for i, app := range s.cfg.Apps {
		cl, err := json.Marshal(struct {
			Appliers, AppAppliers []string
			Rules                 any
			Tracking              any
		}{s.cfg.Appliers, app.Appliers, s.cfg.Rules, s.tracking[i]})
		if err != nil {
			continue
		}
		h := newValueHasher()
		h.str(webhooks)
		h.str(string(cl))
		out[i] = string(h.sum())
	}
	return out
}

// webhooksID names the mutating webhooks as gather read them: each
// configuration's uid and resourceVersion, in name order; "" when they
// could not be read.
func webhooksID(cfgs []admissionregistrationv1.MutatingWebhookConfiguration, err error) string {
	if err != nil {
		return ""
	}
	ids := make([]string, 0, len(cfgs))
	for _, c := range cfgs {
		ids = append(ids, c.Name+"/"+string(c.UID)+"/"+c.ResourceVersion)
	}
	slices.Sort(ids)
	return fmt.Sprintf("webhooks %q", ids)
}

// gitHash is the hash of what a compare of Git's object reads besides the
// live object: the object as Git has it (prefix+content, desired.contentKey,
// hashed as that one string without making it), how its applier sends it,
// the version it is listed in, the server's schema for its group/version
// (schemaID) and the owner label read from the live object. "" when there
// is no content hash or schema to go by (nothing is then cached for it).
func gitHash(prefix, content string, gvk schema.GroupVersionKind, listed schema.GroupVersionResource, schemaID string, applied config.AppliedAs, ownerLabel string) string {
	if content == "" || schemaID == "" {
		return ""
	}
	// Each part tagged as valueHasher tags a string, into a buffer on the
	// stack, and hashed in one call: the scan asks this of every object
	// whose live side it reads, and a hasher and the names' strings made
	// for each were 0.047 CPU s of a warm 20,000-object scan.
	var small [512]byte
	b := append(appendTag(small[:0], 's', uint64(len(prefix)+len(content))), prefix...)
	b = append(b, content...)
	for _, s := range [...]string{gvk.Group, gvk.Version, gvk.Kind, listed.Group, listed.Version, listed.Resource, schemaID, string(applied), ownerLabel} {
		b = append(appendTag(b, 's', uint64(len(s))), s...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// contentHash hashes a decoded object canonically (valueHasher), "" when
// it holds a value the hash does not know.
func contentHash(obj map[string]any) string {
	h := newValueHasher()
	if !h.value(obj) {
		return ""
	}
	return string(h.sum())
}

// valueHasher hashes a decoded JSON value canonically: each value tagged
// with its type, strings and collections with their length, map keys in
// order. Two values hash alike only if they are equal, ints and floats
// apart.
type valueHasher struct {
	h   hash.Hash
	buf []byte
}

func newValueHasher() *valueHasher { return &valueHasher{h: sha256.New()} }

func (w *valueHasher) flush() {
	w.h.Write(w.buf)
	w.buf = w.buf[:0]
}

// sum is the hash of everything written.
func (w *valueHasher) sum() []byte {
	w.flush()
	return w.h.Sum(nil)
}

func (w *valueHasher) tag(b byte, n uint64) {
	if len(w.buf) > 32<<10 {
		w.flush()
	}
	w.buf = appendTag(w.buf, b, n)
}

// appendTag appends a value's type t and its length (or its bits) n, as
// valueHasher hashes them.
func appendTag(buf []byte, t byte, n uint64) []byte {
	return binary.LittleEndian.AppendUint64(append(buf, t), n)
}

func (w *valueHasher) str(s string) {
	w.tag('s', uint64(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *valueHasher) value(v any) bool {
	switch v := v.(type) {
	case nil:
		w.tag('n', 0)
	case bool:
		if v {
			w.tag('t', 0)
		} else {
			w.tag('f', 0)
		}
	case string:
		w.str(v)
	case int64:
		w.tag('i', uint64(v))
	case int:
		w.tag('i', uint64(int64(v)))
	case int32:
		w.tag('i', uint64(int64(v)))
	case float64:
		w.tag('d', math.Float64bits(v))
	case []any:
		w.tag('[', uint64(len(v)))
		for _, e := range v {
			if !w.value(e) {
				return false
			}
		}
	case map[string]any:
		w.tag('{', uint64(len(v)))
		var small [16]string
		keys := small[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			w.str(k)
			if !w.value(v[k]) {
				return false
			}
		}
	default:
		return false
	}
	return true
}
