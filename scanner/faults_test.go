package scanner

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// faultProxy stands on loopback between the scan and the test API server and
// lets a test decide what each request gets.
type faultProxy struct {
	srv      *httptest.Server
	forward  http.Handler // to the API server
	requests atomic.Int64
	// fault, when set, answers a request instead of the API server.
	fault func(n int64, r *http.Request, w http.ResponseWriter) bool
}

func newFaultProxy(t *testing.T) *faultProxy {
	t.Helper()
	env.Need(t)
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	p.forward = rp
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.requests.Add(1)
		if p.fault != nil && p.fault(n, r, w) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// config reaches the API server through the proxy, which adds the credentials.
func (p *faultProxy) config() *rest.Config {
	return &rest.Config{Host: p.srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 50, Burst: 100}
}

func isList(r *http.Request) bool {
	return r.Method == http.MethodGet && !strings.Contains(r.URL.Path, "/openapi") &&
		(strings.HasSuffix(r.URL.Path, "/deployments") || strings.HasSuffix(r.URL.Path, "/configmaps") || strings.HasSuffix(r.URL.Path, "/secrets") || strings.HasSuffix(r.URL.Path, "/services"))
}

func TestAThrottledScanBacksOffAndFinishes(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	p := newFaultProxy(t)
	var throttled atomic.Int64
	p.fault = func(_ int64, r *http.Request, w http.ResponseWriter) bool {
		// The first four LISTs are told to come back in a second.
		if isList(r) && throttled.Add(1) <= 4 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`, http.StatusTooManyRequests)
			return true
		}
		return false
	}
	start := time.Now()
	r := runScan(t, webApp(ns), func(o *Options) { o.RESTConfig = p.config() })
	if r.Summary.Errors != 0 || r.Summary.Findings != 1 {
		t.Fatalf("summary = %+v, errors %v", r.Summary, r.Errors)
	}
	if r.Stats.Throttled != 4 {
		t.Errorf("throttled = %d, want 4", r.Stats.Throttled)
	}
	if time.Since(start) < time.Second {
		t.Errorf("the scan did not wait for Retry-After")
	}
}

func TestAnAPIServerGoneMidScanEndsWithWhatFinished(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	p := newFaultProxy(t)
	// The Deployments are listed; then the API server goes away: it stops
	// listening and drops the other LISTs, which wait for that moment. It
	// goes once the Deployment's compare has its schema too (the scan
	// fetches it while it renders, so as not to wait for it after the
	// LIST): the LIST could otherwise end before the schema's fetch.
	gone, schema := make(chan struct{}), make(chan struct{})
	var once, schemaOnce sync.Once
	p.fault = func(_ int64, r *http.Request, w http.ResponseWriter) bool {
		if r.URL.Path == "/openapi/v3/apis/apps/v1" {
			p.forward.ServeHTTP(w, r)
			schemaOnce.Do(func() { close(schema) })
			return true
		}
		if !isList(r) {
			return false
		}
		if strings.HasSuffix(r.URL.Path, "/deployments") {
			select {
			case <-schema:
			case <-time.After(10 * time.Second):
				t.Error("the scan did not fetch the apps/v1 schema before the Deployments' LIST ended")
			}
			// The whole page, with its length, is on the wire before
			// the server goes: streamed in chunks, its last chunk would
			// be written only after this handler returned, and closing
			// the connections could cut it (the list then failed too).
			rec := httptest.NewRecorder()
			p.forward.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			w.(http.Flusher).Flush()
			once.Do(func() {
				_ = p.srv.Listener.Close()
				close(gone)
			})
			return true
		}
		<-gone
		go p.srv.CloseClientConnections()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return true
			}
		}
		http.Error(w, "gone", http.StatusBadGateway)
		return true
	}
	start := time.Now()
	r := runScan(t, webApp(ns), func(o *Options) {
		o.RESTConfig = p.config()
		o.RESTConfig.Timeout = 5 * time.Second
	})
	if time.Since(start) > 30*time.Second {
		t.Errorf("the scan took %s", time.Since(start))
	}
	var done, failed int
	for _, o := range r.Apps[0].Objects {
		switch o.Status {
		case report.StatusInSync:
			done++
		case report.StatusError:
			failed++
			if o.Error == "" {
				t.Errorf("%s failed without saying why", o.Ref())
			}
		}
	}
	if done != 1 || failed != 3 {
		t.Errorf("in sync %d, failed %d; want the 1 object listed before the server went, 3 failed\n%s", done, failed, dump(r))
	}
	if r.ExitCode(nil) != report.ExitError {
		t.Errorf("exit code = %d, want %d", r.ExitCode(nil), report.ExitError)
	}
}

func TestTheScanStaysWithinItsQPS(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	p := newFaultProxy(t)
	var mu sync.Mutex
	var at []time.Time
	p.fault = func(_ int64, _ *http.Request, _ http.ResponseWriter) bool {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return false
	}
	const qps, burst = 4, 2
	runScan(t, webApp(ns), func(o *Options) {
		o.RESTConfig = p.config()
		o.RESTConfig.QPS, o.RESTConfig.Burst = qps, burst
	})
	mu.Lock()
	defer mu.Unlock()
	if len(at) < 10 {
		t.Fatalf("only %d requests", len(at))
	}
	// A token bucket lets at most burst + qps*window requests through in
	// any window.
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < time.Second; j++ {
			n++
		}
		if n > burst+qps {
			t.Fatalf("%d requests within one second from request %d; the limit is %d qps with a burst of %d", n, i, qps, burst)
		}
	}
}

func TestABrokenWebhookDoesNotMatterToTheReadOnlyScan(t *testing.T) {
	ns := env.Namespace(t, map[string]string{"broken-webhook": "on"})
	applyDir(t, fixture("apps", "web"), ns)
	w := cluster.DefaultWebhook("broken-deployment-webhook")
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"broken-webhook": "on"}}
	w.Delay, w.TimeoutSeconds, w.NoProbe = 30*time.Second, 3, true // it never answers in time; failurePolicy Fail
	env.ServeWebhook(t, w)
	start := time.Now()
	r := runScan(t, webApp(ns))
	if r.Summary.Errors != 0 || r.Summary.Findings != 0 {
		t.Errorf("summary = %+v", r.Summary)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the scan took %s: it waited on a webhook", took)
	}
}

// TestTheDebugLogNamesEveryRequest: at debug level the scan logs each
// request it sends, as kubectl -v=6 does: method, path (never the query,
// which carries continue tokens), status, and when it was sent and
// answered, so a slow scan of a distant API server shows where it waited.
func TestTheDebugLogNamesEveryRequest(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	var log bytes.Buffer
	r := runScan(t, scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}}), func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	type line struct {
		Msg, Method, Path string
		Status            int
		SentMs, AnswerMs  *int64
	}
	var requests []line
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var e line
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if e.Msg == "api request" {
			requests = append(requests, e)
		}
	}
	if int64(len(requests)) != r.Stats.APIRequests {
		t.Errorf("%d requests logged, the report counts %d", len(requests), r.Stats.APIRequests)
	}
	var lists int
	for _, e := range requests {
		if e.Method != http.MethodGet || e.Status != http.StatusOK || e.SentMs == nil || e.AnswerMs == nil || strings.Contains(e.Path, "?") {
			t.Errorf("logged request %+v: want a GET answered 200, with when it was sent and answered, and no query", e)
		}
		if e.Path == "/api/v1/namespaces/"+ns+"/configmaps" || e.Path == "/api/v1/configmaps" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("the ConfigMaps' LIST logged %d times, want once:\n%s", lists, log.String())
	}

	// At the default level nothing is logged per request.
	log.Reset()
	runScan(t, scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}}), func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	})
	if strings.Contains(log.String(), "api request") {
		t.Errorf("requests logged at info level:\n%s", log.String())
	}
}
