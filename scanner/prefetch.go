package scanner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// The kinds and namespaces a scan lists come from its rendered objects, so
// its LISTs could only start once every app had rendered: wall time was the
// render plus the LISTs. A scheduled scan mostly lists what the last one
// listed, so with a cache (Options.CacheDir) the scan keeps its list plan
// (lists.json) and the next one sends those LISTs while its apps render.
// What a page holds is kept only for the objects the last scan declared
// (the verdicts' objects and the plan's unsettled ones); of every other
// item only a hash of its name, so that an object Git declares now but did
// not then, and which a LIST read early and let go, is noticed: its list is
// read again after the render. Once the apps have rendered, each list of
// this scan's own plan that was read early, whole, and without an error is
// used as if it had just been read; every other is listed as before.
// Nothing is compared from a list read early that the plan does not hold.

// listPlanFileName is the list plan in Options.CacheDir.
const listPlanFileName = "lists.json"

// listPlanFormat is the plan file's format; a file of another is ignored.
const listPlanFormat = 1

// listPlanFileMax bounds the plan file read (a list is about 80 bytes, an
// unsettled object about as much).
const listPlanFileMax = 64 << 20

// prefetchBudget bounds the bytes of page items the early LISTs keep for
// the render to end: a list past it is let go and read again after the
// render, so the early LISTs never hold more than this beyond what the
// scan held before.
const prefetchBudget = 256 << 20

// errPrefetchBudget stops an early LIST that would keep past prefetchBudget.
var errPrefetchBudget = errors.New("the early LISTs keep prefetchBudget bytes already")

// listPlan is the file.
type listPlan struct {
	Format int           `json:"format"`
	Build  string        `json:"build"`
	Server string        `json:"server"`
	Lists  []plannedList `json:"lists"`
	// Unsettled are the declared objects with no verdict: those found
	// with drift, missing, or with an error. Their items are kept by the
	// next scan's early LISTs, as the verdicts' objects are.
	Unsettled []plannedObject `json:"unsettled,omitempty"`
}

// plannedList is one LIST: a resource in one namespace, or cluster-wide
// (All), with the kind of its items.
type plannedList struct {
	Group     string `json:"g,omitempty"`
	Version   string `json:"v"`
	Resource  string `json:"r"`
	Kind      string `json:"k"`
	Namespace string `json:"ns,omitempty"`
	All       bool   `json:"all,omitempty"`
}

type plannedObject struct {
	Group     string `json:"g,omitempty"`
	Kind      string `json:"k"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"n"`
}

func (l plannedList) key() listKey {
	k := listKey{gvr: schema.GroupVersionResource{Group: l.Group, Version: l.Version, Resource: l.Resource}, ns: l.Namespace}
	if l.All {
		k.ns = allNamespaces
	}
	return k
}

// prefetch is the early LISTs of one scan.
type prefetch struct {
	done  chan struct{}
	lists map[listKey]*earlyList
	// read is the plan file as read, so that an unchanged plan is not
	// written again.
	read []byte
}

// earlyList is what one early LIST kept.
type earlyList struct {
	gvk schema.GroupVersionKind
	// items are the items of objects the last scan declared, with their
	// bytes (owned); seen holds the hash of every other item's key.
	items []listItem
	kept  map[objectKey]bool
	seen  map[uint64]bool
	// extra are the undeclared items an app's tracking key names, with
	// Options.Extra.
	extra []extraObject
	err   error
}

var prefetchSeed = maphash.MakeSeed()

func keyHash(k objectKey) uint64 { return maphash.Comparable(prefetchSeed, k) }

// saw reports whether the list read k without keeping it.
func (l *earlyList) saw(k objectKey) bool { return !l.kept[k] && l.seen[keyHash(k)] }

// startPrefetch sends the LISTs of the last scan's plan, if the cache has
// one for this build and server, while the apps render; nil when there is
// none. cached waits for the verdict cache, whose objects the early
// LISTs keep.
func (s *scan) startPrefetch(ctx context.Context, cached func() *verdicts) *prefetch {
	if s.opts.CacheDir == "" {
		return nil
	}
	path := filepath.Join(s.opts.CacheDir, listPlanFileName)
	data, err := render.ReadCacheFile(path, listPlanFileMax)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.opts.Logger.Warn("the list plan in the scan cache is not used: the LISTs wait for the render", "file", path, "err", err)
		}
		return nil
	}
	var plan listPlan
	if err := verdictJSON.Unmarshal(data, &plan); err != nil {
		s.opts.Logger.Warn("the list plan in the scan cache is not used: the LISTs wait for the render", "file", path, "err", err)
		return nil
	}
	p := &prefetch{done: make(chan struct{}), lists: map[listKey]*earlyList{}, read: data}
	if plan.Format != listPlanFormat || plan.Build != render.BuildIdentity() || plan.Server != s.server() {
		close(p.done)
		return p // written anew for this build and server
	}
	for _, l := range plan.Lists {
		p.lists[l.key()] = &earlyList{gvk: schema.GroupVersionKind{Group: l.Group, Version: l.Version, Kind: l.Kind},
			kept: map[objectKey]bool{}, seen: map[uint64]bool{}}
	}
	appIndex := map[string]int{}
	for i, a := range s.cfg.Apps {
		appIndex[a.Name] = i
	}
	go func() {
		defer close(p.done)
		keep := map[objectKey]bool{}
		if v := cached(); v != nil {
			for k := range v.old {
				keep[k] = true
			}
		}
		for _, o := range plan.Unsettled {
			keep[objectKey{o.Group, o.Kind, o.Namespace, o.Name}] = true
		}
		var (
			wg   sync.WaitGroup
			sem  = make(chan struct{}, listWorkers)
			held atomic.Int64
		)
		for k, l := range p.lists {
			wg.Add(1)
			sem <- struct{}{}
			go func(k listKey, l *earlyList) {
				defer func() { <-sem; wg.Done() }()
				ns := k.ns
				if ns == allNamespaces {
					ns = ""
				}
				l.err = s.c.streamPages(ctx, k.gvr, l.gvk, ns, s.listPageSize(k), func(it *listItem) error {
					key := keyOfHead(it.head)
					if !keep[key] {
						l.seen[keyHash(key)] = true
						if s.opts.Extra {
							if e := s.trackedExtra(it, appIndex); e != nil {
								l.extra = append(l.extra, *e)
							}
						}
						return nil
					}
					if held.Add(int64(len(it.raw))) > prefetchBudget {
						return errPrefetchBudget
					}
					l.kept[key] = true
					l.items = append(l.items, listItem{head: it.head, raw: bytes.Clone(it.raw)})
					return nil
				})
				if l.err != nil {
					l.items, l.extra = nil, nil
				}
			}(k, l)
		}
		wg.Wait()
	}()
	return p
}

// take waits for the early LISTs and returns those of keys (this scan's
// own plan) that it can use as they were read: whole, and having kept
// every object this scan declares that they held. The others are counted
// as listed again (Relisted) or not used (Unused).
func (p *prefetch) take(s *scan, keys []listKey) (map[listKey]*earlyList, *report.CacheStats) {
	stats := &report.CacheStats{}
	if p == nil {
		return nil, stats
	}
	<-p.done
	usable := map[listKey]*earlyList{}
	all := map[schema.GroupVersionResource]bool{}
	for _, k := range keys {
		if k.ns == allNamespaces {
			all[k.gvr] = true
		}
		if l := p.lists[k]; l != nil && l.err == nil {
			usable[k] = l
		}
	}
	for _, d := range s.objects {
		k := listKey{gvr: d.mapping.Resource, ns: d.key.ns}
		if all[k.gvr] {
			k.ns = allNamespaces
		}
		if l := usable[k]; l != nil && l.saw(d.key) {
			// Declared now, not by the last scan, and live: the early
			// LIST let its bytes go.
			delete(usable, k)
		}
	}
	for _, k := range keys {
		if usable[k] != nil {
			stats.ListsEarly++
		} else if p.lists[k] != nil {
			stats.ListsAgain++
		}
	}
	for k := range p.lists {
		if !slices.Contains(keys, k) {
			stats.ListsUnused++
		}
	}
	return usable, stats
}

// replay hands each item the early LIST kept to fn, as a LIST would.
func (l *earlyList) replay(fn func(*listItem) error) error {
	for i := range l.items {
		if err := fn(&l.items[i]); err != nil {
			return err
		}
		l.items[i] = listItem{} // let its bytes go
	}
	return nil
}

// server names the API server in the cache files: its address and version.
func (s *scan) server() string { return s.opts.RESTConfig.Host + " " + s.c.version }

// savePlan writes this scan's list plan for the next scan, unless it is the
// one read.
func (s *scan) savePlan(p *prefetch, keys []listKey, gvks map[schema.GroupVersionResource]schema.GroupVersionKind) error {
	plan := listPlan{Format: listPlanFormat, Build: render.BuildIdentity(), Server: s.server()}
	for _, k := range keys {
		gvk := gvks[k.gvr]
		l := plannedList{Group: k.gvr.Group, Version: k.gvr.Version, Resource: k.gvr.Resource, Kind: gvk.Kind, Namespace: k.ns}
		if k.ns == allNamespaces {
			l.Namespace, l.All = "", true
		}
		plan.Lists = append(plan.Lists, l)
	}
	settled := s.verdicts.keptKeys()
	for _, d := range s.objects {
		if !settled[d.key] {
			plan.Unsettled = append(plan.Unsettled, plannedObject{d.key.group, d.key.kind, d.key.ns, d.key.name})
		}
	}
	slices.SortFunc(plan.Unsettled, func(a, b plannedObject) int {
		return cmpKey(objectKey{a.Group, a.Kind, a.Namespace, a.Name}, objectKey{b.Group, b.Kind, b.Namespace, b.Name})
	})
	data, err := verdictJSON.Marshal(plan)
	if err != nil {
		return err
	}
	if p != nil && bytes.Equal(data, p.read) {
		return nil
	}
	if err := report.WritePrivateFileAtomic(filepath.Join(s.opts.CacheDir, listPlanFileName), data); err != nil {
		return fmt.Errorf("the scan cache: %w", err)
	}
	return nil
}

// listPageSize is the page size of the LIST k: Options.PageSize, but at
// most secretPageSize for Secrets.
func (s *scan) listPageSize(k listKey) int64 {
	pageSize := s.c.pageSize
	if neverClusterWide[k.gvr.GroupResource()] && (pageSize == 0 || pageSize > secretPageSize) {
		pageSize = secretPageSize
	}
	return pageSize
}

// trackedExtra is the undeclared item it, if an app's tracking label or
// annotation names an app of appIndex.
func (s *scan) trackedExtra(it *listItem, appIndex map[string]int) *extraObject {
	labels, annotations := it.tracking()
	for _, k := range trackingKeys {
		name := labels[k]
		if name == "" {
			name = annotations[k]
		}
		if ai, ok := appIndex[name]; ok {
			h := it.head
			return &extraObject{app: ai, apiVersion: h.APIVersion, kind: h.Kind, namespace: h.Metadata.Namespace, name: h.Metadata.Name}
		}
	}
	return nil
}
