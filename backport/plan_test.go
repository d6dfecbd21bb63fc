package backport

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/report"
)

func TestPlanTakesPipelineAndHumanDriftAndNeverSecrets(t *testing.T) {
	app := report.App{Name: "web", Objects: []report.Object{{
		APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", File: "deploy.yaml", Line: 1,
		Findings: []report.Finding{
			{Path: `.spec.template.spec.containers[name="app"].image`, Type: report.Changed, Class: report.ClassPipeline, Manager: "kubectl-set", Git: "nginx:1.25", Live: "nginx:1.26"},
			{Path: ".spec.replicas", Type: report.Changed, Class: report.ClassOperator, Manager: "kube-controller-manager", Git: "3", Live: "5"},
			{Path: ".metadata.annotations.sidecar.istio.io/status", Type: report.Added, Class: report.ClassWebhook, Live: "{}"},
			{Path: ".spec.paused", Type: report.Changed, Class: report.ClassUnknown, Git: "false", Live: "true"},
			{Path: ".spec.minReadySeconds", Type: report.Changed, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "5", Live: "10", Ignored: true},
			{Path: `.spec.template.spec.containers[name="app"].env[name="OLD"]`, Type: report.Removed, Class: report.ClassHuman, Manager: "kubectl-patch", Git: `{"name":"OLD","value":"1"}`},
			{Path: `.spec.template.spec.containers[name="app"].env[name="TOKEN"].value`, Type: report.Changed, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "***", Live: "*** (differs)"},
		},
	}, {
		APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db",
		Findings: []report.Finding{{Path: ".data.password", Type: report.Changed, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "***", Live: "*** (differs)"}},
	}}}
	edits, skipped := Plan(app)
	var got []string
	for _, e := range edits {
		got = append(got, e.Field())
	}
	want := []string{
		`Deployment/shop/web .spec.template.spec.containers[name="app"].image`,
		`Deployment/shop/web .spec.template.spec.containers[name="app"].env[name="OLD"]`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("edits (-want +got):\n%s", diff)
	}
	if edits[0].Value != "nginx:1.26" || edits[1].Value != nil {
		t.Errorf("values %#v and %#v", edits[0].Value, edits[1].Value)
	}
	var reasons []string
	for _, s := range skipped {
		reasons = append(reasons, s.Field()+": "+strings.Join(strings.Fields(s.Reason)[:5], " "))
	}
	wantSkipped := []string{
		`Deployment/shop/web .spec.template.spec.containers[name="app"].env[name="TOKEN"].value: the value is masked in`,
		`Secret/shop/db .data.password: Secret data is masked in`,
	}
	if diff := cmp.Diff(wantSkipped, reasons); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}
