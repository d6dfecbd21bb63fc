package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	webhook := Finding{Path: ".spec.template.spec.containers[name=\"istio-proxy\"]", Type: TypeAdded, Class: ClassWebhook}
	human := Finding{Path: ".spec.replicas", Type: TypeChanged, Class: ClassHuman, Manager: "kubectl"}
	ignoredHuman := human
	ignoredHuman.Ignored = true
	ignoredHuman.IgnoreRule = &IgnoreRule{Owner: "team-web", Reason: "scaled on purpose", Expires: "2026-12-31"}
	withAppError := build(StatusInSync)
	withAppError.Apps[0].Error = "render: boom"
	withAppError.Finalize()
	withScanError := build(StatusDrifted, human)
	withScanError.Errors = []string{"list batch/v1 CronJob: not found"}
	withScanError.Finalize()

	ciClasses := []Class{ClassHuman, ClassPipeline, ClassUnknown}
	tests := []struct {
		name   string
		r      *Report
		failOn []Class
		want   int
	}{
		{"no drift exits 0", build(StatusInSync), nil, ExitOK},
		{"nil fail-on fails on every class: webhook", build(StatusDrifted, webhook), nil, ExitDrift},
		{"nil fail-on fails on every class: human", build(StatusDrifted, human), nil, ExitDrift},
		{"fail-on none never fails on drift", build(StatusDrifted, human), []Class{}, ExitOK},
		{"fail-on human,pipeline,unknown with only webhook findings exits 0", build(StatusDrifted, webhook), ciClasses, ExitOK},
		{"fail-on human,pipeline,unknown with a human finding exits 1", build(StatusDrifted, webhook, human), ciClasses, ExitDrift},
		{"an ignored human finding does not fail", build(StatusDrifted, ignoredHuman), ciClasses, ExitOK},
		{"an ignored human finding does not fail with nil fail-on either", build(StatusDrifted, ignoredHuman), nil, ExitOK},
		{"a missing object fails when any class fails", build(StatusMissing), ciClasses, ExitDrift},
		{"a missing object does not fail with fail-on none", build(StatusMissing), []Class{}, ExitOK},
		{"an extra object fails", build(StatusExtra), nil, ExitDrift},
		{"an object in error exits 2", build(StatusError), nil, ExitError},
		{"an object in error exits 2 even with fail-on none", build(StatusError), []Class{}, ExitError},
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

func TestFailOnWarningFailsADegradedScan(t *testing.T) {
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	build := func(warnings ...Warning) *Report {
		r := New(at, "prod")
		r.Apps = []App{{Name: "web", Objects: []Object{{Kind: "Deployment", Namespace: "web", Name: "frontend"}}}}
		r.Warnings = warnings
		r.Finalize()
		return r
	}
	degraded := build(Warning{Code: WarnWebhooksUnreadable, Message: "cannot list MutatingWebhookConfigurations"})
	if degraded.Summary.Warnings != 1 {
		t.Errorf("summary counts %d warnings, want 1", degraded.Summary.Warnings)
	}
	tests := []struct {
		name   string
		r      *Report
		failOn string
		want   int
	}{
		{"warnings alone do not fail by default", degraded, "all", ExitOK},
		{"all,warning fails a degraded scan", degraded, "all,warning", ExitDrift},
		{"warning alone fails a degraded scan", degraded, "warning", ExitDrift},
		{"none,warning fails a degraded scan", degraded, "none,warning", ExitDrift},
		{"human,warning fails a degraded scan", degraded, "human,warning", ExitDrift},
		{"warning passes a scan without warnings", build(), "warning", ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFailOn(tt.failOn)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.r.ExitCodeFor(f); got != tt.want {
				t.Errorf("--fail-on %s: exit %d, want %d", tt.failOn, got, tt.want)
			}
		})
	}
}

func TestParseFailOn(t *testing.T) {
	tests := []struct {
		in   string
		want FailOn
	}{
		{"", FailOn{}},
		{"all", FailOn{}},
		{"none", FailOn{Classes: []Class{}}},
		{"human, pipeline", FailOn{Classes: []Class{ClassHuman, ClassPipeline}}},
		{"all,warning", FailOn{Warnings: true}},
		{"warning", FailOn{Classes: []Class{}, Warnings: true}},
		{"unknown,warning", FailOn{Classes: []Class{ClassUnknown}, Warnings: true}},
	}
	for _, tt := range tests {
		got, err := ParseFailOn(tt.in)
		if err != nil {
			t.Errorf("ParseFailOn(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseFailOn(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
	if _, err := ParseFailOn("human,robots"); err == nil || !strings.Contains(err.Error(), `unknown class "robots"`) || !strings.Contains(err.Error(), "warning") {
		t.Errorf("ParseFailOn(human,robots) error = %v; want one naming robots and listing warning", err)
	}
}
