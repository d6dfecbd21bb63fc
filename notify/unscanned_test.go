package notify

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/report"
)

// chartError is what the scan reports for an app whose chart does not
// render; it quotes template text with backticks, as Helm's errors do.
const chartError = "app web: render chart ./charts/web: template: web/templates/deployment.yaml:14:20: executing \"web/templates/deployment.yaml\" at <.Values.image.tag>: nil pointer evaluating interface {}.tag (a ``` fence, <b>, & all)"

// webApp is app web of team-web: failing with errText, or scanned with one
// object in sync.
func webApp(errText string) *report.Report {
	r := report.New(scannedAt, "prod-eu-1")
	app := report.App{Name: "web", Owner: "team-web", Error: errText}
	if errText == "" {
		app.Objects = []report.Object{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod-web", Name: "web-config", Status: report.StatusInSync}}
	}
	r.Apps = []report.App{app}
	return r
}

// unscannedLeft is what the state keeps of unscanned apps: app and stage.
func unscannedLeft(t *testing.T, store Store) []string {
	t.Helper()
	st, err := store.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range st.Objects {
		if e.Kind == UnscannedKind && e.Slack != nil {
			left = append(left, e.App+": "+e.Slack.Fingerprint)
		}
	}
	return left
}

// TestAnAppThatCannotBeScannedIsToldToItsOwnerOnce runs the scheduled scan
// through an app whose chart breaks: nothing on the first failing run (a
// Git host down for one run tells nobody), one message once it has failed
// for UnscannedAfter, none on the next runs, one more after RenotifyAfter,
// one when it is scanned again, and nothing for a failure that lasts one
// run only.
func TestAnAppThatCannotBeScannedIsToldToItsOwnerOnce(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	steps := []struct {
		name     string
		report   *report.Report
		at       time.Duration // after testNow
		sent     int
		resolved int
		golden   string
		says     string
		left     []string
	}{
		{"the first failing run tells nobody", webApp(chartError), 0, 0, 0, "", "", []string{"web: " + unscannedSeen}},
		{"nor does one within the hour", webApp(chartError), 30 * time.Minute, 0, 0, "", "", []string{"web: " + unscannedSeen}},
		{"an hour after it was first seen the owner is told why", webApp(chartError), time.Hour, 1, 0, "unscanned.golden", "", []string{"web: " + unscannedTold}},
		{"the next runs do not tell again", webApp(chartError), 2 * time.Hour, 0, 0, "", "", []string{"web: " + unscannedTold}},
		{"a different error is not a new message", webApp("app web: fetch https://git.example.com/acme/deploy.git: connection refused"), 3 * time.Hour, 0, 0, "", "", []string{"web: " + unscannedTold}},
		{"a day after it was told it is told again", webApp(chartError), 25 * time.Hour, 1, 0, "", "driftscan still cannot scan web on prod-eu-1", []string{"web: " + unscannedTold}},
		{"scanned again, the owner is told so and the state forgets it", webApp(""), 26 * time.Hour, 0, 1, "unscanned-fixed.golden", "", nil},
		{"a failure of one run", webApp(chartError), 27 * time.Hour, 0, 0, "", "", []string{"web: " + unscannedSeen}},
		{"is forgotten without a word when the next run scans it", webApp(""), 28 * time.Hour, 0, 0, "", "", nil},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			res, got := f.notifyAt(t, step.report, store, step.at)
			if res.Sent != step.sent || res.Resolved != step.resolved {
				t.Errorf("sent %d and resolved %d, want %d and %d", res.Sent, res.Resolved, step.sent, step.resolved)
			}
			if step.golden != "" {
				golden.Check(t, step.golden, f.golden(got))
			}
			if step.says != "" && (len(got) != 1 || !strings.Contains(string(f.golden(got)), step.says)) {
				t.Errorf("want one message saying %q, got:\n%s", step.says, f.golden(got))
			}
			if left := unscannedLeft(t, store); !equalStrings(left, step.left) {
				t.Errorf("the state keeps %q, want %q", left, step.left)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n") && len(a) == len(b)
}

// TestUnscannedAfterZeroTellsAtOnceAndNegativeNever: 0 tells on the
// first failing run; a negative UnscannedAfter never tells, and forgets
// what was kept.
func TestUnscannedAfterZeroTellsAtOnceAndNegativeNever(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	opts := f.options()
	opts.UnscannedAfter = 0
	res, err := Notify(t.Context(), webApp(chartError), store, opts)
	if err != nil || len(res.Errors) > 0 || res.Sent != 1 {
		t.Fatalf("UnscannedAfter 0: sent %d, errors %v %v; want one message on the first failing run", res.Sent, err, res.Errors)
	}
	f.take()
	if left := unscannedLeft(t, store); !equalStrings(left, []string{"web: " + unscannedTold}) {
		t.Errorf("after the first failing run told the owner, the state keeps %q, want it told", left)
	}
	opts.Now = func() time.Time { return testNow.Add(time.Minute) }
	if res, err := Notify(t.Context(), webApp(chartError), store, opts); err != nil || res.Sent != 0 || len(f.take()) != 0 {
		t.Errorf("UnscannedAfter 0, the second failing run: sent %d (%v), want nothing more", res.Sent, err)
	}
	opts.UnscannedAfter = -1
	opts.Now = func() time.Time { return testNow.Add(2 * time.Minute) }
	res, err = Notify(t.Context(), webApp(""), store, opts)
	if err != nil || res.Sent+res.Resolved != 0 || len(f.take()) != 0 {
		t.Fatalf("negative UnscannedAfter: sent %d, resolved %d, err %v; want nothing sent", res.Sent, res.Resolved, err)
	}
	if left := unscannedLeft(t, store); len(left) != 0 {
		t.Errorf("negative UnscannedAfter left %q in the state", left)
	}
}

// TestAnUnscannedAppWithoutAKnownOwnerIsAnError: nobody can be told that
// its drift goes unseen, so the run says so, naming app and owner.
func TestAnUnscannedAppWithoutAKnownOwnerIsAnError(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	opts := f.options()
	opts.UnscannedAfter = 0
	r := webApp(chartError)
	r.Apps[0].Owner = "team-gone"
	res, err := Notify(t.Context(), r, store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), `app "web": could not be scanned`) || !strings.Contains(res.Errors[0].Error(), `its owner "team-gone" is not in owners`) {
		t.Errorf("errors %v, want one naming app web and owner team-gone", res.Errors)
	}
	if res.Sent != 0 || len(f.take()) != 0 {
		t.Errorf("sent %d, want none", res.Sent)
	}
}

// TestAnAppRemovedWhileUnscannedIsForgotten: with AllApps, an app the
// report lacks was taken out of the config; without it, it may only be out
// of this run's scope (a shard, --app) and is kept.
func TestAnAppRemovedWhileUnscannedIsForgotten(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	opts := f.options()
	if _, err := Notify(t.Context(), webApp(chartError), store, opts); err != nil {
		t.Fatal(err)
	}
	other := report.New(scannedAt, "prod-eu-1")
	other.Apps = []report.App{{Name: "billing", Owner: "team-billing"}}
	if _, err := Notify(t.Context(), other, store, opts); err != nil {
		t.Fatal(err)
	}
	if left := unscannedLeft(t, store); !equalStrings(left, []string{"web: " + unscannedSeen}) {
		t.Errorf("a run of other apps left %q, want web kept", left)
	}
	opts.AllApps = true
	if _, err := Notify(t.Context(), other, store, opts); err != nil {
		t.Fatal(err)
	}
	if left := unscannedLeft(t, store); len(left) != 0 {
		t.Errorf("a run of every app left %q, want web forgotten", left)
	}
	if got := f.take(); len(got) != 0 {
		t.Errorf("%d requests, want none", len(got))
	}
}
