package notify

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/report"
)

// suspendedWeb is app web of team-web, in sync but suspended until
// testNow+2h, with a hotfix that Git lacks carried by pull request 7.
func suspendedWeb(unbackported int, pr *report.PullRequest) *report.Report {
	r := report.New(scannedAt, "prod-eu-1")
	r.Apps = []report.App{{
		Name: "web", Owner: "team-web",
		Breakglass: &report.Breakglass{By: "alice@example.com", Reason: "INC-4211 payment certs", Since: testNow.UTC().Format(time.RFC3339),
			Until: testNow.Add(2 * time.Hour).UTC().Format(time.RFC3339), Unbackported: unbackported, BackportPR: true, PullRequest: pr},
	}}
	return r
}

// TestABreakglassDeadlineIsRemindedOnceBeforeAndOnceAfter runs the
// scheduled scan through a suspension's life: nothing while the deadline
// is far, one reminder within BreakglassWarnBefore, none on the next scan,
// one when it expired, none after, and the state forgets it once resumed.
func TestABreakglassDeadlineIsRemindedOnceBeforeAndOnceAfter(t *testing.T) {
	f := newFakeAPI(t)
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	pr := &report.PullRequest{URL: "https://github.com/acme/deploy/pull/7", Number: 7, Branch: "hotfix/web-inc-4211-payment-certs", State: "open"}
	steps := []struct {
		name   string
		report *report.Report
		at     time.Duration // after testNow
		sent   int
		golden string
	}{
		{"two hours before the deadline nothing is sent", suspendedWeb(1, pr), 0, 0, ""},
		{"twenty minutes before it the owner is reminded", suspendedWeb(1, pr), 100 * time.Minute, 1, "reminder-soon.golden"},
		{"the next scan does not remind again", suspendedWeb(1, pr), 110 * time.Minute, 0, ""},
		{"past it the owner is told it expired, the hotfix now in Git", suspendedWeb(0, &report.PullRequest{URL: pr.URL, Number: 7, Branch: pr.Branch, State: "merged"}), 125 * time.Minute, 1, "reminder-expired.golden"},
		{"an expired suspension is told once", suspendedWeb(0, pr), 3 * time.Hour, 0, ""},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			res, got := f.notifyAt(t, step.report, store, step.at)
			if res.Sent != step.sent {
				t.Errorf("sent %d, want %d", res.Sent, step.sent)
			}
			if step.golden != "" {
				golden.Check(t, step.golden, f.golden(got))
			}
		})
	}

	// Resumed: the app has no suspension any more, its reminders are forgotten.
	resumed := suspendedWeb(0, nil)
	resumed.Apps[0].Breakglass = nil
	opts := f.options()
	opts.Now = func() time.Time { return testNow.Add(4 * time.Hour) }
	if _, err := Notify(t.Context(), resumed, store, opts); err != nil {
		t.Fatal(err)
	}
	st, err := store.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range st.Objects {
		if e.Group == ReminderGroup {
			left = append(left, e.Name)
		}
	}
	if diff := cmp.Diff([]string(nil), left); diff != "" {
		t.Errorf("reminders left in the state (-want +got):\n%s", diff)
	}
}

func TestAReminderSaysWhetherTheHotfixIsInGitAndLinksThePullRequest(t *testing.T) {
	mc := messageContext{cluster: "prod-eu-1", now: testNow.Add(100 * time.Minute)}
	for _, c := range []struct {
		name         string
		unbackported int
		pr           *report.PullRequest
		want         []string
	}{
		{"not in Git, no pull request", 2, nil, []string{"*not in Git yet*: 2 changes", "No pull request carries it yet: `driftscan backport --app web --pr`"}},
		{"not in Git, a pull request", 1, &report.PullRequest{URL: "https://git.example.com/pr/3", Number: 3, Branch: "hotfix/web", State: "open"}, []string{"<https://git.example.com/pr/3|#3 hotfix/web> (open)"}},
		{"in Git", 0, nil, []string{"The hotfix is in Git: resuming reverts nothing"}},
	} {
		rm := reminder{app: suspendedWeb(c.unbackported, c.pr).Apps[0], owner: "team-web", stage: reminderSoon}
		msg := reminderMessage(rm, "<!subteam^S1>", mc)
		var text strings.Builder
		for _, b := range msg.Blocks {
			text.WriteString(sectionText(b) + "\n")
		}
		for _, w := range c.want {
			if !strings.Contains(text.String(), w) {
				t.Errorf("%s: the message lacks %q:\n%s", c.name, w, text.String())
			}
		}
		if !strings.HasPrefix(msg.Text, "<!subteam^S1> Break-glass of web on prod-eu-1 ends in 20m") {
			t.Errorf("%s: text %q", c.name, msg.Text)
		}
	}
}

// sectionText is the mrkdwn of a section block.
func sectionText(b slack.Block) string {
	if s, ok := b.(*slack.SectionBlock); ok && s.Text != nil {
		return s.Text.Text
	}
	return ""
}
