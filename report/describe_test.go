package report

import (
	"testing"
	"time"
)

func TestFindingBy(t *testing.T) {
	tests := []struct {
		name string
		f    Finding
		want string
	}{
		{"a manager", Finding{Manager: "kubectl-set"}, "kubectl-set"},
		{"a manager through a subresource", Finding{Manager: "kube-controller-manager", Subresource: "scale"}, "kube-controller-manager/scale"},
		{"no manager but a likely actor", Finding{Actor: "istio-sidecar-injector"}, "(istio-sidecar-injector)"},
		{"nobody known", Finding{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.By(); got != tt.want {
				t.Errorf("By() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFindingAge(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		time, want string
	}{
		{"2026-07-01T11:55:00Z", "5m"},
		{"2026-07-01T09:00:00Z", "3h"},
		{"2026-06-29T12:00:00Z", "2d"},
		{"2026-07-01T12:00:30Z", "0s"}, // written after now: clock skew
		{"", "-"},
		{"yesterday", "-"},
	}
	for _, tt := range tests {
		if got := (Finding{Time: tt.time}).Age(now); got != tt.want {
			t.Errorf("Age of %q = %q, want %q", tt.time, got, tt.want)
		}
	}
}

func TestTheAuditEventDatesAFieldManagedFieldsLeaveUndated(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	// The HPA's write through the scale subresource: no time in managedFields.
	f := Finding{Manager: "kube-controller-manager", Subresource: "scale", Attribution: &Attribution{Confidence: ConfidenceCandidate, Time: "2026-07-01T11:20:00.123456Z"}}
	if got := f.Age(now); got != "-" {
		t.Errorf("Age from a candidate = %q, want -: several events could have made it", got)
	}
	f.Attribution.Confidence = ConfidenceExact
	if got := f.Age(now); got != "39m" {
		t.Errorf("Age = %q, want the audit event's 39m", got)
	}
	f.Time = "2026-07-01T11:55:00Z"
	if got := f.Age(now); got != "5m" {
		t.Errorf("Age with a managedFields time = %q, want that time's 5m", got)
	}
}

func TestIgnoreRuleTarget(t *testing.T) {
	tests := []struct {
		r    IgnoreRule
		want string
	}{
		{IgnoreRule{Kind: "Deployment", Namespace: "billing", Name: "api", JSONPointers: []string{"/spec/replicas"}}, "Deployment billing/api /spec/replicas"},
		{IgnoreRule{Group: "apps", Kind: "Deployment", ManagedFieldsManagers: []string{"vpa"}}, "Deployment.apps manager=vpa"},
		{IgnoreRule{Namespace: "web", JQPathExpressions: []string{".data.X"}, App: "web"}, "* web/* (app web) .data.X"},
	}
	for _, tt := range tests {
		if got := tt.r.Target(); got != tt.want {
			t.Errorf("Target() = %q, want %q", got, tt.want)
		}
	}
}

func TestAppManifestPath(t *testing.T) {
	tests := []struct {
		source, file, want string
	}{
		{"apps/web", "deployment.yaml", "apps/web/deployment.yaml"},
		{"apps/web", ".", "apps/web"},
		{"./apps/web/", "base/cm.yaml", "apps/web/base/cm.yaml"},
		{`apps\web`, `base\cm.yaml`, "apps/web/base/cm.yaml"},
		{"", ".", "."},
		{"/", "x.yaml", "x.yaml"},
		{"apps/web", "", ""},
	}
	for _, tt := range tests {
		app := App{Source: Source{Path: tt.source}}
		if got := app.ManifestPath(Object{File: tt.file}); got != tt.want {
			t.Errorf("ManifestPath(%q, %q) = %q, want %q", tt.source, tt.file, got, tt.want)
		}
	}
}

func TestAppSummaryMatchesTheScanSummaryForOneApp(t *testing.T) {
	r := loadFixture(t)
	total := Summary{ByClass: map[Class]int{}}
	for _, app := range r.Apps {
		total.add(app.Summary())
	}
	total.Errors += len(r.Errors)
	total.Warnings += len(r.Warnings) // warnings belong to the report, not to an app's count
	if got, want := summaryText(total), summaryText(r.Summary); got != want || total.Apps != r.Summary.Apps {
		t.Errorf("app summaries add up to %q, want %q", got, want)
	}
}
