package contract

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Facts are what a cluster says about the contracts; a nil field was not
// read, and what depends on it is not checked.
type Facts struct {
	// Namespaces are the cluster's namespaces and their labels.
	Namespaces map[string]map[string]string
	// Webhooks are the names of the MutatingWebhookConfigurations.
	Webhooks []string
	// Policies are the contract policies installed (names starting with
	// PolicyPrefix).
	Policies []string
	// Params says whether the break-glass params ConfigMap exists; nil when
	// not read.
	Params *bool
	// ParamsRef names it, for the message.
	ParamsRef ParamsRef
}

// Severity says whether a problem fails the check.
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is one thing `driftscan contract check` found.
type Problem struct {
	Severity Severity
	// Contract and Line locate it; empty and 0 when it is about the cluster.
	Contract string
	Line     int
	Message  string
}

func (p Problem) String() string {
	where := ""
	if p.Contract != "" {
		where = fmt.Sprintf("contract %q", p.Contract)
		if p.Line > 0 {
			where += fmt.Sprintf(" (line %d)", p.Line)
		}
		where += ": "
	}
	return fmt.Sprintf("%s: %s%s", p.Severity, where, p.Message)
}

// Check finds what is wrong with contracts that Validate cannot see alone:
// namespaces two contracts cover (by their globs, and in the cluster),
// webhooks that do not exist, rules that trust a field manager at admission,
// namespaces no contract covers, and installed policies whose break-glass
// ConfigMap is missing. Validation errors (an unknown class, a bad glob)
// come first.
func Check(cs []Contract, f Facts) []Problem {
	var out []Problem
	if err := Validate(cs); err != nil {
		for _, e := range unjoin(err) {
			out = append(out, Problem{Severity: SeverityError, Message: e.Error()})
		}
	}
	out = append(out, overlaps(cs, f)...)
	for _, c := range cs {
		var trusting []string
		for i, r := range c.Allow {
			for _, w := range r.Webhooks {
				if f.Webhooks != nil && !slices.ContainsFunc(f.Webhooks, func(name string) bool { return matchGlob(w, name) }) {
					out = append(out, Problem{Severity: SeverityError, Contract: c.Name, Line: r.Line,
						Message: fmt.Sprintf("allow[%d]: no MutatingWebhookConfiguration %s in the cluster (there are: %s)", i, w, listOrNone(f.Webhooks))})
				}
			}
			if r.Class != AnyClass && !r.Identity() && len(r.Webhooks) == 0 && r.During == "" {
				trusting = append(trusting, fmt.Sprintf("allow[%d]", i))
			}
		}
		if len(trusting) > 0 {
			out = append(out, Problem{Severity: SeverityWarning, Contract: c.Name, Line: c.Line,
				Message: fmt.Sprintf("%s name no users or groups: at admission they trust the field manager the client names, which anyone can choose", strings.Join(trusting, ", "))})
		}
	}
	if f.Namespaces != nil {
		var uncovered []string
		for _, ns := range sortedNamespaces(f.Namespaces) {
			if For(cs, ns, f.Namespaces[ns]) == nil && !strings.HasPrefix(ns, "kube-") {
				uncovered = append(uncovered, ns)
			}
		}
		if len(uncovered) > 0 {
			out = append(out, Problem{Severity: SeverityWarning,
				Message: fmt.Sprintf("no contract covers namespace %s: its findings are reported as uncovered", strings.Join(uncovered, ", "))})
		}
	}
	if f.Params != nil && !*f.Params && len(f.Policies) > 0 {
		out = append(out, Problem{Severity: SeverityError,
			Message: fmt.Sprintf("policies %s are installed but their break-glass ConfigMap %s/%s does not exist: they enforce nothing until it does (apply the output of `driftscan contract admission` again)",
				strings.Join(f.Policies, ", "), f.ParamsRef.Namespace, f.ParamsRef.Name)})
	}
	return out
}

// overlaps reports namespaces two contracts cover: glob pairs that share a
// name, and each namespace of the cluster that two contracts cover.
func overlaps(cs []Contract, f Facts) []Problem {
	var out []Problem
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			for _, a := range cs[i].Namespaces {
				for _, b := range cs[j].Namespaces {
					if globsOverlap(a, b) {
						out = append(out, Problem{Severity: SeverityError, Contract: cs[j].Name, Line: cs[j].Line,
							Message: fmt.Sprintf("namespaces %s overlaps %s of contract %q: a namespace both match gets the first contract only", b, a, cs[i].Name)})
					}
				}
			}
		}
	}
	if f.Namespaces == nil {
		return out
	}
	for _, ns := range sortedNamespaces(f.Namespaces) {
		var in []string
		for _, c := range cs {
			if c.Covers(ns, f.Namespaces[ns]) {
				in = append(in, c.Name)
			}
		}
		if len(in) > 1 {
			out = append(out, Problem{Severity: SeverityError,
				Message: fmt.Sprintf("namespace %s is covered by contracts %s: only the first applies", ns, strings.Join(in, ", "))})
		}
	}
	return out
}

// HasErrors reports whether any problem is an error.
func HasErrors(ps []Problem) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return p.Severity == SeverityError })
}

func sortedNamespaces(m map[string]map[string]string) []string {
	out := make([]string, 0, len(m))
	for ns := range m {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// unjoin splits an errors.Join error into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
