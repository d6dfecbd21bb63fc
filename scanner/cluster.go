package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/flowcontrol"
)

// api reads the live state. It only ever gets and lists.
type api struct {
	dynamic dynamic.Interface
	// lists is the REST client the scan's own LISTs stream through
	// (streamPages), on the dynamic client's connection.
	lists     rest.Interface
	discovery discovery.CachedDiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	typer     *typer
	pageSize  int64
	requests  *atomic.Int64
	throttled *atomic.Int64
	version   string

	mappingsMu sync.Mutex
	mappings   map[schema.GroupVersionKind]mappingResult

	// namespacesAhead and webhooksAhead give the answers of the scan's
	// LISTs of the namespaces and of the MutatingWebhookConfigurations,
	// which connect starts (readAhead).
	namespacesAhead func() ([]unstructured.Unstructured, error)
	webhooksAhead   func() ([]admissionregistrationv1.MutatingWebhookConfiguration, error)
}

// pagedPageSize is the page size of a LIST where the scan pages
// (listPageSize): kubectl's.
const pagedPageSize = 500

// wholeListsFrom is the first API server version that serves every LIST
// without a limit from its watch cache (ConsistentListFromCache, GA and
// locked on) and writes its items out one at a time
// (StreamingCollectionEncodingToJSON, the same): such a LIST costs the
// server no read from etcd and no copy of the whole list in memory.
var wholeListsFrom = utilversion.MajorMinor(1, 34)

// listPageSize is the page size of the scan's LISTs from an API server
// of gitVersion, unless Options.PageSize sets one: 0, whole lists, from
// wholeListsFrom on, and pagedPageSize before it or when the version does
// not parse.
//
// The watch cache serves a LIST's later pages (continue) only from a
// snapshot of the resource at the first page's resourceVersion, and it
// takes a snapshot only when the resource is written; the API server's
// compaction of etcd (every 5 minutes by default) drops the snapshots
// older than it. So the pages of a resource nobody wrote since the last
// compaction (most kinds, most of the time: Services, CRDs, ConfigMaps) are
// read from etcd and decoded again, one continue after another. On the
// bench's 20,000 objects that was about 2.3 CPU s of kube-apiserver and
// 0.23 of etcd against about 0.6 for the same objects listed whole from
// the cache (docs/verified.md). The page reader streams a whole list as it
// streams a page, so the scan holds no more of it; and a whole list whose
// reader pauses (a planned LIST waiting for the render) is written to its
// end however long the pause, as the request timeout bounds a request only
// until its answer begins.
func listPageSize(gitVersion string) int64 {
	v, err := utilversion.ParseGeneric(gitVersion)
	if err != nil || v.LessThan(wholeListsFrom) {
		return pagedPageSize
	}
	return 0
}

// countingTransport counts the requests the scan sends and the 429s it
// gets, and at debug level logs each one (as kubectl -v=6 does): its
// method, path, status, when it was sent since the scan connected, and
// how long its answer took to begin.
type countingTransport struct {
	next      http.RoundTripper
	requests  *atomic.Int64
	throttled *atomic.Int64
	log       *slog.Logger
	start     time.Time
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	sent := time.Now()
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		t.throttled.Add(1)
	}
	if t.log != nil && t.log.Enabled(r.Context(), slog.LevelDebug) {
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		t.log.Debug("api request", "method", r.Method, "path", r.URL.Path, "status", status,
			"sentMs", sent.Sub(t.start).Milliseconds(), "answerMs", time.Since(sent).Milliseconds(), "err", err)
	}
	return resp, err
}

func connect(ctx context.Context, cfg *rest.Config, pageSize int64, log *slog.Logger) (*api, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		// One token bucket for every client the scan makes (discovery,
		// OpenAPI, dynamic), so together they stay within --qps and --burst.
		burst := cfg.Burst
		if burst <= 0 {
			burst = 1
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, burst)
	}
	c := &api{pageSize: pageSize, requests: &atomic.Int64{}, throttled: &atomic.Int64{}}
	start := time.Now()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, requests: c.requests, throttled: c.throttled, log: log, start: start}
	})
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	// Fail fast, with one clear line, when the cluster is not reachable.
	probe := rest.CopyConfig(cfg)
	if probe.Timeout == 0 || probe.Timeout > 15*time.Second {
		probe.Timeout = 15 * time.Second
	}
	pdc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	v, err := pdc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster at %s: %w", cfg.Host, err)
	}
	c.version = v.GitVersion
	switch {
	case c.pageSize == 0:
		c.pageSize = listPageSize(c.version)
	case c.pageSize < 0:
		c.pageSize = 0 // whole lists
	}
	hc, err := rest.HTTPClientFor(dynamic.ConfigFor(cfg))
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	c.dynamic, err = dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	lcfg := dynamic.ConfigFor(cfg)
	lcfg.GroupVersion, lcfg.APIPath = nil, "/"
	if c.lists, err = rest.UnversionedRESTClientForConfigAndClient(lcfg, hc); err != nil {
		return nil, fmt.Errorf("REST client: %w", err)
	}
	c.discovery = memory.NewMemCacheClient(dc)
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(c.discovery)
	c.typer = newTyper(dc.OpenAPIV3())
	c.readAhead(ctx)
	return c, nil
}

// readAhead sends, in the background, the small requests every scan makes
// whatever Git holds: discovery (the API versions, and the resources of
// every kind), and the LISTs of the namespaces and of the
// MutatingWebhookConfigurations. Sent when they are needed, after a warm
// scan's planned LISTs, each queued behind their pages at the API server:
// discovery held the render up by up to 100 ms, and the two LISTs, one
// after the other, the compare by 15 to 50 ms. The discovery cache makes
// the render wait for this answer rather than ask again (and ask again
// should this one fail); namespaceLabels and gather wait for theirs.
// connect sends them, before the scan starts its planned LISTs.
func (c *api) readAhead(ctx context.Context) {
	go func() { _, _ = c.discovery.ServerGroups() }()
	c.namespacesAhead = ahead(func() ([]unstructured.Unstructured, error) { return c.list(ctx, namespacesGVR, "") })
	c.webhooksAhead = ahead(func() ([]admissionregistrationv1.MutatingWebhookConfiguration, error) { return c.listWebhooks(ctx) })
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// ahead runs fn in the background and returns what waits for its answer.
func ahead[T any](fn func() (T, error)) func() (T, error) {
	var (
		v    T
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		v, err = fn()
	}()
	return func() (T, error) {
		<-done
		return v, err
	}
}

// apiVersions lists the group/versions the cluster serves, for Helm's
// .Capabilities.APIVersions.
func (c *api) apiVersions() ([]string, error) { return APIVersions(c.discovery) }

// Capabilities are what Helm's .Capabilities see of a cluster, as the scan
// renders charts with them (render.Options.KubeVersion and APIVersions).
type Capabilities struct {
	KubeVersion string
	APIVersions []string
}

// ReadCapabilities asks the cluster for its version and the group/versions
// it serves. A chart rendered without them may differ from what it renders
// on the cluster, so an error is returned rather than empty capabilities.
func ReadCapabilities(dc discovery.DiscoveryInterface) (Capabilities, error) {
	v, err := dc.ServerVersion()
	if err != nil {
		return Capabilities{}, fmt.Errorf("server version: %w", err)
	}
	gvs, err := APIVersions(dc)
	if err != nil {
		return Capabilities{}, err
	}
	return Capabilities{KubeVersion: v.GitVersion, APIVersions: gvs}, nil
}

// APIVersions lists the group/versions dc serves, sorted.
func APIVersions(dc discovery.DiscoveryInterface) ([]string, error) {
	groups, err := dc.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("discover API groups: %w", err)
	}
	var out []string
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			out = append(out, v.GroupVersion)
		}
	}
	sort.Strings(out)
	return out, nil
}

// mapping finds the resource of a kind, refreshing discovery once for kinds
// installed since the scan began. The answer is remembered for the scan:
// every object of a kind shares one mapping (the mapper allocates a new one,
// several KiB of work, on every call), and a kind the cluster does not serve
// costs one refresh of discovery, not one per object.
func (c *api) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	c.mappingsMu.Lock()
	defer c.mappingsMu.Unlock()
	if m, ok := c.mappings[gvk]; ok {
		return m.mapping, m.err
	}
	m, err := c.findMapping(gvk)
	if c.mappings == nil {
		c.mappings = map[schema.GroupVersionKind]mappingResult{}
	}
	c.mappings[gvk] = mappingResult{m, err}
	return m, err
}

type mappingResult struct {
	mapping *meta.RESTMapping
	err     error
}

func (c *api) findMapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("kind %s is not served by the cluster (is its CRD installed?)", gvkString(gvk))
	}
	return m, err
}

func gvkString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Version + "/" + gvk.Kind
	}
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// list reads every object of a resource in a namespace ("" for all, or for
// a cluster-scoped resource), in pages where the scan pages (listPageSize).
func (c *api) list(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]unstructured.Unstructured, error) {
	items, err := ListAll(ctx, c.dynamic, gvr, ns, metav1.ListOptions{Limit: c.pageSize})
	if err != nil {
		return nil, listError(gvr, ns, err)
	}
	return items, nil
}

// ListPages reads every object of a resource in namespace ns ("" for all)
// with paginated LISTs of opts.Limit objects, following continue tokens, and
// hands each page to fn as it arrives. A caller that keeps only what it
// needs of each page holds no more than one page at a time. An error from
// fn stops the list and is returned.
func ListPages(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions, fn func(page *unstructured.UnstructuredList) error) error {
	var ri dynamic.ResourceInterface = client.Resource(gvr)
	if ns != "" {
		ri = client.Resource(gvr).Namespace(ns)
	}
	for {
		page, err := ri.List(ctx, opts)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if page.GetContinue() == "" {
			return nil
		}
		opts.Continue = page.GetContinue()
	}
}

// ListAll reads every object of a resource in namespace ns ("" for all)
// with ListPages, and returns them all.
func ListAll(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	err := ListPages(ctx, client, gvr, ns, opts, func(page *unstructured.UnstructuredList) error {
		out = append(out, page.Items...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listError says which verb and resource RBAC is missing.
func listError(gvr schema.GroupVersionResource, ns string, err error) error {
	res := gvr.Resource
	if gvr.Group != "" {
		res += "." + gvr.Group
	}
	where := "cluster-wide"
	if ns != "" {
		where = "in namespace " + ns
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("not readable (forbidden): the scan needs list on %s %s: %w", res, where, errForbidden)
	}
	return fmt.Errorf("list %s %s: %w", res, where, err)
}

var errForbidden = errors.New("RBAC denied")

// listWebhooks lists the MutatingWebhookConfigurations.
func (c *api) listWebhooks(ctx context.Context) ([]admissionregistrationv1.MutatingWebhookConfiguration, error) {
	gvr := admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
	items, err := c.list(ctx, gvr, "")
	if err != nil {
		return nil, err
	}
	out := make([]admissionregistrationv1.MutatingWebhookConfiguration, 0, len(items))
	for _, u := range items {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cfg); err != nil {
			return nil, fmt.Errorf("MutatingWebhookConfiguration %s: %w", u.GetName(), err)
		}
		out = append(out, cfg)
	}
	return out, nil
}

// namespaceLabels returns the labels of the namespaces, by name, listing
// them once (listed), or getting each of names when listing is forbidden;
// failed holds why a namespace that exists could not be read.
func (c *api) namespaceLabels(ctx context.Context, names []string) (labels map[string]map[string]string, failed map[string]error, listed bool) {
	labels, failed = map[string]map[string]string{}, map[string]error{}
	items, listErr := c.namespacesAhead() // the LIST readAhead started
	if listErr == nil {
		for _, ns := range items {
			labels[ns.GetName()] = ns.GetLabels()
		}
		return labels, failed, true
	}
	for _, n := range names {
		ns, err := c.dynamic.Resource(namespacesGVR).Get(ctx, n, metav1.GetOptions{})
		switch {
		case err == nil:
			labels[n] = ns.GetLabels()
		case apierrors.IsNotFound(err):
			// Nothing of it is live to match webhooks against.
		default:
			failed[n] = fmt.Errorf("%w; get namespace %s: %w", listErr, n, err)
		}
	}
	return labels, failed, false
}
