package scanner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// A warm scan (Options.CacheDir) starts the LISTs the last scan made before
// it renders, so that the API server reads and encodes their pages while
// the scan renders Git, rather than after. Which LISTs to make is only
// known once every app is rendered (read); until then the scan goes by the
// list plan the last scan kept in the cache. A planned LIST reads its
// items ahead, keeping their bytes, until the LISTs have read
// prefetchBudget bytes between them; then it stops reading (what the API
// server sends waits in the connection's flow-control window) until read
// takes it. read then hands it what it read, then the rest, with the
// scan's handling of items and errors, exactly as if read had started it;
// a planned LIST read does not need is cancelled. Only the first
// listWorkers planned LISTs are started early: when Git has not changed,
// the ones read starts first, so no more LISTs run at once than without a
// plan.

// listPlanFile is the list plan in Options.CacheDir.
const listPlanFile = "lists.json"

// listPlanMax bounds the plan file read: a few hundred bytes a LIST.
const listPlanMax = 4 << 20

// prefetchBudget bounds the bytes of the items the planned LISTs read
// before read takes them: the LISTs of some 7,000 objects like the
// bench's (11 MB at 5,000). At 4 MiB, a warm 5k scan read a third of its
// pages ahead and waited on the API server for the rest after its render:
// 0.62 s against 0.54 s with all of them read ahead (medians of 15 runs
// in turn). Once discovery no longer queued behind these LISTs (62c4e39)
// that gap shrank to 0.415 against 0.39 s (10 runs each, 16 MiB), while
// every MiB read ahead is held at the scan's peak: 32 MiB cost a warm
// 20k scan 30 MiB of RSS and bought it nothing measurable.
// A variable for the tests.
var prefetchBudget int64 = 16 << 20

// listPlan is the plan file: the LISTs one scan made, in the order read
// makes them. Build and Server are the verdict cache's: a plan of another
// build or API server is not used.
type listPlan struct {
	Build  string        `json:"build"`
	Server string        `json:"server"`
	Lists  []plannedList `json:"lists"`
}

type plannedList struct {
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	Kind     string `json:"kind"`
	// Namespace is "" for a cluster-scoped resource; All lists a
	// namespaced one in every namespace.
	Namespace string `json:"namespace,omitempty"`
	All       bool   `json:"all,omitempty"`
}

func (p plannedList) key() (listKey, schema.GroupVersionKind) {
	k := listKey{gvr: schema.GroupVersionResource{Group: p.Group, Version: p.Version, Resource: p.Resource}, ns: p.Namespace}
	if p.All {
		k.ns = allNamespaces
	}
	return k, schema.GroupVersionKind{Group: p.Group, Version: p.Version, Kind: p.Kind}
}

func planned(k listKey, gvk schema.GroupVersionKind) plannedList {
	return plannedList{Group: k.gvr.Group, Version: k.gvr.Version, Resource: k.gvr.Resource, Kind: gvk.Kind, Namespace: k.namespace(), All: k.ns == allNamespaces}
}

// prefetch is one LIST started from the plan.
type prefetch struct {
	gvk    schema.GroupVersionKind
	cancel context.CancelFunc
	// take hands the LIST its item handler (nil: not needed, it stops),
	// once; ready closes then.
	once  sync.Once
	ready chan struct{}
	fn    func(*listItem) error
	// read are the items read before ready, their bytes copied; after
	// ready, taken is true. Only the LIST's goroutine touches these.
	read  []listItem
	taken bool
	// done closes when the LIST has ended, with err.
	done chan struct{}
	err  error
}

// item handles one item of the LIST: it keeps it while the LIST is not
// taken and the budget lasts, else waits to be taken, then hands what it
// kept and the item to fn.
func (p *prefetch) item(ctx context.Context, budget *atomic.Int64, it *listItem) error {
	if !p.taken {
		select {
		case <-p.ready:
		default:
			if budget.Add(-int64(len(it.raw))) >= 0 {
				kept := *it
				kept.raw, kept.owned = bytes.Clone(it.raw), true
				p.read = append(p.read, kept)
				return nil
			}
			select {
			case <-p.ready:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := p.handOver(); err != nil {
			return err
		}
	}
	if p.fn == nil {
		return errNotNeeded
	}
	return p.fn(it)
}

// handOver, once the LIST is taken, hands fn the items read before.
func (p *prefetch) handOver() error {
	p.taken = true
	read := p.read
	p.read = nil
	if p.fn == nil {
		return errNotNeeded
	}
	for i := range read {
		if err := p.fn(&read[i]); err != nil {
			return err
		}
		read[i] = listItem{}
	}
	return nil
}

func (p *prefetch) take(fn func(*listItem) error) {
	p.once.Do(func() {
		p.fn = fn
		close(p.ready)
	})
}

// cacheServer names the API server the verdicts and the list plan in the
// scan cache are for.
func (s *scan) cacheServer() string {
	return s.opts.RESTConfig.Host + " " + s.c.version
}

// prefetchLists starts the first listWorkers LISTs of the plan in the
// cache, if any; read takes them (takePrefetch), and stopPrefetches ends
// what read did not take.
func (s *scan) prefetchLists(ctx context.Context) {
	if s.opts.CacheDir == "" {
		return
	}
	path := filepath.Join(s.opts.CacheDir, listPlanFile)
	data, err := render.ReadCacheFile(path, listPlanMax)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.opts.Logger.Warn("the list plan in the scan cache is not used: the LISTs start once Git is rendered", "path", path, "err", err)
		}
		return
	}
	var plan listPlan
	if err := json.Unmarshal(data, &plan); err != nil {
		s.opts.Logger.Warn("the list plan in the scan cache is not used: the LISTs start once Git is rendered", "path", path, "err", err)
		return
	}
	if plan.Build != render.BuildIdentity() || plan.Server != s.cacheServer() {
		return
	}
	s.listPlan = plan.Lists
	s.prefetched = map[listKey]*prefetch{}
	budget := &atomic.Int64{}
	budget.Store(prefetchBudget)
	for _, pl := range plan.Lists[:min(len(plan.Lists), listWorkers)] {
		k, gvk := pl.key()
		if k.gvr.Version == "" || k.gvr.Resource == "" || s.prefetched[k] != nil {
			continue
		}
		pctx, cancel := context.WithCancel(ctx)
		p := &prefetch{gvk: gvk, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
		s.prefetched[k] = p
		go func() {
			defer close(p.done)
			err := s.c.streamPages(pctx, k.gvr, gvk, k.namespace(), s.pageSizeOf(k), func(it *listItem) error {
				return p.item(pctx, budget, it)
			})
			if !p.taken {
				// The LIST ended (every page read, or failed) before read
				// took it: what it read comes first, as it came first.
				select {
				case <-p.ready:
					if herr := p.handOver(); herr != nil {
						err = listError(k.gvr, k.namespace(), herr)
					}
				case <-pctx.Done():
					err = pctx.Err()
				}
			}
			p.err = err
		}()
	}
}

// errNotNeeded stops a planned LIST that read does not make.
var errNotNeeded = errors.New("the scan does not need this LIST")

// takePrefetch returns the planned LIST of k, started with gvk, if one
// was started and read may take it; read hands it fn (prefetch.take).
func (s *scan) takePrefetch(k listKey, gvk schema.GroupVersionKind) *prefetch {
	p := s.prefetched[k]
	if p == nil || p.gvk != gvk {
		return nil
	}
	delete(s.prefetched, k)
	return p
}

// stopPrefetches ends the planned LISTs read did not take.
func (s *scan) stopPrefetches() {
	for k, p := range s.prefetched {
		p.cancel()
		p.take(nil)
		delete(s.prefetched, k)
	}
}

// saveListPlan keeps the LISTs read made, in its order, for the next scan,
// when they are not the plan it read.
func (s *scan) saveListPlan(keys []listKey, gvks map[schema.GroupVersionResource]schema.GroupVersionKind) {
	if s.opts.CacheDir == "" {
		return
	}
	lists := make([]plannedList, 0, len(keys))
	for _, k := range keys {
		lists = append(lists, planned(k, gvks[k.gvr]))
	}
	if slices.Equal(lists, s.listPlan) {
		return
	}
	data, err := json.Marshal(listPlan{Build: render.BuildIdentity(), Server: s.cacheServer(), Lists: lists})
	if err == nil {
		err = report.WritePrivateFileAtomic(filepath.Join(s.opts.CacheDir, listPlanFile), data)
	}
	if err != nil {
		s.opts.Logger.Warn("the list plan is not kept in the scan cache: the next scan starts its LISTs once Git is rendered", "err", err)
	}
}
