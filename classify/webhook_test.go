package classify

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMatchWebhooksFollowsTheAPIServersRules(t *testing.T) {
	rule := func(groups, resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources}}
	}
	cfg := func(name string, r admissionregistrationv1.RuleWithOperations, ns, obj *metav1.LabelSelector) admissionregistrationv1.MutatingWebhookConfiguration {
		return admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: name + ".example.com", Rules: []admissionregistrationv1.RuleWithOperations{r}, NamespaceSelector: ns, ObjectSelector: obj}}}
	}
	injected := &metav1.LabelSelector{MatchLabels: map[string]string{"istio-injection": "enabled"}}
	configs := []admissionregistrationv1.MutatingWebhookConfiguration{
		cfg("istio", rule([]string{"apps"}, []string{"deployments"}, admissionregistrationv1.Create), injected, nil),
		cfg("kyverno", rule([]string{"*"}, []string{"*"}, admissionregistrationv1.OperationAll), nil, nil),
		cfg("vault", rule([]string{""}, []string{"pods"}, admissionregistrationv1.Create), nil, nil),
		cfg("delete-only", rule([]string{"*"}, []string{"*"}, admissionregistrationv1.Delete), nil, nil),
		cfg("opt-in", rule([]string{"apps"}, []string{"deployments"}, admissionregistrationv1.Update), nil,
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "inject", Operator: metav1.LabelSelectorOpExists}}}),
	}
	cases := []struct {
		name   string
		target Target
		want   []string
	}{
		{"a deployment in an injected namespace", Target{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: true, NamespaceLabels: map[string]string{"istio-injection": "enabled"}}, []string{"istio", "kyverno"}},
		{"a deployment elsewhere", Target{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: true}, []string{"kyverno"}},
		{"a labelled deployment opts in", Target{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: true, Labels: map[string]string{"inject": "yes"}}, []string{"kyverno", "opt-in"}},
		{"a configmap", Target{Version: "v1", Resource: "configmaps", Namespaced: true}, []string{"kyverno"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, MatchWebhooks(configs, c.target)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
