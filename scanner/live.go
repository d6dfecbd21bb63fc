package scanner

import (
	"context"
	"errors"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// liveState is what the scan kept of what it read from the cluster: the
// declared objects, and for Extra the identity of the undeclared objects
// that carry an app's tracking label. Nothing else of a LIST outlives its
// page.
type liveState struct {
	objects map[objectKey]*unstructured.Unstructured
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
}

// neverClusterWide are the resources the scan lists only per namespace,
// in the namespaces where apps declare them, however many those are: a
// cluster-wide LIST of Secrets would read (and, page by page, hold) every
// Secret of every tenant to compare a few.
var neverClusterWide = map[schema.GroupResource]bool{{Group: "", Resource: "secrets"}: true}

// secretPageSize bounds a page of Secrets, which may be up to 1 MiB each
// (Helm keeps its release history in them).
const secretPageSize = 50

// read lists each resource once per namespace, or once cluster-wide when
// its objects span many namespaces (never for neverClusterWide), and keeps
// of each page only what the compare and Extra need.
func (s *scan) read(ctx context.Context) *liveState {
	byGVR := map[schema.GroupVersionResource]map[string]bool{}
	for _, d := range s.objects {
		gvr := d.mapping.Resource
		if byGVR[gvr] == nil {
			byGVR[gvr] = map[string]bool{}
		}
		byGVR[gvr][d.obj.GetNamespace()] = true
	}
	var keys []listKey
	for gvr, nss := range byGVR {
		if len(nss) > s.opts.ClusterWideAbove && !nss[""] && !neverClusterWide[gvr.GroupResource()] {
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
	st := &liveState{objects: map[objectKey]*unstructured.Unstructured{}, failed: map[listKey]error{}, listed: map[listKey]bool{}}
	appIndex := map[string]int{}
	for i, a := range s.r.Apps {
		appIndex[a.Name] = i
	}
	// A few LISTs at a time: the scan waits on the API server far more than
	// it works, and the shared rate limiter still bounds the request rate.
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		done int
		sem  = make(chan struct{}, listWorkers)
	)
	list := func(k listKey, ns string) error {
		pageSize := s.c.pageSize
		if neverClusterWide[k.gvr.GroupResource()] && (pageSize == 0 || pageSize > secretPageSize) {
			pageSize = secretPageSize
		}
		return s.c.listPages(ctx, k.gvr, ns, pageSize, func(page *unstructured.UnstructuredList) error {
			mu.Lock()
			defer mu.Unlock()
			s.keep(st, page, appIndex)
			return nil
		})
	}
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func(k listKey) {
			defer func() { <-sem; wg.Done() }()
			ns := k.ns
			if ns == allNamespaces {
				ns = ""
			}
			err := list(k, ns)
			if err != nil && k.ns == allNamespaces && errors.Is(err, errForbidden) {
				// No cluster-wide right: fall back to one list per namespace.
				for n := range byGVR[k.gvr] {
					nk := listKey{gvr: k.gvr, ns: n}
					err := list(nk, n)
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
	wg.Wait()
	return st
}

// listWorkers is how many LISTs the scan runs at once.
const listWorkers = 4

// allNamespaces marks a cluster-wide list of a namespaced resource.
const allNamespaces = "\x00all"

// keep takes from one page the objects some app declares, and with Extra
// the identity of those an app's tracking key names. Each kept object is
// copied out of the page, so the page itself (every other object in it)
// can be freed as soon as the next one arrives.
func (s *scan) keep(st *liveState, page *unstructured.UnstructuredList, appIndex map[string]int) {
	for i := range page.Items {
		u := &page.Items[i]
		key := keyOf(u)
		if _, ok := s.declared[key]; ok {
			obj := *u
			st.objects[key] = &obj
			continue
		}
		if !s.opts.Extra {
			continue
		}
		for _, k := range trackingKeys {
			name := u.GetLabels()[k]
			if name == "" {
				name = u.GetAnnotations()[k]
			}
			if ai, ok := appIndex[name]; ok {
				st.extra = append(st.extra, extraObject{app: ai, apiVersion: u.GetAPIVersion(), kind: u.GetKind(), namespace: u.GetNamespace(), name: u.GetName()})
				break
			}
		}
	}
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
	if err := st.failed[listKey{gvr: gvr, ns: d.obj.GetNamespace()}]; err != nil {
		return err
	}
	if st.listed[listKey{gvr: gvr, ns: d.obj.GetNamespace()}] {
		return nil
	}
	return st.failed[listKey{gvr: gvr, ns: allNamespaces}]
}
