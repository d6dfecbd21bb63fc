// Package contract holds the live-change contract: per group of namespaces,
// who may change live state and how. It judges every finding of a report
// against the contract of its namespace (allowed, violation, unknown or
// uncovered), reports GitOps apps that self-heal where the contract forbids
// it, renders the contracts as a runbook table, checks them against what a
// cluster has, and turns them into ValidatingAdmissionPolicies the API
// server enforces.
//
// It is pure: data in, verdicts and manifests out. It takes no Kubernetes
// client and imports no cobra; callers read the cluster and hand it what it
// needs (namespace labels, webhook names, the resources apps declare).
package contract

import (
	"fmt"
	"slices"
	"strings"

	"github.com/calricon/driftscan/report"
)

// Contract is one written answer to "who may change live state here, and
// how?" for the namespaces it covers.
//
//	contracts:
//	- name: production
//	  namespaces: ["prod-*"]
//	  owner: platform-team
//	  allow:
//	  - {class: operator}
//	  - {class: pipeline, managers: [kubectl-set], users: ["system:serviceaccount:ci:deployer"]}
//	  - {class: human, during: breakglass}
//	  selfHeal: forbidden
type Contract struct {
	Name string `yaml:"name" json:"name"`
	// Namespaces are globs (* and ?) on namespace names.
	Namespaces []string `yaml:"namespaces,omitempty" json:"namespaces,omitempty"`
	// NamespaceSelector selects namespaces by their labels. A namespace is
	// covered when it matches a glob or the selector.
	NamespaceSelector *Selector `yaml:"namespaceSelector,omitempty" json:"namespaceSelector,omitempty"`
	// Owner is who answers for the contract (a team).
	Owner string `yaml:"owner,omitempty" json:"owner,omitempty"`
	// Allow are the changes the contract allows; the first rule that
	// matches a change decides. A change no rule allows is a violation.
	Allow []Rule `yaml:"allow" json:"allow"`
	// SelfHeal says whether GitOps apps in these namespaces may revert live
	// changes on their own.
	SelfHeal SelfHeal `yaml:"selfHeal,omitempty" json:"selfHeal,omitempty"`

	// Line is where the contract starts in its file; 0 when not read from one.
	Line int `yaml:"-" json:"-"`
}

// Selector is a label selector on namespaces, as in Kubernetes.
type Selector struct {
	MatchLabels      map[string]string `yaml:"matchLabels,omitempty" json:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `yaml:"matchExpressions,omitempty" json:"matchExpressions,omitempty"`
}

// Requirement is one expression of a Selector: key In/NotIn values, or
// Exists/DoesNotExist.
type Requirement struct {
	Key      string   `yaml:"key" json:"key"`
	Operator string   `yaml:"operator" json:"operator"`
	Values   []string `yaml:"values,omitempty" json:"values,omitempty"`
}

// Rule allows one kind of live change. Every field that is set must match;
// Users and Groups match when either does.
type Rule struct {
	// Class is the finding's class (webhook, operator, pipeline, human,
	// unknown), or "*" for any.
	Class report.Class `yaml:"class" json:"class"`
	// Managers are globs on the field manager.
	Managers []string `yaml:"managers,omitempty" json:"managers,omitempty"`
	// Users and Groups are globs on who made the change: the audit
	// attribution in a report, request.userInfo at admission.
	Users  []string `yaml:"users,omitempty" json:"users,omitempty"`
	Groups []string `yaml:"groups,omitempty" json:"groups,omitempty"`
	// Webhooks are globs on the MutatingWebhookConfiguration that injected
	// a field.
	Webhooks []string `yaml:"webhooks,omitempty" json:"webhooks,omitempty"`
	// During limits the rule to a time: DuringBreakglass is while the app
	// is suspended with `driftscan breakglass suspend`.
	During During `yaml:"during,omitempty" json:"during,omitempty"`

	// Line is where the rule is in its file; 0 when not read from one.
	Line int `yaml:"-" json:"-"`
}

// SelfHeal says whether a contract lets GitOps apps revert live changes.
type SelfHeal string

// The self-heal settings; empty says nothing.
const (
	SelfHealForbidden SelfHeal = "forbidden"
	SelfHealAllowed   SelfHeal = "allowed"
)

// During limits a rule to a time.
type During string

// DuringBreakglass: only while the app is suspended by breakglass.
const DuringBreakglass During = "breakglass"

// AnyClass in a rule matches every class.
const AnyClass report.Class = "*"

// String renders the rule the way the config writes it, in flow style:
// {class: pipeline, managers: [kubectl-set]}.
func (r Rule) String() string {
	parts := []string{"class: " + flowScalar(string(r.Class))}
	list := func(name string, v []string) {
		if len(v) == 0 {
			return
		}
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = flowScalar(s)
		}
		parts = append(parts, name+": ["+strings.Join(q, ", ")+"]")
	}
	list("managers", r.Managers)
	list("users", r.Users)
	list("groups", r.Groups)
	list("webhooks", r.Webhooks)
	if r.During != "" {
		parts = append(parts, "during: "+string(r.During))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// flowScalar quotes a value that YAML flow style would misread.
func flowScalar(s string) string {
	if s == "" || strings.ContainsAny(s, "*:,[]{}#&!|>'\"%@` ") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// Identity says whether the rule names who may make the change.
func (r Rule) Identity() bool { return len(r.Users) > 0 || len(r.Groups) > 0 }

// Covers reports whether the contract covers namespace ns, whose labels are
// labels (nil when unknown; a contract with a selector then covers ns only
// through its globs).
func (c Contract) Covers(ns string, labels map[string]string) bool {
	if ns == "" {
		return false
	}
	if matchAnyGlob(c.Namespaces, ns) {
		return true
	}
	if c.NamespaceSelector != nil && labels != nil {
		return c.NamespaceSelector.Matches(labels)
	}
	return false
}

// BreakglassRules says whether any rule applies only during break-glass:
// only then does `driftscan breakglass suspend` lift anything.
func (c Contract) BreakglassRules() bool {
	return slices.ContainsFunc(c.Allow, func(r Rule) bool { return r.During == DuringBreakglass })
}

// For returns the first contract that covers ns, nil when none does.
func For(cs []Contract, ns string, labels map[string]string) *Contract {
	for i := range cs {
		if cs[i].Covers(ns, labels) {
			return &cs[i]
		}
	}
	return nil
}
