package classify

import (
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/report"
)

func TestIgnoreRulesMatchLikeArgoCD(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	live := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "istio-proxy", "image": "proxy"},
		map[string]any{"name": "app", "image": "nginx", "env": []any{map[string]any{"name": "A", "value": "1"}}},
	}}}}}
	target := func(pointer string) IgnoreTarget {
		return IgnoreTarget{App: "web", Tool: "argocd", Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Live: live, Pointer: pointer}
	}
	cases := []struct {
		name    string
		rule    IgnoreRule
		pointer string
		manager string
		want    bool
	}{
		{"a pointer hides its field", IgnoreRule{JSONPointers: []string{"/spec/replicas"}}, "/spec/replicas", "", true},
		{"a pointer hides what is under it", IgnoreRule{JSONPointers: []string{"/spec/template"}}, "/spec/template/spec/containers/1/image", "", true},
		{"a pointer is not a string prefix", IgnoreRule{JSONPointers: []string{"/spec/replica"}}, "/spec/replicas", "", false},
		{"a jq path selects by name, not index", IgnoreRule{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "app") | .image`}}, "/spec/template/spec/containers/1/image", "", true},
		{"the jq path does not select the sidecar", IgnoreRule{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "app") | .image`}}, "/spec/template/spec/containers/0/image", "", false},
		{"a manager hides what it owns", IgnoreRule{ManagedFieldsManagers: []string{"kube-controller-manager"}}, "/spec/replicas", "kube-controller-manager", true},
		{"another kind is not matched", IgnoreRule{Kind: "StatefulSet", JSONPointers: []string{"/spec"}}, "/spec/replicas", "", false},
		{"another app's rule is not matched", IgnoreRule{App: "api", JSONPointers: []string{"/spec"}}, "/spec/replicas", "", false},
		{"a rule of the app's reconciler (argocd-cm's) is matched", IgnoreRule{Tool: "argocd", JSONPointers: []string{"/spec"}}, "/spec/replicas", "", true},
		{"another reconciler's rule is not matched", IgnoreRule{Tool: "flux", JSONPointers: []string{"/spec"}}, "/spec/replicas", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.rule.Owner, c.rule.Reason, c.rule.Expires = "team-web", "test", "2027-01-01"
			ig, err := NewIgnorer([]IgnoreRule{c.rule}, now)
			if err != nil {
				t.Fatal(err)
			}
			f := report.Finding{Manager: c.manager}
			ig.Apply(target(c.pointer), &f)
			if f.Ignored != c.want {
				t.Errorf("ignored = %v, want %v", f.Ignored, c.want)
			}
			if f.Ignored && (f.IgnoreRule == nil || f.IgnoreRule.Owner != "team-web") {
				t.Errorf("ignored finding does not carry its rule: %+v", f.IgnoreRule)
			}
		})
	}
}

func TestARuleExpiresAtTheEndOfItsReviewDate(t *testing.T) {
	rule := IgnoreRule{JSONPointers: []string{"/spec/replicas"}, Owner: "team-web", Reason: "HPA", Expires: "2026-11-30"}
	for _, c := range []struct {
		now  time.Time
		want bool
	}{
		{time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC), true},
		{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), false},
	} {
		ig, err := NewIgnorer([]IgnoreRule{rule}, c.now)
		if err != nil {
			t.Fatal(err)
		}
		f := report.Finding{}
		ig.Apply(IgnoreTarget{Kind: "Deployment", Pointer: "/spec/replicas"}, &f)
		if f.Ignored != c.want {
			t.Errorf("at %s ignored = %v, want %v", c.now, f.Ignored, c.want)
		}
		debts := ig.Debts()
		if !c.want && (len(debts) != 1 || debts[0].Kind != report.DebtExpired || debts[0].Matched != 1) {
			t.Errorf("at %s debts = %+v, want one expired rule that would hide 1", c.now, debts)
		}
	}
}

func TestAnIgnoreRuleWithoutOwnerReasonOrDateIsAConfigError(t *testing.T) {
	_, err := NewIgnorer([]IgnoreRule{{Kind: "Deployment", Name: "web", JSONPointers: []string{"/spec/replicas"}}}, time.Now())
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"ignore[0]", "Deployment/web", "owner is required", "reason is required", "expires is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// The rule discover imports for argocd-cm's ignoreAggregatedRoles hides the
// rules of a ClusterRole with an aggregationRule, as Argo CD's diff does,
// and nothing of one without (gitops-engine normalizeRole).
func TestTheAggregatedRolesRuleHidesOnlyAnAggregatedRolesRules(t *testing.T) {
	rule := IgnoreRule{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", JQPathExpressions: []string{`select(.aggregationRule | type == "object") | .rules`},
		Owner: "argocd", Reason: "ignoreAggregatedRoles", Expires: "2027-01-01", Tool: "argocd"}
	ig, err := NewIgnorer([]IgnoreRule{rule}, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	rules := []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get"}}}
	aggregated := map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{}}, "rules": rules}
	plain := map[string]any{"rules": rules}
	for _, c := range []struct {
		name    string
		live    map[string]any
		pointer string
		want    bool
	}{
		{"an aggregated role's rules", aggregated, "/rules", true},
		{"a plain role's rules", plain, "/rules", false},
		{"an aggregated role's aggregationRule", aggregated, "/aggregationRule/clusterRoleSelectors", false},
	} {
		f := report.Finding{}
		ig.Apply(IgnoreTarget{App: "platform", Tool: "argocd", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view", Live: c.live, Pointer: c.pointer}, &f)
		if f.Ignored != c.want {
			t.Errorf("%s: ignored = %v, want %v", c.name, f.Ignored, c.want)
		}
	}
}
