package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/report"
)

// counts is a Result without its errors, for comparing.
type counts struct{ Sent, Resolved, Skipped, Errors int }

func countsOf(r Result) counts { return counts{r.Sent, r.Resolved, r.Skipped, len(r.Errors)} }

// errSearch is the one error every scan of testReport has: app search's
// owner has no route.
const errSearch = `app "search": owner "team-search" is not in owners`

// TestNotifyLifecycle runs scans one after another on one state, the way a
// scheduled scan does, and checks what each one sends.
func TestNotifyLifecycle(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	newImage := func(r *report.Report) *report.Report {
		return withObject(r, "web", "web", func(o *report.Object) {
			for i := range o.Findings {
				if o.Findings[i].Path == imageFinding("").Path {
					o.Findings[i] = imageFinding("ghcr.io/acme/web:1.4.2-hotfix")
				}
			}
		})
	}
	fixed := func(r *report.Report) *report.Report {
		r = withObject(r, "web", "web-db", func(o *report.Object) { o.Findings = nil })
		return withObject(r, "billing", "billing-flags", func(o *report.Object) {
			o.Findings = []report.Finding{{Path: ".data.beta", Ignored: true, Class: report.ClassUnknown, Type: report.TypeChanged}}
		})
	}
	steps := []struct {
		name   string
		report *report.Report
		at     time.Time
		want   counts
		golden string
	}{
		{
			name:   "the first scan tells every owner about every drifted object",
			report: testReport(),
			at:     testNow,
			// Slack: web, billing. PagerDuty: web Deployment and Secret
			// (human), billing ConfigMap and Missing Service (unknown).
			want:   counts{Sent: 6, Errors: 1},
			golden: "lifecycle-1-first-scan.golden",
		},
		{
			name:   "an unchanged second scan sends nothing",
			report: testReport(),
			at:     testNow.Add(time.Hour),
			want:   counts{Skipped: 9, Errors: 1},
			golden: "lifecycle-2-unchanged.golden",
		},
		{
			name:   "a changed finding re-sends that object only",
			report: newImage(testReport()),
			at:     testNow.Add(2 * time.Hour),
			want:   counts{Sent: 2, Skipped: 7, Errors: 1},
			golden: "lifecycle-3-changed.golden",
		},
		{
			name:   "fixed and newly ignored drift resolves the incidents and says so on Slack",
			report: fixed(newImage(testReport())),
			at:     testNow.Add(3 * time.Hour),
			want:   counts{Resolved: 4, Skipped: 5, Errors: 1},
			golden: "lifecycle-4-resolved.golden",
		},
		{
			name:   "drift still open after RenotifyAfter is sent again",
			report: fixed(newImage(testReport())),
			at:     testNow.Add(27 * time.Hour),
			// The web Deployment (sent at +2h) and billing's open drift.
			want:   counts{Sent: 4, Errors: 1},
			golden: "lifecycle-5-renotify.golden",
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			opts := f.options()
			opts.Now = func() time.Time { return step.at }
			// The failing app payments is neither told nor resolved here;
			// telling its owner it goes unseen has its own test
			// (TestAnAppThatCannotBeScannedIsToldToItsOwnerOnce).
			opts.UnscannedAfter = -1
			res, err := Notify(t.Context(), step.report, store, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(step.want, countsOf(res)); diff != "" {
				t.Errorf("result (-want +got):\n%s\nerrors: %v", diff, res.Errors)
			}
			if len(res.Errors) > 0 && res.Errors[0].Error() != errSearch {
				t.Errorf("errors = %v, want only %q", res.Errors, errSearch)
			}
			golden.Check(t, step.golden, f.golden(f.take()))
		})
	}
	data, err := os.ReadFile(store.Path)
	if err != nil {
		t.Fatal(err)
	}
	f.assertNoSecret("the state file", string(data))
	f.assertNoSecret("the log", f.logs.String())
}

// A scan of the same drift whose findings come in another order, or with
// later manager times, is the same drift.
func TestFingerprintIgnoresOrderAndTime(t *testing.T) {
	a := []report.Finding{imageFinding("x"), replicasFinding()}
	b := []report.Finding{replicasFinding(), imageFinding("x")}
	b[0].Time = "2026-08-01T00:00:00Z"
	if Fingerprint(a) != Fingerprint(b) {
		t.Error("same drift in another order or at another time got another fingerprint")
	}
	c := []report.Finding{imageFinding("y"), replicasFinding()}
	if Fingerprint(a) == Fingerprint(c) {
		t.Error("another live value kept the fingerprint")
	}
	d := []report.Finding{imageFinding("x"), replicasFinding()}
	d[1].Class = report.ClassHuman
	if Fingerprint(a) == Fingerprint(d) {
		t.Error("another class kept the fingerprint")
	}
}

func TestNotifyRetries(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	f.fail(pathSlackAPI, answer{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "7"}, body: `{"ok":false,"error":"ratelimited"}`})
	f.fail(pathEvents,
		answer{status: http.StatusInternalServerError, header: map[string]string{"Content-Type": "text/html"}, body: "<html>upstream error</html>"},
		answer{status: http.StatusBadGateway, header: map[string]string{"Content-Type": "text/html"}, body: "<html>bad gateway</html>"})

	res, err := Notify(t.Context(), testReport(), store, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts{Sent: 6, Errors: 1}, countsOf(res)); diff != "" {
		t.Errorf("result (-want +got):\n%s\nerrors: %v", diff, res.Errors)
	}
	// 429 waits what Retry-After says; the 5xx back off 1s, then 2s.
	if diff := cmp.Diff([]time.Duration{7 * time.Second, time.Second, 2 * time.Second}, f.waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	reqs := f.take()
	golden.Check(t, "retries.golden", f.golden(reqs))
	if !strings.Contains(f.logs.String(), "notify: retrying") {
		t.Errorf("the retries were not logged:\n%s", f.logs.String())
	}

	// The retried page was recorded once: the next scan pages nobody.
	res, err = Notify(t.Context(), testReport(), store, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if reqs := f.take(); len(reqs) != 0 || res.Sent != 0 {
		t.Errorf("the scan after the retries sent %d requests, want none:\n%s", len(reqs), f.golden(reqs))
	}
}

func TestNotifyRetryAfterLongerThanMaxWaitFailsAtOnce(t *testing.T) {
	f := newFakeAPI(t)
	f.fail(pathSlackAPI, answer{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "3600"}})
	opts := f.options()
	opts.Config.PagerDuty = config.PagerDuty{}
	opts.Owners = config.Owners{"team-web": {Slack: &config.SlackRoute{Channel: "#web-oncall"}}, "team-billing": {Slack: &config.SlackRoute{Channel: "#billing"}}}
	res, err := Notify(t.Context(), testReport(), &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.waits) != 0 {
		t.Errorf("waited %v, want no wait past MaxWait", f.waits)
	}
	if res.Sent != 1 || len(res.Errors) != 2 || !strings.Contains(res.Errors[1].Error(), "rate limit") {
		t.Errorf("result %+v, want the web message failed on the rate limit and billing's sent", res)
	}
}

func TestNotifyRetriesStopWithTheContext(t *testing.T) {
	f := newFakeAPI(t)
	f.fail(pathSlackAPI, answer{status: http.StatusServiceUnavailable}, answer{status: http.StatusServiceUnavailable})
	opts := f.options()
	opts.Owners = config.Owners{"team-web": {Slack: &config.SlackRoute{Channel: "#web-oncall"}}}
	ctx, cancel := context.WithCancel(t.Context())
	opts.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleepContext(ctx, d)
	}
	res, err := Notify(ctx, testReport(), &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}, opts)
	if err != nil {
		t.Fatalf("Notify: %v; the state is saved even when the context ends", err)
	}
	if !errors.Is(res.Err(), context.Canceled) {
		t.Errorf("errors %v, want context.Canceled among them", res.Errors)
	}
	if n := len(f.take()); n != 1 {
		t.Errorf("%d requests, want 1: a cancelled context retries nothing", n)
	}
}

// A permanently failing endpoint leaves the state unchanged for what it
// failed, so the next run sends it; what did go out is not sent twice.
func TestNotifyPermanentFailureIsSentNextRun(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	down := answer{status: http.StatusServiceUnavailable, header: map[string]string{"Content-Type": "application/json"}, body: `{"status":"unavailable","message":"try later"}`}
	for range 4 * 3 { // four events, three attempts each
		f.fail(pathEvents, down)
	}
	res, err := Notify(t.Context(), testReport(), store, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts{Sent: 2, Errors: 5}, countsOf(res)); diff != "" {
		t.Errorf("run with PagerDuty down (-want +got):\n%s\nerrors: %v", diff, res.Errors)
	}
	for _, e := range res.Errors[1:] {
		if !strings.Contains(e.Error(), "on pagerduty") || !strings.Contains(e.Error(), "503") {
			t.Errorf("error %q does not say the page failed with 503", e)
		}
	}
	f.take()

	res, err = Notify(t.Context(), testReport(), store, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts{Sent: 4, Skipped: 5, Errors: 1}, countsOf(res)); diff != "" {
		t.Errorf("run after PagerDuty is back (-want +got):\n%s\nerrors: %v", diff, res.Errors)
	}
	for _, r := range f.take() {
		if r.Path != pathEvents {
			t.Errorf("the run after PagerDuty is back sent %s again", r.Path)
		}
	}
}

// A failed Slack post does not keep PagerDuty from paging, and the page is
// not repeated when the next run sends the Slack message.
func TestNotifySlackFailureDoesNotRepeatThePage(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	f.fail(pathSlackAPI, answer{status: http.StatusOK, header: map[string]string{"Content-Type": "application/json"}, body: `{"ok":false,"error":"channel_not_found"}`})
	res, err := Notify(t.Context(), testReport(), store, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts{Sent: 5, Errors: 2}, countsOf(res)); diff != "" {
		t.Errorf("(-want +got):\n%s\nerrors: %v", diff, res.Errors)
	}
	if !strings.Contains(res.Err().Error(), "channel_not_found") {
		t.Errorf("errors %v do not say channel_not_found", res.Errors)
	}
	f.take()
	if _, err := Notify(t.Context(), testReport(), store, f.options()); err != nil {
		t.Fatal(err)
	}
	reqs := f.take()
	if len(reqs) != 1 || reqs[0].Path != pathSlackAPI {
		t.Errorf("next run sent %s, want billing's Slack message only", f.golden(reqs))
	}
}

func TestNotifyIncomingWebhook(t *testing.T) {
	f := newFakeAPI(t)
	opts := f.options()
	opts.Config.Slack = config.Slack{WebhookURLEnv: "SLACK_WEBHOOK_URL"}
	opts.Config.Route.PagerDuty = []report.Class{}
	res, err := Notify(t.Context(), testReport(), &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts{Sent: 2, Errors: 1}, countsOf(res)); diff != "" {
		t.Errorf("(-want +got):\n%s\nerrors: %v", diff, res.Errors)
	}
	golden.Check(t, "webhook.golden", f.golden(f.take()))
}

// Secrets reach only the request that needs them: not logs, errors,
// dry-run output or the state.
func TestNotifySecretsNeverLeak(t *testing.T) {
	f := newFakeAPI(t)
	dir := t.TempDir()
	check := func(name string, res Result, extra string) {
		t.Helper()
		f.assertNoSecret(name+": errors", fmt.Sprint(res.Errors))
		f.assertNoSecret(name+": log", f.logs.String())
		f.assertNoSecret(name+": output", extra)
	}

	// A webhook whose server is gone: the client's error names the URL.
	opts := f.options()
	opts.Config.Slack = config.Slack{WebhookURLEnv: "SLACK_WEBHOOK_URL"}
	gone := newFakeAPI(t)
	gone.srv.Close()
	opts.Getenv = func(name string) string {
		if name == "SLACK_WEBHOOK_URL" {
			return gone.srv.URL + f.hookPath
		}
		return f.getenv(name)
	}
	res, err := Notify(t.Context(), testReport(), &FileStore{Path: filepath.Join(dir, "a.json")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Err().Error(), "incoming webhook") {
		t.Fatalf("errors %v, want the webhook's connection error", res.Errors)
	}
	check("unreachable webhook", res, "")

	// Endpoints that fail with a retry each, with debug logging.
	f.fail(pathSlackAPI, answer{status: http.StatusInternalServerError})
	f.fail(pathEvents, answer{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"}})
	res, err = Notify(t.Context(), testReport(), &FileStore{Path: filepath.Join(dir, "b.json")}, f.options())
	if err != nil {
		t.Fatal(err)
	}
	check("retried sends", res, "")
	state, err := os.ReadFile(filepath.Join(dir, "b.json"))
	if err != nil {
		t.Fatal(err)
	}
	check("state", Result{}, string(state))

	// A dry run.
	var out bytes.Buffer
	opts = f.options()
	opts.DryRun, opts.DryRunOut = true, &out
	res, err = Notify(t.Context(), testReport(), &FileStore{Path: filepath.Join(dir, "c.json")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	check("dry run", res, out.String())
}

func TestNotifyDryRunSendsNothingAndKeepsNoState(t *testing.T) {
	f := newFakeAPI(t)
	path := filepath.Join(t.TempDir(), "state.json")
	var out bytes.Buffer
	opts := f.options()
	opts.DryRun, opts.DryRunOut = true, &out
	res, err := Notify(t.Context(), testReport(), &FileStore{Path: path}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts{Sent: 6, Errors: 1}, countsOf(res)); diff != "" {
		t.Errorf("(-want +got):\n%s\nerrors: %v", diff, res.Errors)
	}
	if reqs := f.take(); len(reqs) != 0 {
		t.Errorf("a dry run sent %d requests", len(reqs))
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run wrote the state: %v", err)
	}
	golden.Check(t, "dry-run.golden", out.Bytes())
}

func TestNotifyObjectOwnerRoutesPerObject(t *testing.T) {
	f := newFakeAPI(t)
	opts := f.options()
	opts.Config.Route.PagerDuty = []report.Class{}
	// As --owner-label would: the Secret is labelled for team-billing.
	opts.ObjectOwner = func(app report.App, o report.Object) string {
		if o.Kind == "Secret" {
			return "team-billing"
		}
		return ""
	}
	if _, err := Notify(t.Context(), testReport(), &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}, opts); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range f.take() {
		b := r.Body.(map[string]any)
		got = append(got, fmt.Sprintf("%s: %s", b["channel"], b["text"]))
	}
	want := []string{
		"#billing: Drift in billing on prod-eu-1: 3 objects (3 new)",
		"#billing: Drift in web on prod-eu-1: 1 object (1 new)",
		"#web-oncall: <!subteam^S0123> Drift in web on prod-eu-1: 1 object (1 new)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestNotifyRejectsInvalidOptions(t *testing.T) {
	opts := DefaultOptions()
	opts.Config.Slack = config.Slack{TokenEnv: "A", WebhookURLEnv: "B"}
	opts.Owners = config.Owners{"x": {PagerDuty: &config.PagerDutyRoute{}}}
	_, err := Notify(t.Context(), testReport(), &FileStore{Path: filepath.Join(t.TempDir(), "s.json")}, opts)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"not both", `owner "x": pagerduty: set routingKeyEnv or routingKeyFile`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// A missing secret fails that channel only, naming the variable.
func TestNotifyMissingSecretFailsOneChannel(t *testing.T) {
	f := newFakeAPI(t)
	opts := f.options()
	opts.Getenv = func(name string) string {
		if name == "PD_KEY_BILLING" {
			return ""
		}
		return f.getenv(name)
	}
	res, err := Notify(t.Context(), testReport(), &FileStore{Path: filepath.Join(t.TempDir(), "s.json")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts{Sent: 4, Errors: 2}, countsOf(res)); diff != "" {
		t.Errorf("(-want +got):\n%s\nerrors: %v", diff, res.Errors)
	}
	if !strings.Contains(res.Err().Error(), "environment variable PD_KEY_BILLING is empty") {
		t.Errorf("errors %v do not name PD_KEY_BILLING", res.Errors)
	}
}

// A corrupt state is reported, kept aside, and the run still notifies (at
// worst once more) and saves a good state.
func TestNotifyWithACorruptState(t *testing.T) {
	f := newFakeAPI(t)
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Notify(t.Context(), testReport(), &FileStore{Path: path, Now: func() time.Time { return testNow }}, f.options())
	if err != nil {
		t.Fatal(err)
	}
	var corrupt *CorruptStateError
	if !errors.As(res.Err(), &corrupt) || corrupt.KeptAs != path+".corrupt-20260701-120030" {
		t.Errorf("errors %v, want the corrupt state reported with where it was kept", res.Errors)
	}
	if diff := cmp.Diff(counts{Sent: 6, Errors: 2}, countsOf(res)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := (&FileStore{Path: path}).Load(t.Context()); err != nil {
		t.Errorf("the state saved after a corrupt one: %v", err)
	}
}

// TestPagerDutyEventsCarryNoValuesUnlessAsked: a page's custom_details
// are kept by PagerDuty for everyone with access to the service, so they
// name what drifted and who did it, not the values (a connection string
// in a ConfigMap is masked nowhere else). pagerduty.includeValues puts
// them back.
func TestPagerDutyEventsCarryNoValuesUnlessAsked(t *testing.T) {
	r := testReport()
	var values []string
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, f := range o.Findings {
				for _, v := range []string{f.Git, f.Live} {
					if len(v) > 3 && !strings.HasPrefix(v, "***") {
						values = append(values, v)
					}
				}
			}
		}
	}
	if len(values) == 0 {
		t.Fatal("the test report has no values to look for")
	}
	for _, include := range []bool{false, true} {
		f := newFakeAPI(t)
		opts := f.options()
		opts.Config.Slack = config.Slack{}
		opts.Owners = config.Owners{}
		for name, o := range testOwners() {
			o.Slack = nil
			opts.Owners[name] = o
		}
		opts.Config.PagerDuty.IncludeValues = include
		if _, err := Notify(t.Context(), r, &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}, opts); err != nil {
			t.Fatal(err)
		}
		var events, withValues int
		for _, req := range f.take() {
			if req.Path != pathEvents {
				continue
			}
			events++
			body, _ := json.Marshal(req.Body)
			for _, v := range values {
				enc, _ := json.Marshal(v) // the value as the body holds it
				if strings.Contains(string(body), string(enc[1:len(enc)-1])) {
					withValues++
					break
				}
			}
		}
		if events == 0 {
			t.Fatalf("includeValues %v: no PagerDuty event sent", include)
		}
		if include && withValues == 0 {
			t.Errorf("includeValues: no event carries a value")
		}
		if !include && withValues > 0 {
			t.Errorf("%d of %d events carry a finding's value", withValues, events)
		}
	}
}
