package scanner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/audit"
	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/report"
)

// context the classifier needs beyond the object itself.
type classifyContext struct {
	webhooks []admissionregistrationv1.MutatingWebhookConfiguration
	// apps hashes, by app, the webhooks and the app's classification
	// settings (appContexts): the verdict cache's key to them.
	apps     []string
	nsLabels map[string]map[string]string
	scalers  map[objectKey][]classify.Scaler
}

// gather reads what classification needs besides the namespaces' labels
// (readNamespaces): the mutating webhooks and the autoscalers.
func (s *scan) gather(ctx context.Context, gitScalers map[objectKey][]classify.Scaler) classifyContext {
	cc := classifyContext{scalers: gitScalers}
	var err error
	cc.webhooks, err = s.c.webhooksAhead() // the LIST connect started
	if s.verdicts != nil {
		cc.apps = s.appContexts(webhooksID(cc.webhooks, err))
	}
	if err != nil {
		s.warn(report.Warning{Code: report.WarnWebhooksUnreadable, Message: fmt.Sprintf("cannot list MutatingWebhookConfigurations, so injected fields do not name the webhook behind them and hints cannot say which webhook matches: %v", err)})
	}
	cc.nsLabels = s.namespaces.labels
	s.warnNamespaces(s.namespaces.failed, selectsNamespaces(cc.webhooks))
	s.gatherScalers(ctx, cc.scalers, s.namespaces.declared)
	return cc
}

// gatherAhead reads the namespaces and Git's autoscalers, then starts
// gather, as soon as the apps are rendered: its LISTs (the live
// autoscalers) are then sent while the scan hashes and types Git's
// objects, not after. The returned func waits for gather.
func (s *scan) gatherAhead(ctx context.Context) func() classifyContext {
	s.namespaces = s.readNamespaces(ctx)
	gitScalers := s.gitScalers()
	cc := ahead(func() (classifyContext, error) { return s.gather(ctx, gitScalers), nil })
	return func() classifyContext {
		c, _ := cc() // gather warns of what it could not read
		return c
	}
}

// scalerKinds are the autoscalers that own fields of their target, with the
// path of the target reference in their spec.
var scalerKinds = []struct {
	gvk schema.GroupVersionKind
	ref []string
}{
	{schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}, []string{"spec", "scaleTargetRef"}},
	{schema.GroupVersionKind{Group: "autoscaling.k8s.io", Version: "v1", Kind: "VerticalPodAutoscaler"}, []string{"spec", "targetRef"}},
	{schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}, []string{"spec", "scaleTargetRef"}},
}

// addScaler adds to out the autoscaler u of kind, if it targets an object
// at ref in its spec.
func addScaler(out map[objectKey][]classify.Scaler, kind string, u *unstructured.Unstructured, ref []string) {
	target, ok, _ := unstructured.NestedStringMap(u.Object, ref...)
	if !ok || target["name"] == "" {
		return
	}
	gv, _ := schema.ParseGroupVersion(target["apiVersion"])
	if target["apiVersion"] == "" {
		gv = schema.GroupVersion{Group: "apps"}
	}
	k := objectKey{gv.Group, target["kind"], u.GetNamespace(), target["name"]}
	for _, have := range out[k] {
		if have.Kind == kind && have.Name == u.GetName() {
			return
		}
	}
	out[k] = append(out[k], classify.Scaler{Kind: kind, Name: u.GetName()})
}

// gitScalers finds the autoscalers that Git's own objects hold, before
// anything is listed: a page's objects are then let go of as they are
// compared, while gather still reads the live autoscalers.
func (s *scan) gitScalers() map[objectKey][]classify.Scaler {
	out := map[objectKey][]classify.Scaler{}
	for _, sk := range scalerKinds {
		for i := range s.objects {
			d := &s.objects[i]
			if d.mapping.GroupVersionKind.GroupKind() != sk.gvk.GroupKind() {
				continue
			}
			// An autoscaler that does not decode is reported when it is
			// compared.
			if obj, err := d.git(); err == nil {
				addScaler(out, sk.gvk.Kind, obj, sk.ref)
			}
		}
	}
	return out
}

// gatherScalers adds to out the autoscalers live in the app namespaces
// that target objects.
func (s *scan) gatherScalers(ctx context.Context, out map[objectKey][]classify.Scaler, nss map[string]bool) {
	add := func(kind string, u *unstructured.Unstructured, ref []string) { addScaler(out, kind, u, ref) }
	for _, sk := range scalerKinds {
		m, err := s.c.mapper.RESTMapping(sk.gvk.GroupKind())
		if err != nil {
			s.warnScalerMapping(sk.gvk, err)
			continue
		}
		// Like the kinds the apps declare: one LIST cluster-wide when the
		// apps span most namespaces, else one per namespace.
		var lists []string
		if s.clusterWide(nss) {
			items, err := s.c.list(ctx, m.Resource, "")
			if err == nil {
				for i := range items {
					add(sk.gvk.Kind, &items[i], sk.ref)
				}
				continue
			}
			s.opts.Logger.Debug("cannot list autoscalers cluster-wide", "gvk", sk.gvk.String(), "err", err)
		}
		for ns := range nss {
			lists = append(lists, ns)
		}
		for _, ns := range lists {
			items, err := s.c.list(ctx, m.Resource, ns)
			if err != nil {
				s.warnAppsIn(ns, report.WarnAutoscalersUnreadable, fmt.Sprintf("cannot list %s in namespace %s, so a fight over replicas or resources with one of them gets no hint: %v", sk.gvk.Kind, ns, err))
				continue
			}
			for i := range items {
				add(sk.gvk.Kind, &items[i], sk.ref)
			}
		}
	}
}

// loadPlanned loads, in the background, the schemas of the kinds the last
// scan listed (its list plan): on a warm scan they are those of Git's
// objects, and decoding them (about 20 ms at 5,000 objects) then happens
// while the apps render, not between the render and the compare, where
// loadSchemas finds them loaded. A kind no longer in Git costs its
// schemas' decoding and nothing else: nothing of it is compared or warned.
func (s *scan) loadPlanned() {
	var kinds []schema.GroupVersionKind // load takes each kind once
	for _, pl := range s.listPlan {
		if _, gvk := pl.key(); gvk.Version != "" && gvk.Kind != "" {
			kinds = append(kinds, gvk)
		}
	}
	if len(kinds) > 0 {
		go func() { _ = s.c.typer.load(kinds) }() // loadSchemas's load says what failed
	}
}

// prepareAhead loads the schemas of the kinds the apps declare and finds
// the fields each chart renders differently (findUnstable types both
// renders), in the background: the LISTs are sent first. In a cold scan
// the loading is 10-15 ms on one core, and the API server takes 30-40 ms
// to encode each LIST's first page; with the LISTs waiting for the
// schemas, both its cores and one of the scan's had nothing to do. The
// compare workers wait for it, and so does a listed item's verdict
// (cachedVerdict): its key names the schema, and keep lets go of the
// second render that findUnstable reads. Its error (a type converter
// that cannot be built) fails the scan.
func (s *scan) prepareAhead() {
	wait := ahead(func() (struct{}, error) {
		if err := s.loadSchemas(); err != nil {
			return struct{}{}, err
		}
		s.warnUnpublished()
		s.findUnstable()
		s.warnUnstable()
		return struct{}{}, nil
	})
	s.prepared = func() error {
		_, err := wait()
		return err
	}
}

// loadSchemas reads the OpenAPI v3 schemas of every kind the apps declare,
// one request per group/version, and keeps each group/version's schema ID
// (scan.schemaIDs) for the verdicts' keys.
func (s *scan) loadSchemas() error {
	var kinds []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	for _, d := range s.objects {
		gvk := d.mapping.GroupVersionKind
		if !seen[gvk] {
			seen[gvk] = true
			kinds = append(kinds, gvk)
		}
	}
	err := s.c.typer.load(kinds)
	s.schemaIDs = map[schema.GroupVersion]string{}
	for _, gvk := range kinds {
		s.schemaIDs[gvk.GroupVersion()] = s.c.typer.schemaID(gvk.GroupVersion())
	}
	return err
}

// compare lists the cluster (read) and diffs every desired object with its
// live self as the page holding it arrives, on Workers goroutines, so that
// of the live state only the pages in flight and the objects waiting for a
// worker are ever held. The workers start once the schemas are loaded
// (s.prepared), the classification context (gather) and the audit log are
// read; until then the LISTs go on and what they find waits in a queue.
// Objects no page held are then Missing, or errors when the list that
// should have held them failed.
func (s *scan) compare(ctx context.Context, gathered func() classifyContext, auditDone func() *audit.Index) (*liveState, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Without an audit log to wait for, the workers start as soon as
	// gather's few LISTs are back, so the queue is bounded from the start.
	q := &objectQueue{limit: queueLimit, started: len(s.auditPaths()) == 0}
	q.cond = sync.NewCond(&q.mu)
	ready := make(chan struct{})
	var prepErr error
	go func() {
		defer close(ready)
		if prepErr = s.prepared(); prepErr != nil {
			// Nothing can be compared: the LISTs stop, and the workers
			// let go of what they had read.
			cancel()
		}
		s.cc = gathered()
		s.audit = auditDone()
		q.start()
	}()
	var (
		wg       sync.WaitGroup
		compared atomic.Int64
		listed   atomic.Bool // every LIST has ended: compare progress is shown
	)
	for w := 0; w < s.opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			for {
				f, ok := q.pop()
				if !ok {
					return
				}
				if prepErr != nil {
					continue
				}
				s.compareFound(s.objects[f.index], f)
				// The desired object is not needed any more: the report
				// object holds what was found.
				s.objects[f.index].obj, s.objects[f.index].load = nil, nil
				if n := int(compared.Add(1)); listed.Load() && n%50 == 0 {
					s.progress("compare", n, len(s.objects))
				}
			}
		}()
	}
	live := s.read(ctx, q.push)
	listed.Store(true)
	q.close()
	wg.Wait()
	<-ready
	if prepErr != nil {
		return nil, prepErr
	}
	for i, d := range s.objects {
		ro := &s.r.Apps[d.app].Objects[d.object]
		if err := live.listErr(d); err != nil {
			// A list that failed after some of its pages: what those
			// pages held is not reported as if the list had finished.
			ro.Status, ro.Error, ro.Findings, ro.Dismissed, ro.Owner = report.StatusError, err.Error(), nil, nil, ""
			continue
		}
		if !live.found[i] {
			ro.Status = report.StatusMissing
		}
	}
	s.progress("compare", len(s.objects), len(s.objects))
	return live, nil
}

// queueLimit is how many found objects may wait for a compare worker
// before the LISTs wait for the workers: a page's worth.
const queueLimit = 500

// objectQueue hands found objects from the LISTs to the compare workers.
// Once started, a LIST that gets ahead of the workers by limit objects
// waits (it stops reading its page) until they catch up, so the live state
// held is bounded by limit, not by the cluster. Before (while the audit log
// is still read, which may take minutes) it never waits: objects queue up,
// as they were all held before pages were compared as they came, rather
// than stall a paginated LIST past its continue token's life.
type objectQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	items   []foundObject
	limit   int
	started bool
	closed  bool
}

func (q *objectQueue) push(f foundObject) {
	q.mu.Lock()
	for q.started && len(q.items) >= q.limit {
		q.cond.Wait()
	}
	q.items = append(q.items, f)
	q.mu.Unlock()
	q.cond.Broadcast()
}

// start bounds the queue: from now on push waits when it is full.
func (q *objectQueue) start() {
	q.mu.Lock()
	q.started = true
	q.mu.Unlock()
}

// pop waits for an object; false once the queue is closed and empty.
func (q *objectQueue) pop() (foundObject, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return foundObject{}, false
	}
	f := q.items[0]
	q.items[0] = foundObject{}
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil // let the backing array go
	}
	q.cond.Broadcast() // a LIST may wait for room
	return f, true
}

func (q *objectQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// compareFound diffs d with the live object f that a page held, unless
// the verdict cache says it is in sync.
func (s *scan) compareFound(d desired, f foundObject) {
	if d.createOnly {
		// Its applier never updates it: that it exists is all Git says.
		s.r.Apps[d.app].Objects[d.object].Status = report.StatusInSync
		return
	}
	if f.verdict != nil {
		if s.verdictHolds(d, *f.verdict) {
			s.useVerdict(f.index, f.verdict)
			return
		}
		if err := f.decodeLater(); err != nil {
			ro := &s.r.Apps[d.app].Objects[d.object]
			ro.Status, ro.Error = report.StatusError, fmt.Sprintf("%s: %v", ro.Ref(), err)
			return
		}
	}
	s.compareOne(d, f, s.cc)
}

// compareOne diffs d with the live object f that a page held.
func (s *scan) compareOne(d desired, f foundObject, cc classifyContext) {
	ro := &s.r.Apps[d.app].Objects[d.object]
	if _, err := d.git(); err != nil {
		ro.Status, ro.Error = report.StatusError, fmt.Sprintf("%s: %v", ro.Ref(), err)
		return
	}
	if err := s.compareObject(d, f, cc, ro); err != nil {
		ro.Status, ro.Error = report.StatusError, fmt.Sprintf("%s: %v", ro.Ref(), err)
	}
}

func (s *scan) compareObject(d desired, f foundObject, cc classifyContext, ro *report.Object) error {
	l := f.live
	gvk := d.mapping.GroupVersionKind
	app := &s.cfg.Apps[d.app]
	if k := s.opts.OwnerLabel; k != "" {
		if ro.Owner = l.GetLabels()[k]; ro.Owner == "" {
			ro.Owner = l.GetAnnotations()[k]
		}
	}
	desiredObj, _ := d.git()
	paused, merge := fluxLiveMarks(*app, l, desiredObj) // before its content is taken
	hf := hintFacts{group: gvk.Group, kind: gvk.Kind, fluxMerge: merge}
	if paused == "" {
		paused = s.syncFails[d.app]
	}
	gitops := s.r.Apps[d.app].GitOps
	if d.replaced && gitops != nil && !gitops.Replace {
		g := *gitops
		g.Replace, gitops = true, &g
	}
	// The live object was decoded for this compare: its content is taken.
	liveObj := normalizeLive(l)
	git, nulls := normalizeSent(app.AppliedAs, d.obj, liveObj)
	changes, err := diff(s.c.typer, gvk, git, liveObj)
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		// Nothing to attribute or classify: no owner is asked for.
		ro.Status = report.StatusInSync
		s.recordVerdict(d, f, ro, nil)
		return nil
	}
	owners, err := ownership(f.managedFields, s.fieldSets)
	if err != nil {
		return err
	}
	obj := classify.Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: l.GetNamespace(), Name: l.GetName()}
	for _, o := range owners {
		obj.Entries = append(obj.Entries, o.entry)
	}
	obj.Webhooks = classify.MatchWebhooks(cc.webhooks, classify.Target{
		Group: gvk.Group, Version: gvk.Version, Resource: d.mapping.Resource.Resource,
		Namespaced: d.mapping.Scope.Name() == meta.RESTScopeNameNamespace,
		Labels:     l.GetLabels(), NamespaceLabels: cc.nsLabels[l.GetNamespace()],
	})
	obj.Scalers = cc.scalers[keyOf(l)]
	hf.webhooks = len(obj.Webhooks) > 0
	cl := s.classifiers[d.app]
	// The ignore rules' jq expressions run here, in this worker, bounded by
	// Options.JQ: a slow one holds up no other object.
	var tool string
	if app.GitOps != nil {
		tool = app.GitOps.Tool
	}
	ignores := s.ignorer.For(classify.IgnoreObject{App: s.r.Apps[d.app].Name, Tool: tool, Group: gvk.Group, Kind: gvk.Kind, Namespace: l.GetNamespace(), Name: l.GetName(), Live: liveObj})
	obj.Tracking = s.tracking[d.app]
	facts := &objectFacts{typer: s.c.typer, gvk: gvk, git: git, nulls: nulls, live: l}
	dismissed := report.Dismissed{}
	for _, ch := range changes {
		owner := ownerOf(owners, ch.Path)
		if app.Decryption != "" && owner != nil && cl.IsApplier(owner.Manager) {
			if why := decryptedByApplier(ch, owner.Manager); why != "" {
				s.dismiss(ro, d.app, gvk.Group, gvk.Kind, ch, owner, classify.Result{Reason: report.Encrypted, Detail: why})
				dismissed[report.Encrypted]++
				continue
			}
		}
		if touches(d.unstable, ch.Path) {
			s.dismiss(ro, d.app, gvk.Group, gvk.Kind, ch, owner, classify.Result{Reason: report.UnstableRender, Detail: "differs between two renders of the same commit"})
			dismissed[report.UnstableRender]++
			continue
		}
		var who *report.Attribution
		// An Added field nobody owns is a default unless it is a new key,
		// or replicas a scale wrote unrecorded (classify's unrecordedScale).
		if s.audit != nil && (owner != nil || ch.Type != report.TypeAdded || ch.NewKey || isReplicas(ch.Path)) {
			who = s.attribute(d, cl, obj, ch, owner)
		}
		cch := classify.Change{
			Path: pathText(ch.Path), Type: ch.Type, Owner: owner, NewKey: ch.NewKey,
			Git: text(ch.Git, ch.GitPresent), Live: text(ch.Live, ch.LivePresent),
			Attribution: who,
		}
		facts.fill(&cch, &ch)
		res := cl.Classify(obj, cch)
		if !res.Drift {
			s.dismiss(ro, d.app, gvk.Group, gvk.Kind, ch, owner, res)
			dismissed[res.Reason]++
			continue
		}
		f := res.Finding
		ch.record(&f)
		ignores.Apply(f.Pointer, &f)
		if app.Decryption != "" {
			if h := sealedHint(ch, owner); h != "" {
				f.Hint = joinHint(f.Hint, h)
			}
		}
		if paused != "" && f.Class.Deliberate() {
			f.Hint = joinHint(f.Hint, paused)
		} else if h := chartCRDHint(d.chartCRD, app.Source.Helm, gitops, f, cl); h != "" {
			f.Hint = joinHint(f.Hint, h)
		} else if h := managedNamespaceHint(d.managedNamespace, gitops, f); h != "" {
			f.Hint = joinHint(f.Hint, h)
		} else if h := argoIgnoredHint(gitops, f); h != "" {
			f.Hint = joinHint(f.Hint, h)
		} else if h := takenOverHint(gitops, hf, f, cl); h != "" {
			f.Hint = h
		} else if h := selfHealHint(gitops, hf, f); h != "" {
			f.Hint = joinHint(f.Hint, h)
		}
		if h := keptChartHint(app.Source.Helm, f, cl); h != "" {
			f.Hint = joinHint(f.Hint, h)
		}
		s.masker.mask(d.app, gvk.Group, gvk.Kind, &f)
		ro.Findings = append(ro.Findings, f)
	}
	for r, n := range dismissed { // once an object, not once a change
		s.dismissed.addN(r, n)
	}
	ro.Status = report.StatusInSync
	s.recordVerdict(d, f, ro, dismissed)
	return nil
}

// extra reports live objects that carry an app's tracking label or
// annotation but are not in Git, among the kinds and namespaces the scan
// listed anyway. Argo CD neither tracks nor prunes an object of a kind it
// excludes, so none is an Argo CD app's extra object; one marked
// IgnoreExtraneous (uncounted) is a dismissal.
func (s *scan) extra(live *liveState) {
	for _, e := range live.extra {
		if gv, err := schema.ParseGroupVersion(e.apiVersion); err == nil && s.cfg.Apps[e.app].ExcludedKinds.Excludes(gv.Group, e.kind) != "" {
			continue
		}
		if e.ignored {
			s.dismissed.addN(report.ExtraneousIgnored, 1)
			continue
		}
		s.r.Apps[e.app].Objects = append(s.r.Apps[e.app].Objects, report.Object{
			APIVersion: e.apiVersion, Kind: e.kind, Namespace: e.namespace, Name: e.name, Status: report.StatusExtra,
		})
	}
}

func joinHint(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
