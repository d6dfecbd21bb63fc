package run

import (
	"testing"

	"github.com/calricon/driftscan/report"
)

func TestAuditAttributionNamesOnlyWhomTheAuditLogSinglesOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *report.Attribution
		want string
	}{
		{"no audit log", nil, ""},
		{"an exact event", &report.Attribution{Confidence: report.ConfidenceExact, User: "alice"}, "alice"},
		{"several candidates", &report.Attribution{Confidence: report.ConfidenceCandidate, User: "alice"}, ""},
		{"the requester of a webhook's change", &report.Attribution{Confidence: report.ConfidenceExact, User: "alice", Requester: true}, ""},
	} {
		got := AuditAttribution(report.App{}, report.Object{}, report.Finding{Attribution: tc.a})
		if (got == nil) != (tc.want == "") || (got != nil && got.User != tc.want) {
			t.Errorf("%s: got %+v, want user %q", tc.name, got, tc.want)
		}
	}
}
