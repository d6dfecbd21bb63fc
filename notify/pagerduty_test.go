package notify

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

func TestTriggerSummaryStaysUnder1024Bytes(t *testing.T) {
	it := item{
		key:   Key{Cluster: "prod", App: strings.Repeat("ä", 600), Kind: "ConfigMap", Namespace: strings.Repeat("n", 63), Name: strings.Repeat("名", 253)},
		app:   strings.Repeat("ä", 600),
		owner: "team-web", change: ChangeNew, dedupKey: "k",
		findings: []report.Finding{{Path: ".data.a", Class: report.ClassHuman, Type: report.TypeChanged}},
	}
	ev := triggerEvent(it, "key", "error", messageContext{cluster: "prod"}, scannedAt)
	s := ev.Payload.Summary
	if len(s) > pdMaxSummary || !utf8.ValidString(s) || !strings.HasPrefix(s, "Drift on ConfigMap/") {
		t.Errorf("summary of %d bytes (valid UTF-8: %v): %.80s…", len(s), utf8.ValidString(s), s)
	}
}

func TestTriggerDetailsAreCut(t *testing.T) {
	var findings []report.Finding
	for range pdMaxFindings + 7 {
		findings = append(findings, report.Finding{Path: ".data.a", Class: report.ClassHuman, Type: report.TypeChanged, Live: strings.Repeat("v", 5000)})
	}
	ev := triggerEvent(item{key: Key{Kind: "ConfigMap", Name: "a"}, findings: findings}, "key", "error", messageContext{pagerDutyValues: true}, scannedAt)
	d := ev.Payload.Details.(pdDetails)
	if len(d.Findings) != pdMaxFindings || d.OmittedFindings != 7 {
		t.Errorf("%d findings with %d omitted, want %d and 7", len(d.Findings), d.OmittedFindings, pdMaxFindings)
	}
	if n := len(d.Findings[0].Live); n > pdMaxValue {
		t.Errorf("live value of %d bytes, want at most %d", n, pdMaxValue)
	}
}

func TestDedupKey(t *testing.T) {
	k := Key{Cluster: "prod-eu-1", App: "web", Group: "apps", Kind: "Deployment", Namespace: "prod-web", Name: "web"}
	if got, want := dedupKey(k), "driftscan/prod-eu-1/web/Deployment.apps/prod-web/web"; got != want {
		t.Errorf("dedupKey = %q, want %q", got, want)
	}
	long := k
	long.Cluster = "https://" + strings.Repeat("a", 250) + ".example.com:6443"
	got := dedupKey(long)
	if len(got) > pdMaxDedupKey || got != dedupKey(long) || got == dedupKey(k) {
		t.Errorf("dedupKey of a long key = %q: want a stable hash within %d characters", got, pdMaxDedupKey)
	}
}

func TestSeverityFromTiers(t *testing.T) {
	cfg := config.Notify{Tiers: []config.Tier{
		{Namespaces: []string{"prod-*"}, PagerDutySeverity: "critical"},
		{Apps: []string{"billing"}, PagerDutySeverity: "warning"},
		{Namespaces: []string{"staging"}, Apps: []string{"web"}, PagerDutySeverity: "info"},
	}}
	tests := []struct {
		name, app, ns, want string
	}{
		{"a prod namespace is critical", "web", "prod-web", "critical"},
		{"the first matching tier wins", "billing", "prod-billing", "critical"},
		{"an app tier matches in any namespace", "billing", "staging", "warning"},
		{"a tier with both lists needs both", "web", "staging", "info"},
		{"the same namespace for another app falls through", "search", "staging", config.DefaultSeverity},
		{"a cluster-scoped object matches no namespace glob", "web", "", config.DefaultSeverity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cfg.Severity(tt.app, tt.ns); got != tt.want {
				t.Errorf("severity(%q, %q) = %q, want %q", tt.app, tt.ns, got, tt.want)
			}
		})
	}
}

func TestEventsURLForms(t *testing.T) {
	for _, u := range []string{"", "/", "/v2/enqueue"} {
		t.Run("eventsURL server"+u, func(t *testing.T) {
			f := newFakeAPI(t)
			cfg := config.PagerDuty{EventsURL: f.srv.URL + u}
			ev := resolveEvent(item{dedupKey: "driftscan/x"}, testSecrets["PD_KEY_WEB"])
			if err := NewPagerDuty(cfg, f.srv.Client()).Send(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
			if reqs := f.take(); len(reqs) != 1 || reqs[0].Path != pathEvents {
				t.Errorf("requests %+v, want one to %s", reqs, pathEvents)
			}
		})
	}
}
