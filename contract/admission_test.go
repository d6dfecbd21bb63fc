package contract

import (
	"strings"
	"testing"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/report"
)

func TestAdmissionPolicyGolden(t *testing.T) {
	opts := DefaultAdmissionOptions()
	opts.ApplierManagers = []string{"argocd-controller", "kustomize-controller", "helm-controller"}
	opts.Rules = ClassRules(classify.Ordered([]classify.Rule{
		{Manager: "^ci-deployer$", Class: report.ClassPipeline},
		{Users: []string{"system:serviceaccount:ci:*"}, Groups: []string{"release-bots"}, Class: report.ClassPipeline},
	}))
	opts.Resources = map[string][]Resource{
		"production": {
			{Group: "apps", Resource: "deployments", Subresources: []string{"scale", "status"}},
			{Group: "", Resource: "configmaps"},
			{Group: "", Resource: "services", Subresources: []string{"status"}},
		},
		"staging":   {{Group: "apps", Resource: "deployments", Subresources: []string{"scale", "status"}}},
		"regulated": {{Group: "apps", Resource: "statefulsets", Subresources: []string{"scale", "status"}}},
	}
	regulated := Contract{Name: "regulated", Owner: "compliance",
		NamespaceSelector: &Selector{MatchLabels: map[string]string{"tier": "regulated"},
			MatchExpressions: []Requirement{{Key: "region", Operator: "In", Values: []string{"eu", "ch"}}, {Key: "sandbox", Operator: "DoesNotExist"}}},
		Allow: []Rule{{Class: report.ClassOperator, Groups: []string{"system:serviceaccounts:operators"}}, {Class: AnyClass, Groups: []string{"sre-oncall"}, During: DuringBreakglass}}}
	m, err := Admission(append(example(t), regulated), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Skipped["platform"]; !strings.Contains(got, "declare no resource") {
		t.Errorf("platform should be skipped with the reason, got %q", got)
	}
	if got := m.Skipped["staging"]; !strings.Contains(got, "allows every change") {
		t.Errorf("staging should be skipped with the reason, got %q", got)
	}
	data, err := m.YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "admission.yaml.golden", data)
}

func TestParseActions(t *testing.T) {
	for in, want := range map[string]string{"deny": "[Deny]", "warn,audit": "[Warn Audit]", "Audit": "[Audit]"} {
		got, err := ParseActions(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if fmtActions(got) != want {
			t.Errorf("%s: got %v, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"deny,warn", "block", ""} {
		if _, err := ParseActions(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func fmtActions(as []Action) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return "[" + strings.Join(s, " ") + "]"
}
