package contract

import (
	"errors"
	"fmt"
	"strings"

	"github.com/calricon/driftscan/report"
)

// Attribution is who made a change, when something (the API server's audit
// log) says so.
type Attribution struct {
	User   string
	Groups []string
}

// Options say what Judge needs beyond the report and the contracts.
type Options struct {
	// NamespaceLabels are the labels of the cluster's namespaces, needed
	// when a contract has a namespaceSelector.
	NamespaceLabels map[string]map[string]string
	// Attribution returns who made a finding; nil (or a nil func) when
	// nothing says. Rules that name users or groups are then unknown, never
	// guessed.
	Attribution func(report.App, report.Object, report.Finding) *Attribution
	// Destinations are the apps' destination namespaces by app name (the
	// config's app namespace), so that an app with no object in the report
	// still has a contract for its self-heal.
	Destinations map[string]string
}

// DefaultOptions returns options with no namespace labels and no
// attribution.
func DefaultOptions() Options { return Options{} }

// Judge gives every finding of r the verdict of the contract that covers
// its object's namespace, adds a violation for each GitOps app that
// self-heals where its contract forbids it, and recomputes the summary. Call
// it once, after the report is complete (and after breakglass.Annotate, so
// that rules limited to break-glass see the suspensions).
func Judge(r *report.Report, cs []Contract, opts Options) error {
	if len(cs) == 0 {
		return nil
	}
	if opts.NamespaceLabels == nil {
		for _, c := range cs {
			if c.NamespaceSelector != nil {
				return fmt.Errorf("contract %q has a namespaceSelector but the namespaces' labels were not read", c.Name)
			}
		}
	}
	for ai := range r.Apps {
		app := &r.Apps[ai]
		for oi := range app.Objects {
			o := &app.Objects[oi]
			c := For(cs, o.Namespace, opts.NamespaceLabels[o.Namespace])
			for fi := range o.Findings {
				f := &o.Findings[fi]
				if c == nil {
					f.Contract = &report.ContractVerdict{Verdict: report.VerdictUncovered,
						Reason: uncoveredReason(o.Namespace)}
					continue
				}
				var who *Attribution
				if opts.Attribution != nil {
					who = opts.Attribution(*app, *o, *f)
				}
				v := c.judge(*f, who, breakglassActive(*app))
				f.Contract = &v
			}
		}
	}
	var errs []error
	for ai := range r.Apps {
		if err := selfHeal(&r.Apps[ai], cs, opts); err != nil {
			errs = append(errs, err)
		}
	}
	r.Finalize()
	return errors.Join(errs...)
}

func uncoveredReason(ns string) string {
	if ns == "" {
		return "cluster-scoped: no contract covers it"
	}
	return fmt.Sprintf("no contract covers namespace %s", ns)
}

func breakglassActive(app report.App) bool {
	return app.Breakglass != nil && !app.Breakglass.Expired
}

// outcome is what one rule says about one finding.
type outcome int

const (
	noMatch  outcome = iota
	matches          // every condition holds
	unproven         // everything else holds, but the rule names an identity and nothing says who
)

// judge returns the contract's verdict on f: allowed by the first rule that
// matches; unknown when only a rule that needs an identity could allow it;
// else a violation.
func (c Contract) judge(f report.Finding, who *Attribution, breakglass bool) report.ContractVerdict {
	var firstUnproven *Rule
	var firstUnprovenIdx int
	for i, r := range c.Allow {
		switch r.match(f, who, breakglass) {
		case matches:
			return report.ContractVerdict{Name: c.Name, Verdict: report.VerdictAllowed, Rule: ruleRef(i, r)}
		case unproven:
			if firstUnproven == nil {
				firstUnproven, firstUnprovenIdx = &c.Allow[i], i
			}
		}
	}
	if firstUnproven != nil {
		return report.ContractVerdict{Name: c.Name, Verdict: report.VerdictUnknown, Rule: ruleRef(firstUnprovenIdx, *firstUnproven),
			Reason: "only a rule that names users or groups could allow this change, and no audit attribution says who made it"}
	}
	v := report.ContractVerdict{Name: c.Name, Verdict: report.VerdictViolation, Reason: violationReason(c, f, breakglass)}
	return v
}

func ruleRef(i int, r Rule) string { return fmt.Sprintf("allow[%d] %s", i, r) }

func violationReason(c Contract, f report.Finding, breakglass bool) string {
	by := f.Manager
	if by == "" {
		by = "no field manager"
	}
	s := fmt.Sprintf("contract %s allows no %s change by %s", c.Name, f.Class, by)
	if !breakglass && c.allowsDuringBreakglass(f) {
		s += "; it would be allowed while the app is suspended with `driftscan breakglass suspend`"
	}
	return s
}

// allowsDuringBreakglass reports whether a rule limited to break-glass
// would allow f, identity aside.
func (c Contract) allowsDuringBreakglass(f report.Finding) bool {
	for _, r := range c.Allow {
		if r.During == DuringBreakglass && r.match(f, nil, true) != noMatch {
			return true
		}
	}
	return false
}

// match checks the rule's conditions, the identity last: it is the only one
// that can be unknown.
func (r Rule) match(f report.Finding, who *Attribution, breakglass bool) outcome {
	if r.Class != AnyClass && r.Class != f.Class {
		return noMatch
	}
	if r.During == DuringBreakglass && !breakglass {
		return noMatch
	}
	if len(r.Managers) > 0 && !matchAnyGlob(r.Managers, f.Manager) {
		return noMatch
	}
	if len(r.Webhooks) > 0 && !anyWebhook(r.Webhooks, f.Actor) {
		return noMatch
	}
	if !r.Identity() {
		return matches
	}
	if who == nil {
		return unproven
	}
	if matchAnyGlob(r.Users, who.User) {
		return matches
	}
	for _, g := range who.Groups {
		if matchAnyGlob(r.Groups, g) {
			return matches
		}
	}
	return noMatch
}

// anyWebhook reports whether one of the finding's candidate webhooks
// (report.Finding.Actor, comma-separated) matches a glob.
func anyWebhook(globs []string, actor string) bool {
	if actor == "" {
		return false
	}
	for _, w := range strings.Split(actor, ",") {
		if matchAnyGlob(globs, strings.TrimSpace(w)) {
			return true
		}
	}
	return false
}
