package backport

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/report"
)

func TestPlanTakesPipelineAndHumanDriftAndNeverSecrets(t *testing.T) {
	container := func(rest ...string) []string {
		return append([]string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"app"}`}, rest...)
	}
	app := report.App{Name: "web", Objects: []report.Object{{
		APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", File: "deploy.yaml", Line: 1,
		Findings: []report.Finding{
			{Path: `.spec.template.spec.containers[name="app"].image`, PathElements: container("f:image"), Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "kubectl-set",
				Git: "nginx:1.25", Live: "nginx:1.26", GitValue: "nginx:1.25", LiveValue: "nginx:1.26"},
			{Path: ".spec.replicas", PathElements: []string{"f:spec", "f:replicas"}, Type: report.TypeChanged, Class: report.ClassOperator, Manager: "kube-controller-manager", Git: "3", Live: "5", GitValue: int64(3), LiveValue: int64(5)},
			{Path: ".metadata.annotations.sidecar.istio.io/status", PathElements: []string{"f:metadata", "f:annotations", "f:sidecar.istio.io/status"}, Type: report.TypeAdded, Class: report.ClassWebhook, Live: "{}", LiveValue: "{}"},
			{Path: ".spec.paused", PathElements: []string{"f:spec", "f:paused"}, Type: report.TypeChanged, Class: report.ClassUnknown, Git: "false", Live: "true", GitValue: false, LiveValue: true},
			{Path: ".spec.minReadySeconds", PathElements: []string{"f:spec", "f:minReadySeconds"}, Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "5", Live: "10", GitValue: int64(5), LiveValue: int64(10), Ignored: true},
			{Path: `.spec.template.spec.containers[name="app"].env[name="OLD"]`, PathElements: container("f:env", `k:{"name":"OLD"}`), Type: report.TypeRemoved, Class: report.ClassHuman, Manager: "kubectl-patch",
				Git: `{"name":"OLD","value":"1"}`, GitValue: map[string]any{"name": "OLD", "value": "1"}},
			{Path: `.spec.template.spec.containers[name="app"].env[name="TOKEN"].value`, PathElements: container("f:env", `k:{"name":"TOKEN"}`, "f:value"), Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit",
				Git: "***", Live: "*** (differs)", Masked: true},
			// A live value that reads as a number but is a string stays one.
			{Path: ".metadata.annotations.example.com/replicas", PathElements: []string{"f:metadata", "f:annotations", "f:example.com/replicas"}, Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-annotate", Live: "7", LiveValue: "7"},
		},
	}, {
		APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db",
		Findings: []report.Finding{{Path: ".data.password", PathElements: []string{"f:data", "f:password"}, Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "***", Live: "*** (differs)", Masked: true}},
	}}}
	edits, skipped := Plan(app, PlanOptions{})
	var got []string
	for _, e := range edits {
		got = append(got, e.Field())
	}
	want := []string{
		`Deployment/shop/web .spec.template.spec.containers[name="app"].image`,
		`Deployment/shop/web .spec.template.spec.containers[name="app"].env[name="OLD"]`,
		`Deployment/shop/web .metadata.annotations.example.com/replicas`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("edits (-want +got):\n%s", diff)
	}
	if edits[0].Value != "nginx:1.26" || edits[1].Value != nil || edits[2].Value != "7" {
		t.Errorf("values %#v, %#v and %#v", edits[0].Value, edits[1].Value, edits[2].Value)
	}
	wantAt := Path{{Field: "spec"}, {Field: "template"}, {Field: "spec"}, {Field: "containers"}, {Key: []KeyField{{"name", "app"}}}, {Field: "image"}}
	if diff := cmp.Diff(wantAt, edits[0].At); diff != "" {
		t.Errorf("where the image is (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Path{{Field: "metadata"}, {Field: "annotations"}, {Field: "example.com/replicas"}}, edits[2].At); diff != "" {
		t.Errorf("where the annotation is (-want +got):\n%s", diff)
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

func TestPlanSkipsAFindingThatDoesNotSayWhereItIs(t *testing.T) {
	app := report.App{Name: "web", Objects: []report.Object{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "web",
		Findings: []report.Finding{{Path: ".data.A", Type: report.TypeChanged, Class: report.ClassHuman, Git: "a", Live: "b", GitValue: "a", LiveValue: "b"}},
	}}}
	edits, skipped := Plan(app, PlanOptions{})
	if len(edits) != 0 || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "pathElements") {
		t.Errorf("edits %v, skipped %v; want the finding skipped for its missing pathElements", edits, skipped)
	}
}
