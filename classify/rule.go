package classify

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/calricon/driftscan/report"
)

// Rule is a user classification rule from the config. Rules are tried in
// order before the built-in ones; the first that matches decides the class.
type Rule struct {
	// Manager is a regular expression on the field manager.
	Manager string `yaml:"manager" json:"manager"`
	// Operation is Apply or Update; empty matches both.
	Operation string `yaml:"operation" json:"operation,omitempty"`
	// Subresource is matched exactly when set: scale, status, ...
	// A nil Subresource matches any; use "" in YAML to match none.
	Subresource *string `yaml:"subresource" json:"subresource,omitempty"`
	// Users and Groups match the person behind the finding, from the audit
	// log: patterns where * matches any run of characters, such as
	// system:serviceaccount:ci:*. A rule with either matches only a
	// finding whose attribution names a user that matches one of Users or
	// is in a group that matches one of Groups; when it names several
	// candidates, each of them must. The requester of a request that a
	// webhook changed is never matched: the webhook made the change.
	Users  []string     `yaml:"users" json:"users,omitempty"`
	Groups []string     `yaml:"groups" json:"groups,omitempty"`
	Class  report.Class `yaml:"class" json:"class"`

	re     *regexp.Regexp
	users  []*regexp.Regexp
	groups []*regexp.Regexp
}

// Validate checks the rule and compiles its expression.
func (r *Rule) Validate() error {
	re, err := regexp.Compile(r.Manager)
	if err != nil {
		return fmt.Errorf("manager %q: %w", r.Manager, err)
	}
	r.re = re
	if r.users, err = globs(r.Users); err != nil {
		return fmt.Errorf("users: %w", err)
	}
	if r.groups, err = globs(r.Groups); err != nil {
		return fmt.Errorf("groups: %w", err)
	}
	switch r.Operation {
	case "", "Apply", "Update":
	default:
		return fmt.Errorf("operation %q: want Apply or Update", r.Operation)
	}
	if !validClass(r.Class) {
		return fmt.Errorf("class %q: want one of %v", r.Class, report.Classes)
	}
	return nil
}

func validClass(c report.Class) bool {
	for _, k := range report.Classes {
		if k == c {
			return true
		}
	}
	return false
}

// globs compiles user and group patterns: * matches any run of characters,
// everything else itself.
func globs(patterns []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range patterns {
		if p == "" {
			return nil, fmt.Errorf("an empty pattern matches nobody")
		}
		expr := "^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$"
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// hasActor reports whether the rule selects users or groups.
func (r *Rule) hasActor() bool { return len(r.Users) > 0 || len(r.Groups) > 0 }

// Matches reports whether the rule matches a managedFields entry. A rule
// with users or groups never matches an entry alone: see MatchesActor.
// Validate must have been called (New does it).
func (r *Rule) Matches(e Entry) bool {
	return !r.hasActor() && r.matchesEntry(e)
}

// MatchesActor reports whether the rule matches a managedFields entry and
// the attribution of the finding (which may be nil).
func (r *Rule) MatchesActor(e Entry, a *report.Attribution) bool {
	if !r.hasActor() {
		return r.matchesEntry(e)
	}
	if !r.matchesEntry(e) || !a.Known() || a.Requester {
		return false
	}
	people := a.Candidates
	if len(people) == 0 {
		people = []report.Attribution{*a}
	}
	for _, p := range people {
		if !r.matchesPerson(p) {
			return false
		}
	}
	return true
}

func (r *Rule) matchesPerson(p report.Attribution) bool {
	for _, re := range r.users {
		if re.MatchString(p.User) {
			return true
		}
	}
	for _, re := range r.groups {
		for _, g := range p.Groups {
			if re.MatchString(g) {
				return true
			}
		}
	}
	return false
}

func (r *Rule) matchesEntry(e Entry) bool {
	if r.re == nil || !r.re.MatchString(e.Manager) {
		return false
	}
	if r.Operation != "" && r.Operation != e.Operation {
		return false
	}
	if r.Subresource != nil && *r.Subresource != e.Subresource {
		return false
	}
	return true
}

func builtinRule(class report.Class, manager, operation string, subresource *string) Rule {
	return Rule{Manager: manager, Operation: operation, Subresource: subresource, Class: class, re: regexp.MustCompile(manager)}
}

func ptr(s string) *string { return &s }

// builtin are the rules tried after the user's, in order. The README's table
// of built-in rules lists the same; keep them together.
var builtin = []Rule{
	// Humans: kubectl's interactive verbs, kubectl scale, dashboards and UIs.
	builtinRule(report.ClassHuman, `^kubectl-(edit|patch|label|annotate|replace|create|taint|autoscale|expose)$`, "", nil),
	builtinRule(report.ClassHuman, `^kubectl$`, "Update", ptr("scale")),
	builtinRule(report.ClassHuman, `^kubectl$`, "Update", ptr("")),
	builtinRule(report.ClassHuman, `(?i)^(mozilla|k9s|lens|openlens|headlamp|kubernetes-dashboard|dashboard|octant|rancher)`, "", nil),
	// Pipelines: kubectl's scripted verbs, server-side kubectl apply, release tools, CI systems.
	builtinRule(report.ClassPipeline, `^kubectl-(set|rollout|client-side-apply)$`, "", nil),
	builtinRule(report.ClassPipeline, `^kubectl$`, "Apply", nil),
	builtinRule(report.ClassPipeline, `^(helm|argo-rollouts|flagger)`, "", nil),
	builtinRule(report.ClassPipeline, `(?i)(pipeline|deploy|jenkins|tekton|gitlab|github|spinnaker|buildkite|circleci)`, "", nil),
	// Operators and controllers.
	builtinRule(report.ClassOperator, `^(kube-controller-manager|kube-scheduler|cluster-autoscaler)$`, "", nil),
	builtinRule(report.ClassOperator, `^(vpa-|keda-|cert-manager-)`, "", nil),
	builtinRule(report.ClassOperator, `(-controller|-operator|-controller-manager)$`, "", nil),
}
