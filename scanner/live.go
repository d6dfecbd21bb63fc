package scanner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// liveState is what the scan kept of what it read from the cluster: which
// declared objects it found, and for Extra the identity of the undeclared
// objects that carry an app's tracking label. Each declared object itself
// goes to the compare as its page arrives and is not kept here: nothing of
// a LIST outlives its page but what the compare of its objects holds.
type liveState struct {
	// found marks the declared objects (by index in scan.objects) that
	// some page held.
	found []bool
	// failed holds the list errors, by resource and namespace.
	failed map[listKey]error
	// listed is every resource and namespace listed to the end.
	listed map[listKey]bool
	// extra are the undeclared objects an app's tracking key names.
	extra []extraObject
}

// extraObject is an undeclared live object that names app ai in a
// tracking label or annotation.
type extraObject struct {
	app                               int
	apiVersion, kind, namespace, name string
	// ignored: the object is marked for Argo CD not to count it
	// (uncounted), so it is a dismissal, not an Extra object.
	ignored bool
}

// neverClusterWide are the resources the scan lists only per namespace,
// in the namespaces where apps declare them, however many those are: a
// cluster-wide LIST of Secrets would read (and, page by page, hold) every
// Secret of every tenant to compare a few.
var neverClusterWide = map[schema.GroupResource]bool{{Group: "", Resource: "secrets"}: true}

// secretPageSize bounds a page of Secrets where the scan pages
// (listPageSize): a Secret may be up to 1 MiB (Helm keeps its release
// history in them), and an API server that pages builds each page whole.
// Where the scan lists whole, the server writes the list out one Secret at
// a time, from its watch cache, and the page reader keeps only the
// declared ones; in pages, a quiet namespace's later pages would be read
// from etcd and decrypted again.
const secretPageSize = 50

// read lists each resource once per namespace, or once cluster-wide when
// its objects span most namespaces (clusterWide; never for
// neverClusterWide), hands each
// declared object to visit (with its index in s.objects) as its page
// arrives, and keeps of each page only what Extra needs. visit is called
// from the LIST goroutines, once per object found, and must not block for
// long: the next page waits for it.
func (s *scan) read(ctx context.Context, visit func(foundObject)) *liveState {
	// Each object by its index: prepareAhead sets other fields of it
	// meanwhile (findUnstable).
	byGVR := map[schema.GroupVersionResource]map[string]bool{}
	for i := range s.objects {
		d := &s.objects[i]
		gvr := d.mapping.Resource
		if byGVR[gvr] == nil {
			byGVR[gvr] = map[string]bool{}
		}
		byGVR[gvr][d.key.ns] = true
	}
	var keys []listKey
	for gvr, nss := range byGVR {
		if !nss[""] && !neverClusterWide[gvr.GroupResource()] && s.clusterWide(nss) {
			keys = append(keys, listKey{gvr: gvr, ns: allNamespaces})
			continue
		}
		for ns := range nss {
			keys = append(keys, listKey{gvr: gvr, ns: ns})
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].gvr.String() != keys[j].gvr.String() {
			return keys[i].gvr.String() < keys[j].gvr.String()
		}
		return keys[i].ns < keys[j].ns
	})
	st := &liveState{found: make([]bool, len(s.objects)), failed: map[listKey]error{}, listed: map[listKey]bool{}}
	owners := s.extraOwners()
	// A few LISTs at a time: the scan waits on the API server far more than
	// it works, and the shared rate limiter still bounds the request rate.
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		done int
		sem  = make(chan struct{}, listWorkers)
	)
	gvks := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for i := range s.objects {
		gvks[s.objects[i].mapping.Resource] = s.objects[i].mapping.GroupVersionKind
	}
	s.saveListPlan(keys, gvks)
	handle := func(it *listItem) error {
		di, found, extra, err := s.keep(it, owners)
		if err != nil {
			return err
		}
		if di >= 0 {
			mu.Lock()
			st.found[di] = true
			mu.Unlock()
			if found != nil {
				visit(*found)
			}
		}
		if extra != nil {
			mu.Lock()
			st.extra = append(st.extra, *extra)
			mu.Unlock()
		}
		return nil
	}
	list := func(k listKey) error {
		return s.c.streamPages(ctx, k.gvr, gvks[k.gvr], k.namespace(), s.pageSizeOf(k), handle)
	}
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		p := s.takePrefetch(k, gvks[k.gvr])
		go func(k listKey) {
			defer func() { <-sem; wg.Done() }()
			var err error
			if p != nil {
				// Started before Git was rendered, from the plan.
				p.take(handle)
				<-p.done
				err = p.err
			} else {
				err = list(k)
			}
			if err != nil && k.ns == allNamespaces && errors.Is(err, errForbidden) {
				// No cluster-wide right: fall back to one list per namespace.
				for n := range byGVR[k.gvr] {
					nk := listKey{gvr: k.gvr, ns: n}
					err := list(nk)
					mu.Lock()
					st.finish(nk, err)
					mu.Unlock()
				}
			} else {
				mu.Lock()
				st.finish(k, err)
				mu.Unlock()
			}
			mu.Lock()
			done++
			s.progress("list", done, len(keys))
			mu.Unlock()
		}(k)
	}
	s.stopPrefetches()
	wg.Wait()
	return st
}

// pageSizeOf is the page size of the LIST of k.
func (s *scan) pageSizeOf(k listKey) int64 {
	pageSize := s.c.pageSize
	if neverClusterWide[k.gvr.GroupResource()] && pageSize > secretPageSize {
		pageSize = secretPageSize
	}
	return pageSize
}

// listWorkers is how many LISTs the scan runs at once.
const listWorkers = 4

// allNamespaces marks a cluster-wide list of a namespaced resource.
const allNamespaces = "\x00all"

// foundObject is a declared object as a page held it.
type foundObject struct {
	index int // in scan.objects
	// live is the object without its status; managedFields is the JSON
	// of its metadata.managedFields (decodeLive). live is nil when it has
	// a verdict to check first (in what the verdict cache read), and its
	// raw bytes and head to decode should the verdict not hold
	// (decodeLater).
	live          *unstructured.Unstructured
	managedFields []byte
	verdict       *verdict
	head          itemHead
	raw           []byte
	// git is the hash of Git's side (gitHash), "" without a cache; uid
	// and resourceVersion are the live object's, for the cache's verdict.
	git, uid, resourceVersion string
}

// keep decides what the scan keeps of one listed item: a declared object
// (di, its index in scan.objects, or -1) whole to compare (found), or
// nothing of it when the verdict cache settles it; with Extra the
// identity of an undeclared one that an app's tracking key names (extra);
// or nothing. Only a declared object is decoded whole; of any other only
// its identity, and its labels and annotations with Extra.
func (s *scan) keep(it *listItem, owners extraOwners) (di int, found *foundObject, extra *extraObject, err error) {
	key := keyOfHead(it.head)
	if di, ok := s.declared[key]; ok {
		git, v := s.cachedVerdict(di, it.head)
		switch {
		case v != nil && len(v.Dismissed) == 0:
			s.useVerdict(di, v)
			// Nothing reads Git's object any more (gitScalers did).
			s.objects[di].obj, s.objects[di].load, s.objects[di].twin = nil, nil, nil
			return di, nil, nil, nil
		case v != nil:
			// Whether it holds depends on the classification context,
			// which the compare workers wait for (the page does not): they
			// get the item's bytes, to decode should it not hold. An item
			// read ahead is a copy already: at 20k objects, warm, some
			// 8,000 were copied twice.
			raw := it.raw
			if !it.owned {
				raw = bytes.Clone(raw)
			}
			return di, &foundObject{index: di, verdict: v, head: it.head, raw: raw, git: git,
				uid: it.head.Metadata.UID, resourceVersion: it.head.Metadata.ResourceVersion}, nil, nil
		}
		u, managedFields, err := it.decode()
		if err != nil {
			return -1, nil, nil, fmt.Errorf("%s %s/%s: %w", key.kind, key.ns, key.name, err)
		}
		return di, &foundObject{index: di, live: u, managedFields: managedFields, git: git, uid: it.head.Metadata.UID, resourceVersion: it.head.Metadata.ResourceVersion}, nil, nil
	}
	if !s.opts.Extra {
		return -1, nil, nil, nil
	}
	if ai, annotations, ok := owners.of(s, it); ok {
		ignored, hook := uncounted(s.tracking[ai], annotations)
		if hook {
			return -1, nil, nil, nil
		}
		h := it.head
		return -1, nil, &extraObject{app: ai, apiVersion: h.APIVersion, kind: h.Kind, namespace: h.Metadata.Namespace, name: h.Metadata.Name, ignored: ignored}, nil
	}
	return -1, nil, nil, nil
}

// finish records how the list of k ended.
func (st *liveState) finish(k listKey, err error) {
	if err != nil {
		st.failed[k] = err
		return
	}
	st.listed[k] = true
}

// listErr returns the error of the list that should have read d, if any.
func (st *liveState) listErr(d desired) error {
	gvr := d.mapping.Resource
	if err := st.failed[listKey{gvr: gvr, ns: d.key.ns}]; err != nil {
		return err
	}
	if st.listed[listKey{gvr: gvr, ns: d.key.ns}] {
		return nil
	}
	return st.failed[listKey{gvr: gvr, ns: allNamespaces}]
}

// decodeLater decodes the object of a verdict that did not hold.
func (f *foundObject) decodeLater() error {
	it := listItem{head: f.head, raw: f.raw}
	u, managedFields, err := it.decode()
	if err != nil {
		return err
	}
	f.live, f.managedFields, f.raw = u, managedFields, nil
	return nil
}
