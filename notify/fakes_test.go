package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// fakeAPI is an httptest server that speaks the Slack Web API
// (POST /api/chat.postMessage), a Slack incoming webhook (POST to
// hookPath) and the PagerDuty Events API v2 (POST /v2/enqueue). It checks
// every request's shape and credentials, records it, and answers as the
// real service does, or with the failures a test scripts.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server
	// hookPath is the incoming webhook's secret path.
	hookPath string

	mu     sync.Mutex
	reqs   []recorded
	script map[string][]answer
	waits  []time.Duration
	logs   bytes.Buffer
}

// answer is a scripted reply.
type answer struct {
	status int
	header map[string]string
	body   string
}

// recorded is one request as the golden files show it, secrets replaced
// by the name of the variable they came from.
type recorded struct {
	Method        string `json:"method"`
	Path          string `json:"path"`
	Answered      int    `json:"answered"`
	Authorization string `json:"authorization,omitempty"`
	ContentType   string `json:"contentType"`
	Body          any    `json:"body"`
}

const (
	pathSlackAPI = "/api/chat.postMessage"
	pathEvents   = "/v2/enqueue"
)

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, hookPath: "/services/T0001/B0002/h00kS3cr3tPathXYZ", script: map[string][]answer{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// fail scripts the next answers on path (pathSlackAPI, pathEvents, or
// "hook" for the incoming webhook).
func (f *fakeAPI) fail(path string, answers ...answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[path] = append(f.script[path], answers...)
}

func (f *fakeAPI) getenv(name string) string {
	if name == "SLACK_WEBHOOK_URL" {
		return f.srv.URL + f.hookPath
	}
	return testSecrets[name]
}

// secretValues are every secret a test run can see.
func (f *fakeAPI) secretValues() map[string]string {
	out := map[string]string{"SLACK_WEBHOOK_URL": f.hookPath}
	for k, v := range testSecrets {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// hide replaces every secret in s by <NAME>.
func (f *fakeAPI) hide(s string) string {
	for k, v := range f.secretValues() {
		s = strings.ReplaceAll(s, v, "<"+k+">")
	}
	return s
}

// take returns the requests recorded since the last take.
func (f *fakeAPI) take() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.reqs
	f.reqs = nil
	return out
}

// options are Notify's options against the fake, with a fixed clock,
// retries that record their waits instead of sleeping, and a debug log.
func (f *fakeAPI) options() Options {
	o := DefaultOptions()
	o.Config = testConfig()
	o.Config.Slack.APIURL = f.srv.URL + "/api/"
	o.Config.PagerDuty.EventsURL = f.srv.URL
	o.Owners = testOwners()
	o.ReportURL = "https://ci.example.com/runs/42"
	o.Getenv = f.getenv
	o.ReadFile = func(string) ([]byte, error) { return nil, fmt.Errorf("the tests read no secret file") }
	o.Now = func() time.Time { return testNow }
	o.HTTPClient = f.srv.Client()
	o.Sleep = func(ctx context.Context, d time.Duration) error {
		f.mu.Lock()
		f.waits = append(f.waits, d)
		f.mu.Unlock()
		return ctx.Err()
	}
	o.Logger = slog.New(slog.NewTextHandler(&lockedWriter{mu: &f.mu, w: &f.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return o
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("read request: %v", err)
	}
	rec := recorded{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type")}
	key := r.URL.Path
	var ok func()
	switch r.URL.Path {
	case pathSlackAPI:
		rec.Body = f.checkSlackAPI(r, body)
		ok = func() {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			fmt.Fprint(w, `{"ok":true,"channel":"C0123ABCD","ts":"1782907230.000100","message":{"type":"message","subtype":"bot_message","text":"drift"}}`)
		}
	case f.hookPath:
		key = "hook"
		rec.Path = "/services/<SLACK_WEBHOOK_URL>"
		rec.Body = f.checkWebhook(r, body)
		ok = func() {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "ok")
		}
	case pathEvents:
		ev := f.checkEvent(r, body)
		rec.Body = ev
		ok = func() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "success", "message": "Event processed", "dedup_key": fmt.Sprint(ev["dedup_key"])})
		}
	default:
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		f.t.Errorf("%s: method %s, want POST", rec.Path, r.Method)
	}
	f.mu.Lock()
	var a *answer
	if s := f.script[key]; len(s) > 0 {
		a = &s[0]
		f.script[key] = s[1:]
	}
	rec.Answered = http.StatusOK
	if key == pathEvents {
		rec.Answered = http.StatusAccepted
	}
	if a != nil {
		rec.Answered = a.status
	}
	f.reqs = append(f.reqs, rec)
	f.mu.Unlock()
	if a == nil {
		ok()
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

// checkSlackAPI checks a chat.postMessage request the way Slack would: the
// bot token as a Bearer header (and, as slack-go also sends it, as the
// token form field), a channel, fallback text and Block Kit within limits.
func (f *fakeAPI) checkSlackAPI(r *http.Request, body []byte) map[string]any {
	t := f.t
	if got, want := r.Header.Get("Authorization"), "Bearer "+testSecrets["SLACK_BOT_TOKEN"]; got != want {
		t.Errorf("chat.postMessage: Authorization %q, want the bot token as Bearer", f.hide(got))
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		t.Errorf("chat.postMessage: Content-Type %q", ct)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		t.Errorf("chat.postMessage: form: %v", err)
		return nil
	}
	if tok := form.Get("token"); tok != "" && tok != testSecrets["SLACK_BOT_TOKEN"] {
		t.Errorf("chat.postMessage: token field is not the bot token")
	}
	if form.Get("channel") == "" || form.Get("text") == "" {
		t.Errorf("chat.postMessage: channel %q, text %q: both are required", form.Get("channel"), form.Get("text"))
	}
	out := map[string]any{}
	for k := range form {
		out[k] = form.Get(k)
	}
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(form.Get("blocks")), &blocks); err != nil {
		t.Errorf("chat.postMessage: blocks: %v", err)
	}
	checkBlocks(t, blocks)
	out["blocks"] = blocks
	return out
}

func (f *fakeAPI) checkWebhook(r *http.Request, body []byte) map[string]any {
	t := f.t
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("incoming webhook: Content-Type %q", ct)
	}
	if a := r.Header.Get("Authorization"); a != "" {
		t.Errorf("incoming webhook: unexpected Authorization %q", f.hide(a))
	}
	var msg map[string]any
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Errorf("incoming webhook: %v", err)
		return nil
	}
	if msg["text"] == "" {
		t.Errorf("incoming webhook: no text")
	}
	var blocks []map[string]any
	raw, _ := json.Marshal(msg["blocks"])
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Errorf("incoming webhook: blocks: %v", err)
	}
	checkBlocks(t, blocks)
	return msg
}

// checkBlocks checks Slack's Block Kit limits.
func checkBlocks(t *testing.T, blocks []map[string]any) {
	if len(blocks) == 0 || len(blocks) > slackMaxBlocks {
		t.Errorf("slack: %d blocks, want 1 to %d", len(blocks), slackMaxBlocks)
	}
	for i, b := range blocks {
		text, _ := b["text"].(map[string]any)
		s, _ := text["text"].(string)
		switch b["type"] {
		case "header":
			if text["type"] != "plain_text" || utf8.RuneCountInString(s) > slackMaxHeaderText || s == "" {
				t.Errorf("slack: block %d: header %q (%s) breaks Slack's limits", i, s, text["type"])
			}
		case "section":
			if n := utf8.RuneCountInString(s); n == 0 || n > slackMaxSectionText {
				t.Errorf("slack: block %d: section text of %d characters", i, n)
			}
		case "context":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > 10 {
				t.Errorf("slack: block %d: context with %d elements", i, len(els))
			}
		default:
			t.Errorf("slack: block %d: unexpected type %v", i, b["type"])
		}
	}
}

// checkEvent checks an Events API v2 event as PagerDuty would.
func (f *fakeAPI) checkEvent(r *http.Request, body []byte) map[string]any {
	t := f.t
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("events: Content-Type %q", ct)
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Errorf("events: %v", err)
		return nil
	}
	key, _ := ev["routing_key"].(string)
	if key != testSecrets["PD_KEY_WEB"] && key != testSecrets["PD_KEY_BILLING"] {
		t.Errorf("events: routing_key %q is none of the owners' keys", key)
	}
	dk, _ := ev["dedup_key"].(string)
	if dk == "" || len(dk) > pdMaxDedupKey {
		t.Errorf("events: dedup_key %q", dk)
	}
	switch ev["event_action"] {
	case "trigger":
		p, _ := ev["payload"].(map[string]any)
		summary, _ := p["summary"].(string)
		if summary == "" || len(summary) > pdMaxSummary {
			t.Errorf("events: summary of %d bytes, want 1 to %d", len(summary), pdMaxSummary)
		}
		if sev, _ := p["severity"].(string); !slices.Contains(config.Severities, sev) {
			t.Errorf("events: severity %q", sev)
		}
		if p["source"] == "" {
			t.Errorf("events: no source")
		}
	case "resolve":
		if _, ok := ev["payload"]; ok {
			t.Errorf("events: resolve with a payload")
		}
	default:
		t.Errorf("events: event_action %v", ev["event_action"])
	}
	return ev
}

// golden renders requests for a golden file, with secrets hidden.
func (f *fakeAPI) golden(reqs []recorded) []byte {
	f.t.Helper()
	if reqs == nil {
		reqs = []recorded{}
	}
	data, err := json.MarshalIndent(reqs, "", "  ")
	if err != nil {
		f.t.Fatal(err)
	}
	return []byte(f.hide(string(data)) + "\n")
}

// assertNoSecret fails when any secret is in text.
func (f *fakeAPI) assertNoSecret(where, text string) {
	f.t.Helper()
	for k, v := range f.secretValues() {
		if strings.Contains(text, v) {
			f.t.Errorf("%s holds the secret %s:\n%s", where, k, text)
		}
	}
}

// notifyAt runs Notify with the fake's options at testNow+at, fails the
// test on any error, and returns the result and the requests it made.
func (f *fakeAPI) notifyAt(t *testing.T, r *report.Report, store Store, at time.Duration) (Result, []recorded) {
	t.Helper()
	opts := f.options()
	opts.Now = func() time.Time { return testNow.Add(at) }
	res, err := Notify(t.Context(), r, store, opts)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("Notify: %v %v", err, res.Errors)
	}
	return res, f.take()
}
