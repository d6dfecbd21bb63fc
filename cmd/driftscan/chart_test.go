package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/charts"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/lease"
	"github.com/calricon/driftscan/notify"
	"github.com/calricon/driftscan/report"
)

// chatOps is a loopback stand-in for a Slack incoming webhook and the
// PagerDuty Events API v2 that checks each request the way they do.
type chatOps struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	slack  []map[string]any
	events []map[string]any
}

func newChatOps(t *testing.T) *chatOps {
	c := &chatOps{t: t}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.Unmarshal(data, &body) != nil {
			t.Errorf("bad request %s %s %q: %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"), data)
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		switch r.URL.Path {
		case "/services/T000/B000/secret":
			if body["text"] == nil && body["blocks"] == nil {
				http.Error(w, "no_text", http.StatusBadRequest)
				return
			}
			c.slack = append(c.slack, body)
			_, _ = io.WriteString(w, "ok")
		case "/v2/enqueue":
			if body["routing_key"] != "pd-routing-key-web" || body["dedup_key"] == "" {
				http.Error(w, `{"status":"invalid event"}`, http.StatusBadRequest)
				return
			}
			c.events = append(c.events, body)
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"status":"success","message":"Event processed","dedup_key":"x"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *chatOps) counts() (slack, events int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.slack), len(c.events)
}

// TestTheChartsCronJobRunsAndNotifiesOnce renders the chart, then runs the
// CronJob's exact command line (args, env, the mounted config and the state
// ConfigMap the chart creates) against the real API server, twice.
func TestTheChartsCronJobRunsAndNotifiesOnce(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	ops := newChatOps(t)
	t.Setenv("SLACK_WEBHOOK_URL", ops.srv.URL+"/services/T000/B000/secret")
	t.Setenv("PD_KEY_WEB", "pd-routing-key-web")
	web, _ := filepath.Abs("../../fixtures/apps/web")
	metricsFile := filepath.Join(t.TempDir(), "driftscan.prom")

	opts := charts.DefaultOptions()
	opts.Namespace = ns
	opts.Values = map[string]any{
		"metrics": map[string]any{"file": metricsFile},
		"config": map[string]any{
			"apiVersion": "driftscan.dev/v1alpha1", "kind": "ScanConfig",
			"appliers": []any{"argocd-controller"},
			"apps":     []any{map[string]any{"name": "web", "owner": "team-web", "namespace": ns, "source": map[string]any{"path": web}}},
			"owners": map[string]any{"team-web": map[string]any{
				"slack":     map[string]any{"channel": "#web-oncall"},
				"pagerduty": map[string]any{"routingKeyEnv": "PD_KEY_WEB"},
			}},
			"notify": map[string]any{
				"slack":     map[string]any{"webhookURLEnv": "SLACK_WEBHOOK_URL"},
				"pagerduty": map[string]any{"eventsURL": ops.srv.URL},
			},
		},
	}
	rel, err := charts.Render(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range append(rel.OfKind("ConfigMap"), rel.OfKind("Lease")...) {
		env.Create(t, "helm", ns, obj)
	}
	cfgText, err := rel.ScanConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "scan.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := rel.Args(map[string]string{"NAMESPACE": ns})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "/etc/driftscan/scan.yaml" {
			args[i] = cfgPath
		}
	}
	args = append(args, "--kubeconfig", env.Kubeconfig)

	res := runCLI(t, args...)
	if res.code != 0 { // the chart passes --fail-on none
		t.Fatalf("%v: exit %d\nstderr: %s", args, res.code, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatalf("stdout is not the JSON report: %v", err)
	}
	if r.Summary.Findings != 2 {
		t.Errorf("summary = %+v", r.Summary)
	}
	slack, events := ops.counts()
	if slack != 1 || events != 1 { // one message for the app; a page for the human drift only
		t.Errorf("first run: %d Slack messages, %d PagerDuty events; want 1 and 1", slack, events)
	}
	state, err := (&notify.ConfigMapStore{Client: env.Client, Namespace: ns, Name: "driftscan-state"}).Load(t.Context())
	if err != nil || len(state.Objects) == 0 {
		t.Fatalf("state ConfigMap not written: %v %+v", err, state)
	}
	if data, _ := json.Marshal(state); strings.Contains(string(data), "pd-routing-key-web") || strings.Contains(string(data), "secret") {
		t.Errorf("the state holds a secret: %s", data)
	}

	if res := runCLI(t, args...); res.code != 0 {
		t.Fatalf("second run: exit %d\n%s", res.code, res.err)
	}
	if s2, e2 := ops.counts(); s2 != slack || e2 != events {
		t.Errorf("an unchanged second run notified again: %d Slack, %d PagerDuty", s2-slack, e2-events)
	}

	// A manual run while the CronJob holds the Lease: the report is written,
	// nothing is notified, the state is left for the next run.
	held, err := lease.Acquire(t.Context(), env.Client, lease.Options{Namespace: ns, Name: "driftscan-state", Holder: "driftscan-29123456-abcde/1", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"trace"}}`)
	res = runCLI(t, args...)
	if res.code != 0 || !strings.Contains(res.err, "another driftscan run holds the lease") || !strings.Contains(res.err, "driftscan-29123456-abcde/1") {
		t.Errorf("run under a held lease: exit %d\n%s", res.code, res.err)
	}
	if s3, e3 := ops.counts(); s3 != slack || e3 != events {
		t.Errorf("a run without the lease notified: %d Slack, %d PagerDuty", s3-slack, e3-events)
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res := runCLI(t, args...); res.code != 0 {
		t.Fatalf("run after release: exit %d\n%s", res.code, res.err)
	}
	if s4, _ := ops.counts(); s4 != slack+1 {
		t.Errorf("the changed drift was not notified once the lease was free: %d new Slack messages", s4-slack)
	}

	f, err := os.Open(metricsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("metrics file does not parse: %v", err)
	}
	for _, name := range []string{"driftscan_findings", "driftscan_objects", "driftscan_scan_duration_seconds", "driftscan_last_success_timestamp_seconds", "driftscan_api_requests_total"} {
		if families[name] == nil {
			t.Errorf("metrics file lacks %s", name)
		}
	}
}
