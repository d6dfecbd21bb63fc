package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/report"
)

var namespaceLabels = map[string]map[string]string{
	"prod-a": {}, "staging-web": {"env": "staging"}, "shop": {}, "platform-dns": {},
}

// judged runs Judge over one finding of an object in ns, in an app that may
// be suspended, and returns the verdict.
func judged(t *testing.T, ns string, f report.Finding, bg *report.Breakglass, who *Attribution) report.ContractVerdict {
	t.Helper()
	r := report.New(time.Unix(0, 0), "test")
	r.Apps = []report.App{{Name: "payments", Breakglass: bg, Objects: []report.Object{{Kind: "Deployment", Namespace: ns, Name: "web", Findings: []report.Finding{f}}}}}
	opts := DefaultOptions()
	opts.NamespaceLabels = namespaceLabels
	opts.Attribution = func(report.App, report.Object, report.Finding) *Attribution { return who }
	if err := Judge(r, example(t), opts); err != nil {
		t.Fatal(err)
	}
	return *r.Apps[0].Objects[0].Findings[0].Contract
}

func TestJudge(t *testing.T) {
	active := &report.Breakglass{By: "alice", Reason: "INC-4211"}
	expired := &report.Breakglass{By: "alice", Reason: "INC-4211", Expired: true}
	deployer := &Attribution{User: "system:serviceaccount:ci:deployer"}
	alice := &Attribution{User: "alice@example.com", Groups: []string{"sre"}}
	human := report.Finding{Path: ".data.x", Class: report.ClassHuman, Manager: "kubectl-edit"}
	setImage := report.Finding{Path: ".spec.image", Class: report.ClassPipeline, Manager: "kubectl-set"}
	for _, tc := range []struct {
		name string
		ns   string
		f    report.Finding
		bg   *report.Breakglass
		who  *Attribution
		want report.ContractVerdict
	}{
		{"an operator's change in production is allowed by the operator rule", "prod-a",
			report.Finding{Class: report.ClassOperator, Manager: "kube-controller-manager"}, nil, nil,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictAllowed, Rule: "allow[0] {class: operator}"}},
		{"a human edit in production is a violation that points at break-glass", "prod-a", human, nil, nil,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictViolation,
				Reason: "contract production allows no human change by kubectl-edit; it would be allowed while the app is suspended with `driftscan breakglass suspend`"}},
		{"a human edit while the app is suspended is allowed", "prod-a", human, active, nil,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictAllowed, Rule: "allow[3] {class: human, during: breakglass}"}},
		{"a human edit after the suspension expired is a violation", "prod-a", human, expired, nil,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictViolation,
				Reason: "contract production allows no human change by kubectl-edit; it would be allowed while the app is suspended with `driftscan breakglass suspend`"}},
		{"set image with no attribution is unknown, not guessed", "prod-a", setImage, nil, nil,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictUnknown,
				Rule:   `allow[2] {class: pipeline, managers: [kubectl-set, "argo-rollouts*"], users: ["system:serviceaccount:ci:deployer"]}`,
				Reason: "only a rule that names users or groups could allow this change, and no audit attribution says who made it"}},
		{"set image by the deployer service account is allowed", "prod-a", setImage, nil, deployer,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictAllowed,
				Rule: `allow[2] {class: pipeline, managers: [kubectl-set, "argo-rollouts*"], users: ["system:serviceaccount:ci:deployer"]}`}},
		{"set image by a person is a violation", "prod-a", setImage, nil, alice,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictViolation, Reason: "contract production allows no pipeline change by kubectl-set"}},
		{"a manager glob matches", "prod-a", report.Finding{Class: report.ClassPipeline, Manager: "argo-rollouts-controller"}, nil, deployer,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictAllowed,
				Rule: `allow[2] {class: pipeline, managers: [kubectl-set, "argo-rollouts*"], users: ["system:serviceaccount:ci:deployer"]}`}},
		{"a pipeline manager the rule does not name is a violation even with the right user", "prod-a",
			report.Finding{Class: report.ClassPipeline, Manager: "helm"}, nil, deployer,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictViolation, Reason: "contract production allows no pipeline change by helm"}},
		{"the allowed webhook's sidecar is allowed", "prod-a", report.Finding{Class: report.ClassWebhook, Actor: "istio-sidecar-injector"}, nil, nil,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictAllowed, Rule: "allow[1] {class: webhook, webhooks: [istio-sidecar-injector]}"}},
		{"another webhook's injection is a violation", "prod-a", report.Finding{Class: report.ClassWebhook, Actor: "vault-agent-injector"}, nil, nil,
			report.ContractVerdict{Name: "production", Verdict: report.VerdictViolation, Reason: "contract production allows no webhook change by no field manager"}},
		{"anything goes in a namespace the staging selector picks", "staging-web", human, nil, nil,
			report.ContractVerdict{Name: "staging", Verdict: report.VerdictAllowed, Rule: `allow[0] {class: "*"}`}},
		{"an unknown actor in a platform namespace is a violation", "platform-dns", report.Finding{Class: report.ClassUnknown}, nil, nil,
			report.ContractVerdict{Name: "platform", Verdict: report.VerdictViolation, Reason: "contract platform allows no unknown change by no field manager"}},
		{"a namespace no contract covers is uncovered", "shop", human, nil, nil,
			report.ContractVerdict{Verdict: report.VerdictUncovered, Reason: "no contract covers namespace shop"}},
		{"a cluster-scoped object is uncovered", "", human, nil, nil,
			report.ContractVerdict{Verdict: report.VerdictUncovered, Reason: "cluster-scoped: no contract covers it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, judged(t, tc.ns, tc.f, tc.bg, tc.who)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestJudgeCountsVerdictsOfActiveFindingsAndFailsOnViolation(t *testing.T) {
	r := report.New(time.Unix(0, 0), "test")
	r.Apps = []report.App{{Name: "payments", Objects: []report.Object{
		{Kind: "ConfigMap", Namespace: "prod-a", Name: "cfg", Findings: []report.Finding{
			{Path: ".data.a", Class: report.ClassHuman, Manager: "kubectl-edit"},
			{Path: ".data.b", Class: report.ClassOperator, Manager: "kube-controller-manager"},
			{Path: ".data.c", Class: report.ClassHuman, Manager: "kubectl-edit", Ignored: true},
		}},
		{Kind: "ConfigMap", Namespace: "shop", Name: "cfg", Findings: []report.Finding{{Path: ".data.a", Class: report.ClassHuman}}},
	}}}
	opts := DefaultOptions()
	opts.NamespaceLabels = namespaceLabels
	if err := Judge(r, example(t), opts); err != nil {
		t.Fatal(err)
	}
	want := map[report.Verdict]int{report.VerdictViolation: 1, report.VerdictAllowed: 1, report.VerdictUncovered: 1}
	if diff := cmp.Diff(want, r.Summary.ByVerdict); diff != "" {
		t.Errorf("byVerdict (-want +got):\n%s", diff)
	}
	if got := r.ExitCodeFor(report.FailOn{Classes: []report.Class{}, Violations: true}); got != report.ExitDrift {
		t.Errorf("--fail-on violation: exit %d, want %d", got, report.ExitDrift)
	}
	// With the violation gone, the uncovered human finding does not fail
	// --fail-on violation.
	r.Apps[0].Objects[0].Findings[0].Ignored = true
	r.Finalize()
	if got := r.ExitCodeFor(report.FailOn{Classes: []report.Class{}, Violations: true}); got != report.ExitOK {
		t.Errorf("--fail-on violation with no violation left: exit %d, want %d", got, report.ExitOK)
	}
}

func TestJudgeNeedsNamespaceLabelsForASelector(t *testing.T) {
	r := report.New(time.Unix(0, 0), "test")
	err := Judge(r, example(t), DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), `contract "staging" has a namespaceSelector`) {
		t.Fatalf("got %v", err)
	}
}

func TestJudgeReportsAppsThatSelfHealWhereTheContractForbidsIt(t *testing.T) {
	r := report.New(time.Unix(0, 0), "test")
	r.Apps = []report.App{
		{Name: "payments", GitOps: &report.GitOps{Tool: "argocd", Object: "Application/argocd/payments", SelfHeal: true},
			Objects: []report.Object{{Kind: "Deployment", Namespace: "prod-a", Name: "web", Status: report.StatusInSync}}},
		{Name: "payments-paused", GitOps: &report.GitOps{Tool: "argocd", Object: "Application/argocd/payments-paused", Suspended: true},
			Objects: []report.Object{{Kind: "Deployment", Namespace: "prod-a", Name: "api"}}},
		{Name: "dns", GitOps: &report.GitOps{Tool: "argocd", Object: "Application/argocd/dns", SelfHeal: true},
			Objects: []report.Object{{Kind: "Deployment", Namespace: "platform-dns", Name: "coredns"}}},
		{Name: "web-canary", GitOps: &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/web-canary", SelfHeal: true}},
	}
	opts := DefaultOptions()
	opts.NamespaceLabels = namespaceLabels
	opts.Destinations = map[string]string{"web-canary": "staging-web"}
	if err := Judge(r, example(t), opts); err != nil {
		t.Fatal(err)
	}
	got := map[string]report.Object{}
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			if o.Kind == "Application" || o.Kind == "Kustomization" {
				got[a.Name] = o
			}
		}
	}
	if len(got) != 2 {
		t.Fatalf("want self-heal violations for payments and web-canary only, got %v", got)
	}
	argo := got["payments"]
	if argo.APIVersion != "argoproj.io/v1alpha1" || argo.Namespace != "argocd" || argo.Status != report.StatusDrifted {
		t.Errorf("payments: %+v", argo)
	}
	f := argo.Findings[0]
	if f.Path != ".spec.syncPolicy.automated.selfHeal" || f.Contract.Verdict != report.VerdictViolation || f.Contract.Rule != "selfHeal: forbidden" ||
		!strings.Contains(f.Hint, "set spec.syncPolicy.automated.selfHeal to false") {
		t.Errorf("payments finding: %+v %+v", f, f.Contract)
	}
	flux := got["web-canary"].Findings[0]
	if flux.Path != ".spec.suspend" || flux.Contract.Name != "staging" {
		t.Errorf("web-canary finding: %+v %+v", flux, flux.Contract)
	}
	if r.Summary.ByVerdict[report.VerdictViolation] != 2 {
		t.Errorf("summary: %+v", r.Summary.ByVerdict)
	}
}
