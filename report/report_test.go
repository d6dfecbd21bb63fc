package report

import (
	"testing"
	"time"
)

func TestExitCode(t *testing.T) {
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	// build makes a finalized report with one object holding findings.
	build := func(status Status, findings ...Finding) *Report {
		r := New(at, "prod")
		r.Apps = []App{{Name: "web", Objects: []Object{{Kind: "Deployment", Namespace: "web", Name: "frontend", Status: status, Findings: findings}}}}
		r.Finalize()
		return r
	}
	webhook := Finding{Path: ".spec.template.spec.containers[name=\"istio-proxy\"]", Type: Added, Class: ClassWebhook}
	human := Finding{Path: ".spec.replicas", Type: Changed, Class: ClassHuman, Manager: "kubectl"}
	ignoredHuman := human
	ignoredHuman.Ignored = true
	ignoredHuman.IgnoreRule = &IgnoreRule{Owner: "team-web", Reason: "scaled on purpose", Expires: "2026-12-31"}
	withAppError := build(InSync)
	withAppError.Apps[0].Error = "render: boom"
	withAppError.Finalize()
	withScanError := build(Drifted, human)
	withScanError.Errors = []string{"list batch/v1 CronJob: not found"}
	withScanError.Finalize()

	ciClasses := []Class{ClassHuman, ClassPipeline, ClassUnknown}
	tests := []struct {
		name   string
		r      *Report
		failOn []Class
		want   int
	}{
		{"no drift exits 0", build(InSync), nil, ExitOK},
		{"nil fail-on fails on every class: webhook", build(Drifted, webhook), nil, ExitDrift},
		{"nil fail-on fails on every class: human", build(Drifted, human), nil, ExitDrift},
		{"fail-on none never fails on drift", build(Drifted, human), []Class{}, ExitOK},
		{"fail-on human,pipeline,unknown with only webhook findings exits 0", build(Drifted, webhook), ciClasses, ExitOK},
		{"fail-on human,pipeline,unknown with a human finding exits 1", build(Drifted, webhook, human), ciClasses, ExitDrift},
		{"an ignored human finding does not fail", build(Drifted, ignoredHuman), ciClasses, ExitOK},
		{"an ignored human finding does not fail with nil fail-on either", build(Drifted, ignoredHuman), nil, ExitOK},
		{"a missing object fails when any class fails", build(Missing), ciClasses, ExitDrift},
		{"a missing object does not fail with fail-on none", build(Missing), []Class{}, ExitOK},
		{"an extra object fails", build(Extra), nil, ExitDrift},
		{"an object in error exits 2", build(Error), nil, ExitError},
		{"an object in error exits 2 even with fail-on none", build(Error), []Class{}, ExitError},
		{"an app error exits 2", withAppError, ciClasses, ExitError},
		{"a scan error exits 2 over drift", withScanError, nil, ExitError},
		{"the fixture, with errors, exits 2", loadFixture(t), ciClasses, ExitError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.ExitCode(tt.failOn); got != tt.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tt.failOn, got, tt.want)
			}
		})
	}
}
