package notify

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// oneObject is a report with one Deployment of app web holding findings.
func oneObject(findings ...report.Finding) *report.Report {
	r := report.New(scannedAt, "prod-eu-1")
	r.Apps = []report.App{{Name: "web", Owner: "team-web", Objects: []report.Object{
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod-web", Name: "web", Findings: findings},
	}}}
	r.Finalize()
	return r
}

func testPlanner(route config.Route) *planner {
	cfg := testConfig()
	cfg.Route = route
	return &planner{cluster: "prod-eu-1", cfg: cfg, owners: testOwners(), now: testNow, renew: 24 * time.Hour}
}

// channels lists where a plan sends, as "slack:new" and "pagerduty:new".
func channels(p plan) []string {
	out := []string{}
	for _, it := range p.slack {
		out = append(out, "slack:"+string(it.change))
	}
	for _, it := range p.pagerduty {
		out = append(out, "pagerduty:"+string(it.change))
	}
	return out
}

func TestRouteByClass(t *testing.T) {
	finding := func(c report.Class) report.Finding {
		return report.Finding{Path: ".spec.x", Type: report.TypeChanged, Class: c, Git: "a", Live: "b"}
	}
	tests := []struct {
		name  string
		route config.Route
		class report.Class
		want  []string
	}{
		{"human drift pages by default", config.Route{}, report.ClassHuman, []string{"slack:new", "pagerduty:new"}},
		{"unknown drift pages by default", config.Route{}, report.ClassUnknown, []string{"slack:new", "pagerduty:new"}},
		{"webhook drift goes only to Slack by default", config.Route{}, report.ClassWebhook, []string{"slack:new"}},
		{"operator drift goes only to Slack by default", config.Route{}, report.ClassOperator, []string{"slack:new"}},
		{"pipeline drift goes only to Slack by default", config.Route{}, report.ClassPipeline, []string{"slack:new"}},
		{"an empty route sends nothing there", config.Route{Slack: []report.Class{}}, report.ClassHuman, []string{"pagerduty:new"}},
		{"a route can page for operators", config.Route{PagerDuty: []report.Class{report.ClassOperator}}, report.ClassOperator, []string{"slack:new", "pagerduty:new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlanner(tt.route).plan(oneObject(finding(tt.class)), NewState())
			if diff := cmp.Diff(tt.want, channels(p)); diff != "" {
				t.Errorf("channels (-want +got):\n%s", diff)
			}
		})
	}
}

// sentState is a state in which the web Deployment's human drift was told
// on both channels at testNow.
func sentState(findings ...report.Finding) *State {
	st := NewState()
	key := Key{Cluster: "prod-eu-1", App: "web", Group: "apps", Kind: "Deployment", Namespace: "prod-web", Name: "web"}
	fp := Fingerprint(findings)
	st.Record(key, ChannelSlack, Delivery{Fingerprint: fp, Owner: "team-web", Target: "#web-oncall", SentAt: testNow})
	st.Record(key, ChannelPagerDuty, Delivery{Fingerprint: fp, Owner: "team-web", Target: "env:PD_KEY_WEB", DedupKey: dedupKey(key), SentAt: testNow})
	return st
}

func TestPlanAgainstState(t *testing.T) {
	human := imageFinding("web:hotfix")
	tests := []struct {
		name   string
		report *report.Report
		now    time.Time
		want   []string
	}{
		{"the same drift is skipped", oneObject(human), testNow.Add(time.Hour), []string{}},
		{"the same drift past RenotifyAfter is sent again", oneObject(human), testNow.Add(25 * time.Hour), []string{"slack:still open", "pagerduty:still open"}},
		{"a changed value is sent as changed", oneObject(imageFinding("web:other")), testNow, []string{"slack:changed", "pagerduty:changed"}},
		{"an object back in sync is resolved", oneObject(), testNow, []string{"slack:resolved", "pagerduty:resolved"}},
		{"ignored drift is resolved", oneObject(func() report.Finding { f := human; f.Ignored = true; return f }()), testNow, []string{"slack:resolved", "pagerduty:resolved"}},
		{"drift left only of a class that does not page resolves the page", oneObject(replicasFinding()), testNow, []string{"slack:changed", "pagerduty:resolved"}},
		{
			"an object that could not be compared is neither told nor resolved",
			func() *report.Report {
				r := oneObject()
				r.Apps[0].Objects[0].Status, r.Apps[0].Objects[0].Error = report.StatusError, "forbidden"
				return r
			}(), testNow, []string{},
		},
		{
			"an app that failed to render resolves nothing",
			func() *report.Report {
				r := oneObject()
				r.Apps[0].Objects, r.Apps[0].Error = nil, "render failed"
				return r
			}(),
			testNow, []string{},
		},
		{
			"an object the app no longer declares is resolved",
			func() *report.Report { r := oneObject(); r.Apps[0].Objects = []report.Object{}; return r }(),
			testNow, []string{"slack:resolved", "pagerduty:resolved"},
		},
		{
			"an app absent from the report resolves nothing (a scan of some apps)",
			func() *report.Report { r := oneObject(); r.Apps = []report.App{}; return r }(),
			testNow, []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := testPlanner(config.Route{})
			pl.now = tt.now
			p := pl.plan(tt.report, sentState(human))
			if diff := cmp.Diff(tt.want, channels(p)); diff != "" {
				t.Errorf("channels (-want +got):\n%s", diff)
			}
			for _, it := range p.pagerduty {
				if it.dedupKey != "driftscan/prod-eu-1/web/Deployment.apps/prod-web/web" {
					t.Errorf("%s uses dedup key %q, want the incident's", it.change, it.dedupKey)
				}
			}
		})
	}
}

func TestPlanResolvesToWhereItWasSent(t *testing.T) {
	st := sentState(imageFinding("x"))
	pl := testPlanner(config.Route{})
	pl.owners = config.Owners{} // the owner's routes are gone from the config
	p := pl.plan(oneObject(), st)
	got := []string{}
	for _, it := range append(p.slack, p.pagerduty...) {
		got = append(got, fmt.Sprintf("%s %s %s", it.change, it.owner, it.target))
	}
	want := []string{"resolved team-web #web-oncall", "resolved team-web env:PD_KEY_WEB"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
