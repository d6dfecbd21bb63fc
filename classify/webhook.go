package classify

import (
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Target is the object a webhook may mutate: its resource and labels, and its
// namespace's labels (nil for cluster-scoped objects).
type Target struct {
	Group, Version, Resource string
	Namespaced               bool
	Labels                   map[string]string
	NamespaceLabels          map[string]string
}

// MatchWebhooks returns the names of the MutatingWebhookConfigurations with a
// webhook whose rules (CREATE or UPDATE of the resource), namespaceSelector
// and objectSelector match t, sorted. It follows the API server's matching:
// https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#matching-requests-rules
func MatchWebhooks(configs []admissionregistrationv1.MutatingWebhookConfiguration, t Target) []string {
	var out []string
	for _, cfg := range configs {
		for _, wh := range cfg.Webhooks {
			if matchRules(wh.Rules, t) && matchSelector(wh.ObjectSelector, t.Labels) &&
				(!t.Namespaced || matchSelector(wh.NamespaceSelector, t.NamespaceLabels)) {
				out = append(out, cfg.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func matchRules(rules []admissionregistrationv1.RuleWithOperations, t Target) bool {
	for _, r := range rules {
		if !anyOp(r.Operations, admissionregistrationv1.Create, admissionregistrationv1.Update) {
			continue
		}
		if !has(r.APIGroups, t.Group) || !has(r.APIVersions, t.Version) || !has(r.Resources, t.Resource) {
			continue
		}
		if r.Scope != nil {
			switch *r.Scope {
			case admissionregistrationv1.NamespacedScope:
				if !t.Namespaced {
					continue
				}
			case admissionregistrationv1.ClusterScope:
				if t.Namespaced {
					continue
				}
			}
		}
		return true
	}
	return false
}

func anyOp(ops []admissionregistrationv1.OperationType, want ...admissionregistrationv1.OperationType) bool {
	for _, op := range ops {
		if op == admissionregistrationv1.OperationAll {
			return true
		}
		for _, w := range want {
			if op == w {
				return true
			}
		}
	}
	return false
}

// has matches a rule list entry: "*" matches any value, and for resources
// "*" and "*/*" match the main resource.
func has(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == "*/*" || s == v {
			return true
		}
	}
	return false
}

// matchSelector reports whether labels match a selector; a nil selector
// matches everything, as in the API server.
func matchSelector(sel *metav1.LabelSelector, l map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(l))
}
