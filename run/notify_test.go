package run

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/lease"
	"github.com/calricon/driftscan/notify"
	"github.com/calricon/driftscan/report"
)

// slowPagerDuty is a loopback Events API v2 that takes its time over each
// event, as PagerDuty does on a bad day, and checks every request.
type slowPagerDuty struct {
	t     *testing.T
	srv   *httptest.Server
	delay time.Duration
	// onEvent, when set, runs before the n-th event (from 1) is answered.
	onEvent func(n int)

	mu     sync.Mutex
	events []string // dedup keys of triggers, in order
	// resolves are the dedup keys of resolve events, in order.
	resolves []string
}

func newSlowPagerDuty(t *testing.T, delay time.Duration) *slowPagerDuty {
	p := &slowPagerDuty{t: t, delay: delay}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			RoutingKey string `json:"routing_key"`
			Action     string `json:"event_action"`
			DedupKey   string `json:"dedup_key"`
		}
		data, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v2/enqueue" || json.Unmarshal(data, &ev) != nil ||
			ev.RoutingKey != "pd-routing-key" || (ev.Action != "trigger" && ev.Action != "resolve") || ev.DedupKey == "" {
			t.Errorf("bad event %s %s: %s", r.Method, r.URL.Path, data)
			http.Error(w, `{"status":"invalid event"}`, http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		if ev.Action == "resolve" {
			p.resolves = append(p.resolves, ev.DedupKey)
			p.mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"status":"success","message":"Event processed","dedup_key":"`+ev.DedupKey+`"}`)
			return
		}
		p.events = append(p.events, ev.DedupKey)
		n := len(p.events)
		p.mu.Unlock()
		if p.onEvent != nil {
			p.onEvent(n)
		}
		time.Sleep(p.delay)
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"status":"success","message":"Event processed","dedup_key":"`+ev.DedupKey+`"}`)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *slowPagerDuty) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

// pagedApp is an app of n ConfigMaps in a new namespace, each edited by a
// human (one page each), whose owner is paged through pd, with its state
// ConfigMap (and Lease) in another namespace. It returns the config and
// the run's options.
func pagedApp(t *testing.T, n int, pd *slowPagerDuty) (*config.Config, Options, string) {
	t.Helper()
	ns, stateNS := env.Namespace(t, nil), env.Namespace(t, nil)
	dir := t.TempDir()
	for i := range n {
		doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {level: info}\n", i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cm-%d.yaml", i)), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		env.Apply(t, "argocd-controller", ns, cluster.Object(t, doc))
		env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, fmt.Sprintf("cm-%d", i), types.MergePatchType, `{"data":{"level":"debug"}}`)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(stateNS).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "driftscan-state"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PD_KEY", "pd-routing-key")
	cfg := config.New()
	cfg.Appliers = []string{"argocd-controller"}
	cfg.Apps = []config.App{{Name: "web", Owner: "team-web", Namespace: ns, Source: config.Source{Path: dir}}}
	cfg.Owners = config.Owners{"team-web": {PagerDuty: &config.PagerDutyRoute{RoutingKeyEnv: "PD_KEY"}}}
	cfg.Notify = &config.Notify{PagerDuty: config.PagerDuty{EventsURL: pd.srv.URL}, Route: config.Route{PagerDuty: []report.Class{report.ClassHuman}}}
	opts := DefaultOptions()
	opts.Scan.RESTConfig, opts.Scan.GitCacheDir = env.Config, t.TempDir()
	opts.Notify.State = "configmap:" + stateNS + "/driftscan-state"
	opts.Notify.LeaseDuration = 2 * time.Second
	return cfg, opts, stateNS
}

// otherRun is another driftscan run trying to take the Lease.
func otherRun(t *testing.T, stateNS string) error {
	env.Need(t)
	o := lease.DefaultOptions()
	o.Namespace, o.Name, o.Holder, o.Duration = stateNS, "driftscan-state", "cronjob-next/1", 2*time.Second
	l, err := lease.Acquire(t.Context(), env.Client, o)
	if err == nil {
		_ = l.Release(t.Context())
	}
	return err
}

// TestTheLeaseIsRenewedWhileTheRunNotifies: six pages at 700 ms each take
// twice as long as the Lease lasts. It was taken once and never renewed,
// so a second run could take it over half-way and page the same drift
// again. It is now renewed while sending: the second run is refused.
func TestTheLeaseIsRenewedWhileTheRunNotifies(t *testing.T) {
	pd := newSlowPagerDuty(t, 700*time.Millisecond)
	cfg, opts, stateNS := pagedApp(t, 6, pd)
	var (
		mu    sync.Mutex
		tries []error
	)
	pd.onEvent = func(n int) {
		if n == 5 { // past the Lease's 2 s
			err := otherRun(t, stateNS)
			mu.Lock()
			tries = append(tries, err)
			mu.Unlock()
		}
	}
	res, err := Scan(t.Context(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NotifyErrors) > 0 || pd.count() != 6 {
		t.Errorf("%d pages, errors %v; want all 6 and none", pd.count(), res.NotifyErrors)
	}
	if len(tries) != 1 || !strings.Contains(fmt.Sprint(tries[0]), "is held by") {
		t.Errorf("another run taking the Lease while pages went out: %v, want it refused as held", tries)
	}
	if err := otherRun(t, stateNS); err != nil {
		t.Errorf("after the run the Lease is not free: %v", err)
	}
}

// TestSendingStopsWhenTheLeaseIsLost: another run took the Lease (this one
// was paused past it): the rest is not sent, which the errors say, and
// what was sent is saved.
func TestSendingStopsWhenTheLeaseIsLost(t *testing.T) {
	env.Need(t)
	pd := newSlowPagerDuty(t, 300*time.Millisecond)
	cfg, opts, stateNS := pagedApp(t, 6, pd)
	pd.onEvent = func(n int) {
		if n != 2 {
			return
		}
		leases := env.Client.CoordinationV1().Leases(stateNS)
		cur, err := leases.Get(t.Context(), "driftscan-state", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		thief := "cronjob-next/1"
		cur.Spec.HolderIdentity = &thief
		if _, err := leases.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
		time.Sleep(time.Second) // a renewal (every 400 ms) notices
	}
	res, err := Scan(t.Context(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NotifyErrors) == 0 {
		t.Fatal("no notify error after the Lease was lost")
	}
	if n := pd.count(); n >= 6 {
		t.Errorf("%d pages, want sending to stop once the Lease was lost", n)
	}
	// The page under way when the Lease was lost is cut off too.
	last := res.NotifyErrors[len(res.NotifyErrors)-1]
	if !strings.Contains(last.Error(), "notify stopped") || !strings.Contains(last.Error(), "lease is no longer ours") {
		t.Errorf("errors %v, want the last to say sending stopped because the Lease was lost", res.NotifyErrors)
	}
	cm, err := env.Client.CoreV1().ConfigMaps(stateNS).Get(t.Context(), "driftscan-state", metav1.GetOptions{})
	if err != nil || len(cm.BinaryData) == 0 {
		t.Errorf("what was sent is not saved: %v", err)
	}
}

// TestARemovedAppsIncidentsAreResolved: an app taken out of the config
// left its PagerDuty incidents open for ever, and its entries in the state:
// no run scanned it again, so none resolved them. A run that saw every app
// now resolves them and drops the entries; a run that saw only some apps
// (--app, --shard, a discovery selector) leaves them alone.
func TestARemovedAppsIncidentsAreResolved(t *testing.T) {
	pd := newSlowPagerDuty(t, 0)
	cfg, opts, _ := pagedApp(t, 2, pd)
	// A second app that stays, in sync.
	keep := t.TempDir()
	if err := os.WriteFile(filepath.Join(keep, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api}\ndata: {k: v}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	api := config.App{Name: "api", Owner: "team-web", Namespace: cfg.Apps[0].Namespace, Source: config.Source{Path: keep}}
	env.Apply(t, "argocd-controller", api.Namespace, cluster.Object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api}\ndata: {k: v}\n"))
	web := cfg.Apps[0]
	with := func(apps ...config.App) *config.Config {
		c := *cfg
		c.Apps = apps
		return &c
	}
	state := func() []string {
		t.Helper()
		ref, err := notify.ParseStateRef(opts.Notify.State)
		if err != nil {
			t.Fatal(err)
		}
		store, err := ref.Store(env.Client, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.Load(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var apps []string
		for _, e := range st.Objects {
			apps = append(apps, e.App+"/"+e.Name)
		}
		return apps
	}
	if _, err := Scan(t.Context(), with(web, api), opts); err != nil {
		t.Fatal(err)
	}
	if pd.count() != 2 || len(state()) != 2 {
		t.Fatalf("first run: %d pages, state %v; want 2 and 2", pd.count(), state())
	}

	// web is removed, but this run scans only api: nothing is resolved.
	filtered := opts
	filtered.Apps = []string{"api"}
	if _, err := Scan(t.Context(), with(api), filtered); err != nil {
		t.Fatal(err)
	}
	if len(pd.resolves) != 0 || len(state()) != 2 {
		t.Errorf("a run of --app api: %d resolves, state %v; want none resolved, both kept", len(pd.resolves), state())
	}

	// A run of every app: web's incidents are resolved, its entries gone.
	res, err := Scan(t.Context(), with(api), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pd.resolves) != 2 || len(res.NotifyErrors) > 0 {
		t.Errorf("%d resolves (%v), want web's 2", len(pd.resolves), res.NotifyErrors)
	}
	if got := state(); len(got) != 0 {
		t.Errorf("state after web was removed: %v, want empty", got)
	}
}
