package classify

import (
	"testing"
	"time"

	"github.com/calricon/driftscan/report"
)

func person(user string, groups ...string) report.Attribution {
	return report.Attribution{Confidence: report.ConfidenceExact, User: user, Groups: groups}
}

func TestUserRulesTellPeopleFromPipelines(t *testing.T) {
	c, err := New(Options{Appliers: []string{"argocd-controller"}, Rules: []Rule{
		{Users: []string{"system:serviceaccount:ci:*"}, Class: report.ClassPipeline},
		{Manager: "^kubectl-set$", Groups: []string{"sre", "oncall-*"}, Class: report.ClassHuman},
	}})
	if err != nil {
		t.Fatal(err)
	}
	setImage := &Entry{Manager: "kubectl-set", Operation: "Update", Time: time.Now()}
	ci := person("system:serviceaccount:ci:deployer", "system:serviceaccounts")
	alice := person("alice@example.com", "sre")
	carol := person("carol@example.com", "oncall-eu")
	cases := []struct {
		name string
		a    *report.Attribution
		want report.Class
	}{
		{"no audit log: the manager decides", nil, report.ClassPipeline},
		{"the CI service account", &ci, report.ClassPipeline},
		{"a person in group sre", &alice, report.ClassHuman},
		{"a group pattern", &carol, report.ClassHuman},
		{"nobody found: the manager decides", &report.Attribution{Confidence: report.ConfidenceNone}, report.ClassPipeline},
		{"two candidates of one kind", &report.Attribution{Confidence: report.ConfidenceCandidate, Candidates: []report.Attribution{alice, carol}}, report.ClassHuman},
		{"two candidates of different kinds: the manager decides", &report.Attribution{Confidence: report.ConfidenceCandidate, Candidates: []report.Attribution{ci, alice}}, report.ClassPipeline},
		{"a mere requester is never matched", &report.Attribution{Confidence: report.ConfidenceExact, User: "alice@example.com", Groups: []string{"sre"}, Requester: true}, report.ClassPipeline},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := c.Classify(Object{Kind: "Deployment"}, Change{Path: ".spec.template.spec.containers[name=\"app\"].image", Type: report.TypeChanged, Owner: setImage, Attribution: tc.a})
			if res.Finding.Class != tc.want {
				t.Errorf("class = %s, want %s", res.Finding.Class, tc.want)
			}
			if res.Finding.Attribution != tc.a {
				t.Errorf("the finding does not carry the attribution")
			}
		})
	}
}

func TestARemovalFoundInTheAuditLogIsClassifiedByItsRequest(t *testing.T) {
	c, err := New(Options{Appliers: []string{"argocd-controller"}})
	if err != nil {
		t.Fatal(err)
	}
	a := &report.Attribution{Confidence: report.ConfidenceExact, User: "alice@example.com", Verb: "patch", FieldManager: "kubectl-label", AuditID: "7a1f", Time: "2026-11-30T11:58:02.109800Z"}
	res := c.Classify(Object{Kind: "Deployment"}, Change{Path: ".metadata.labels.team", Type: report.TypeRemoved, Attribution: a})
	f := res.Finding
	if f.Class != report.ClassHuman || f.Manager != "kubectl-label" || f.Time != "2026-11-30T11:58:02Z" {
		t.Errorf("finding %s by %q at %q, want human by kubectl-label at the request's second", f.Class, f.Manager, f.Time)
	}
}

func TestUserPatternsAreValidated(t *testing.T) {
	r := Rule{Users: []string{""}, Class: report.ClassHuman}
	if err := r.Validate(); err == nil {
		t.Error("an empty user pattern was accepted")
	}
}
