package notify

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

func TestRouteByContractVerdict(t *testing.T) {
	finding := func(c report.Class, v report.Verdict) report.Finding {
		return report.Finding{Path: ".spec.x", Type: report.TypeChanged, Class: c, Git: "a", Live: "b",
			Contract: &report.ContractVerdict{Name: "production", Verdict: v}}
	}
	pageViolations := config.Route{PagerDuty: config.ContractRoute()}
	tests := []struct {
		name    string
		route   config.Route
		finding report.Finding
		want    []string
	}{
		{"a human edit that breaks the contract pages", pageViolations, finding(report.ClassHuman, report.VerdictViolation), []string{"slack:new", "pagerduty:new"}},
		{"a human edit the contract allows (break-glass) does not page", pageViolations, finding(report.ClassHuman, report.VerdictAllowed), []string{"slack:new"}},
		{"an operator change that breaks the contract pages", pageViolations, finding(report.ClassOperator, report.VerdictViolation), []string{"slack:new", "pagerduty:new"}},
		{"an uncovered human edit does not page under route [violation]", pageViolations, finding(report.ClassHuman, report.VerdictUncovered), []string{"slack:new"}},
		{"violation and classes add up", config.Route{PagerDuty: []report.Class{"violation", report.ClassUnknown}}, finding(report.ClassUnknown, report.VerdictAllowed), []string{"slack:new", "pagerduty:new"}},
		{"Slack can take only violations too", config.Route{Slack: config.ContractRoute(), PagerDuty: []report.Class{}}, finding(report.ClassPipeline, report.VerdictViolation), []string{"slack:new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlanner(tt.route).plan(oneObject(tt.finding), NewState())
			if diff := cmp.Diff(tt.want, channels(p)); diff != "" {
				t.Errorf("channels (-want +got):\n%s", diff)
			}
		})
	}
}
