package classify

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/calricon/driftscan/report"
)

// IgnoreRule hides matching findings. Every rule is a debt: it has an owner,
// a reason and a review date after which it hides nothing. The selectors
// (group, kind, namespace, name, jsonPointers, jqPathExpressions,
// managedFieldsManagers) mean what they mean in Argo CD's ignoreDifferences.
type IgnoreRule struct {
	Group                 string   `yaml:"group"`
	Kind                  string   `yaml:"kind"`
	Namespace             string   `yaml:"namespace"`
	Name                  string   `yaml:"name"`
	JSONPointers          []string `yaml:"jsonPointers"`
	JQPathExpressions     []string `yaml:"jqPathExpressions"`
	ManagedFieldsManagers []string `yaml:"managedFieldsManagers"`
	Owner                 string   `yaml:"owner"`
	Reason                string   `yaml:"reason"`
	Expires               string   `yaml:"expires"`
	// App limits the rule to one app (rules imported from Argo CD).
	App string `yaml:"app"`

	expires time.Time
	jq      []*gojq.Code
}

// Validate checks that the rule names its owner, reason and review date, and
// compiles its jq expressions.
func (r *IgnoreRule) Validate() error {
	var errs []error
	if r.Owner == "" {
		errs = append(errs, errors.New("owner is required"))
	}
	if r.Reason == "" {
		errs = append(errs, errors.New("reason is required"))
	}
	if r.Expires == "" {
		errs = append(errs, errors.New("expires is required"))
	} else if t, err := time.Parse(time.DateOnly, r.Expires); err != nil {
		errs = append(errs, fmt.Errorf("expires %q: want a date like 2027-03-01", r.Expires))
	} else {
		r.expires = t
	}
	if len(r.JSONPointers)+len(r.JQPathExpressions)+len(r.ManagedFieldsManagers) == 0 {
		errs = append(errs, errors.New("one of jsonPointers, jqPathExpressions or managedFieldsManagers is required"))
	}
	for _, p := range r.JSONPointers {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("jsonPointer %q must start with /", p))
		}
	}
	r.jq = nil
	for _, expr := range r.JQPathExpressions {
		q, err := gojq.Parse(expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("jqPathExpression %q: %w", expr, err))
			continue
		}
		code, err := gojq.Compile(&gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: "path", Args: []*gojq.Query{q}}}})
		if err != nil {
			errs = append(errs, fmt.Errorf("jqPathExpression %q: %w", expr, err))
			continue
		}
		r.jq = append(r.jq, code)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ignore rule %s: %w", r.describe(), err)
	}
	return nil
}

func (r *IgnoreRule) describe() string {
	parts := []string{}
	for _, p := range []string{r.Group, r.Kind, r.Namespace, r.Name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "for all objects"
	}
	return "for " + strings.Join(parts, "/")
}

// Report returns the rule as the report shows it.
func (r *IgnoreRule) Report() *report.IgnoreRule {
	return &report.IgnoreRule{
		Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
		JSONPointers: r.JSONPointers, JQPathExpressions: r.JQPathExpressions,
		ManagedFieldsManagers: r.ManagedFieldsManagers,
		Owner:                 r.Owner, Reason: r.Reason, Expires: r.Expires, App: r.App,
	}
}

// Expired reports whether the rule's review date has passed at now.
func (r *IgnoreRule) Expired(now time.Time) bool { return !now.Before(r.expires.AddDate(0, 0, 1)) }

// IgnoreTarget is what ignore rules are matched against: the object and the
// finding's JSON pointer (list items by index, as Argo CD writes them).
type IgnoreTarget struct {
	App                          string
	Group, Kind, Namespace, Name string
	// Live is the live object, for jq path expressions.
	Live map[string]any
	// Pointer is the finding's RFC 6901 pointer into the live object (into
	// Git's for Removed findings).
	Pointer string
}

// Ignorer applies ignore rules and keeps count, so that the rules that are
// expired or matched nothing can be reported as debts.
type Ignorer struct {
	rules   []*IgnoreRule
	now     time.Time
	matched []int
	jqCache map[jqKey][]string
}

type jqKey struct {
	rule   int
	object string
}

// NewIgnorer validates the rules and returns an Ignorer for a scan at now.
func NewIgnorer(rules []IgnoreRule, now time.Time) (*Ignorer, error) {
	ig := &Ignorer{now: now, matched: make([]int, len(rules)), jqCache: map[jqKey][]string{}}
	var errs []error
	for i := range rules {
		r := rules[i]
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("ignore[%d]: %w", i, err))
		}
		ig.rules = append(ig.rules, &r)
	}
	return ig, errors.Join(errs...)
}

// CountFor returns how many rules could apply to an app's objects.
func (ig *Ignorer) CountFor(app string) int {
	n := 0
	for _, r := range ig.rules {
		if r.App == "" || r.App == app {
			n++
		}
	}
	return n
}

// Apply marks f ignored when a rule that is not expired matches it. An
// expired rule that matches is counted, so its debt says what it would hide.
func (ig *Ignorer) Apply(t IgnoreTarget, f *report.Finding) {
	for i, r := range ig.rules {
		if !ig.matches(i, r, t, f) {
			continue
		}
		ig.matched[i]++
		if r.Expired(ig.now) {
			continue
		}
		if !f.Ignored {
			f.Ignored = true
			f.IgnoreRule = r.Report()
		}
	}
}

func (ig *Ignorer) matches(i int, r *IgnoreRule, t IgnoreTarget, f *report.Finding) bool {
	if (r.App != "" && r.App != t.App) || (r.Group != "" && r.Group != t.Group) || (r.Kind != "" && r.Kind != t.Kind) ||
		(r.Namespace != "" && r.Namespace != t.Namespace) || (r.Name != "" && r.Name != t.Name) {
		return false
	}
	for _, p := range r.JSONPointers {
		if pointerCovers(p, t.Pointer) {
			return true
		}
	}
	for _, m := range r.ManagedFieldsManagers {
		if m == f.Manager {
			return true
		}
	}
	if len(r.jq) > 0 {
		key := jqKey{rule: i, object: t.Group + "/" + t.Kind + "/" + t.Namespace + "/" + t.Name}
		ptrs, ok := ig.jqCache[key]
		if !ok {
			ptrs = jqPointers(r.jq, t.Live)
			ig.jqCache[key] = ptrs
		}
		for _, p := range ptrs {
			if pointerCovers(p, t.Pointer) {
				return true
			}
		}
	}
	return false
}

// pointerCovers reports whether rule pointer p is the finding's pointer or
// one of its parents.
func pointerCovers(p, finding string) bool {
	p = strings.TrimSuffix(p, "/")
	return finding == p || strings.HasPrefix(finding, p+"/")
}

// jqPointers runs path expressions on the live object and returns the
// pointers they select. Errors select nothing, as in Argo CD.
func jqPointers(codes []*gojq.Code, live map[string]any) []string {
	// gojq takes only JSON's own types (no int64): round-trip the object.
	var doc any
	if data, err := json.Marshal(live); err != nil || json.Unmarshal(data, &doc) != nil {
		return nil
	}
	var out []string
	for _, code := range codes {
		iter := code.Run(doc)
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			path, ok := v.([]any)
			if !ok {
				continue
			}
			var b strings.Builder
			for _, el := range path {
				b.WriteByte('/')
				switch e := el.(type) {
				case string:
					b.WriteString(strings.ReplaceAll(strings.ReplaceAll(e, "~", "~0"), "/", "~1"))
				case int:
					b.WriteString(strconv.Itoa(e))
				default:
					b.WriteString(fmt.Sprint(e))
				}
			}
			out = append(out, b.String())
		}
	}
	return out
}

// Debts returns the rules that are expired or matched nothing in the scan.
func (ig *Ignorer) Debts() []report.Debt {
	out := []report.Debt{}
	for i, r := range ig.rules {
		switch {
		case r.Expired(ig.now):
			out = append(out, report.Debt{Kind: report.DebtExpired, Owner: r.Owner, Rule: *r.Report(), Matched: ig.matched[i]})
		case ig.matched[i] == 0:
			out = append(out, report.Debt{Kind: report.DebtUnused, Owner: r.Owner, Rule: *r.Report()})
		}
	}
	return out
}
