package classify

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// Tool limits the rule to the apps of one reconciler (report.GitOps
	// Tool): argocd-cm's rules are every Argo CD app's, and no other's.
	Tool string `yaml:"-"`
	// Reconciler is set on a rule imported from a reconciler's own
	// settings (argocd, flux): that reconciler leaves the field out of its
	// diff too. "" for a rule of driftscan's config.
	Reconciler string `yaml:"-"`
	// DiffOnly: the reconciler leaves the field out of its diff only, and
	// its sync applies Git's value whatever the sync options (argocd-cm's
	// ignoreAggregatedRoles, which RespectIgnoreDifferences does not cover).
	DiffOnly bool `yaml:"-"`

	expires time.Time
	jq      []*jqExpr
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
		e, err := compileJQ(expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("jqPathExpression %q: %w", expr, err))
			continue
		}
		r.jq = append(r.jq, e)
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
		Owner:                 r.Owner, Reason: r.Reason, Expires: r.Expires, App: r.App, Reconciler: r.Reconciler, DiffOnly: r.DiffOnly,
	}
}

// Expired reports whether the rule's review date has passed at now.
func (r *IgnoreRule) Expired(now time.Time) bool { return !now.Before(r.expires.AddDate(0, 0, 1)) }

// IgnoreObject is the live object ignore rules are matched against.
type IgnoreObject struct {
	App string
	// Tool is the app's reconciler (report.GitOps Tool), "" for none.
	Tool                         string
	Group, Kind, Namespace, Name string
	// Live is the live object, for jq path expressions.
	Live map[string]any
}

func (o IgnoreObject) ref() string {
	kind := o.Kind
	if o.Group != "" {
		kind += "." + o.Group
	}
	if o.Namespace == "" {
		return kind + "/" + o.Name
	}
	return kind + "/" + o.Namespace + "/" + o.Name
}

// IgnoreTarget is one finding's place: the object and the finding's JSON
// pointer (list items by index, as Argo CD writes them).
type IgnoreTarget struct {
	App string
	// Tool is the app's reconciler (report.GitOps Tool), "" for none.
	Tool                         string
	Group, Kind, Namespace, Name string
	// Live is the live object, for jq path expressions.
	Live map[string]any
	// Pointer is the finding's RFC 6901 pointer into the live object (into
	// Git's for Removed findings).
	Pointer string
}

// Ignorer applies ignore rules and keeps count, so that the rules that are
// expired or matched nothing can be reported as debts. It is safe for
// concurrent use: each object's jq expressions run in the caller's
// goroutine, bounded by JQLimits, outside any lock.
type Ignorer struct {
	rules   []*IgnoreRule
	now     time.Time
	limits  JQLimits
	matched []atomic.Int64

	mu sync.Mutex
	// failed holds, by rule and expression, the first object on which a jq
	// expression ran past the limits; such an expression is not run again.
	failed map[jqKey]error
}

type jqKey struct {
	rule, expr int
}

// IgnoreOptions say when the scan runs and bound jq path expressions.
type IgnoreOptions struct {
	Now time.Time
	JQ  JQLimits
}

// DefaultIgnoreOptions is a scan at now with DefaultJQLimits.
func DefaultIgnoreOptions(now time.Time) IgnoreOptions {
	return IgnoreOptions{Now: now, JQ: DefaultJQLimits()}
}

// NewIgnorer validates the rules and returns an Ignorer for a scan at now,
// with DefaultJQLimits.
func NewIgnorer(rules []IgnoreRule, now time.Time) (*Ignorer, error) {
	return NewIgnorerWith(rules, DefaultIgnoreOptions(now))
}

// NewIgnorerWith validates the rules and returns an Ignorer with opts.
func NewIgnorerWith(rules []IgnoreRule, opts IgnoreOptions) (*Ignorer, error) {
	if opts.JQ.Timeout <= 0 || opts.JQ.MaxPaths <= 0 {
		def := DefaultJQLimits()
		opts.JQ.Timeout, opts.JQ.MaxPaths = cmp.Or(opts.JQ.Timeout, def.Timeout), cmp.Or(opts.JQ.MaxPaths, def.MaxPaths)
	}
	ig := &Ignorer{now: opts.Now, limits: opts.JQ, matched: make([]atomic.Int64, len(rules)), failed: map[jqKey]error{}}
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
// For several findings of one object, For is cheaper: it runs each jq
// expression once per object.
func (ig *Ignorer) Apply(t IgnoreTarget, f *report.Finding) {
	ig.For(IgnoreObject{App: t.App, Tool: t.Tool, Group: t.Group, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name, Live: t.Live}).Apply(t.Pointer, f)
}

// For returns the rules as they apply to one live object. The result is
// for one goroutine; any number may be used at once.
func (ig *Ignorer) For(o IgnoreObject) *ObjectIgnorer {
	return &ObjectIgnorer{ig: ig, obj: o, jq: map[jqKey][]string{}}
}

// ObjectIgnorer applies the rules to the findings of one object, running
// each jq expression at most once, when a finding first needs it.
type ObjectIgnorer struct {
	ig  *Ignorer
	obj IgnoreObject
	jq  map[jqKey][]string
	doc any
}

// Apply marks f, at pointer in the object, ignored when a rule that is not
// expired matches it.
func (oi *ObjectIgnorer) Apply(pointer string, f *report.Finding) {
	for i, r := range oi.ig.rules {
		if !oi.matches(i, r, pointer, f) {
			continue
		}
		oi.ig.matched[i].Add(1)
		if r.Expired(oi.ig.now) {
			continue
		}
		if !f.Ignored {
			f.Ignored = true
			f.IgnoreRule = r.Report()
		}
	}
}

func (oi *ObjectIgnorer) matches(i int, r *IgnoreRule, pointer string, f *report.Finding) bool {
	t := oi.obj
	if (r.App != "" && r.App != t.App) || (r.Tool != "" && r.Tool != t.Tool) || (r.Group != "" && r.Group != t.Group) || (r.Kind != "" && r.Kind != t.Kind) ||
		(r.Namespace != "" && r.Namespace != t.Namespace) || (r.Name != "" && r.Name != t.Name) {
		return false
	}
	for _, p := range r.JSONPointers {
		if pointerCovers(p, pointer) {
			return true
		}
	}
	for _, m := range r.ManagedFieldsManagers {
		if m == f.Manager {
			return true
		}
	}
	for j := range r.jq {
		for _, p := range oi.pointers(jqKey{rule: i, expr: j}, r) {
			if pointerCovers(p, pointer) {
				return true
			}
		}
	}
	return false
}

// pointers runs expression k.expr of rule r on the object once and keeps
// what it selected. An expression that ran past the limits, here or on an
// earlier object, selects nothing: the first time is recorded as the
// rule's error.
func (oi *ObjectIgnorer) pointers(k jqKey, r *IgnoreRule) []string {
	if ptrs, ok := oi.jq[k]; ok {
		return ptrs
	}
	ig := oi.ig
	ig.mu.Lock()
	_, failed := ig.failed[k]
	ig.mu.Unlock()
	if failed {
		oi.jq[k] = nil
		return nil
	}
	if oi.doc == nil {
		// gojq takes only JSON's own types (no int64): round-trip the object.
		var doc any
		if data, err := json.Marshal(oi.obj.Live); err != nil || json.Unmarshal(data, &doc) != nil {
			doc = map[string]any{}
		}
		oi.doc = doc
	}
	ptrs, err := r.jq[k.expr].pointers(oi.doc, ig.limits)
	if err != nil {
		ig.mu.Lock()
		if _, dup := ig.failed[k]; !dup {
			ig.failed[k] = fmt.Errorf("ignore[%d] %s: jqPathExpression %q on %s: %w; it is not applied to this or any later object",
				k.rule, r.describe(), r.jq[k.expr].text, oi.obj.ref(), err)
		}
		ig.mu.Unlock()
		ptrs = nil
	}
	oi.jq[k] = ptrs
	return ptrs
}

// Errors returns, once per rule expression, the jq expressions that ran
// past JQLimits, naming the rule and the object. The findings such an
// expression might have hidden are shown.
func (ig *Ignorer) Errors() []error {
	ig.mu.Lock()
	defer ig.mu.Unlock()
	keys := make([]jqKey, 0, len(ig.failed))
	for k := range ig.failed {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b jqKey) int { return cmp.Or(cmp.Compare(a.rule, b.rule), cmp.Compare(a.expr, b.expr)) })
	out := make([]error, len(keys))
	for i, k := range keys {
		out[i] = ig.failed[k]
	}
	return out
}

// pointerCovers reports whether rule pointer p is the finding's pointer or
// one of its parents.
func pointerCovers(p, finding string) bool {
	p = strings.TrimSuffix(p, "/")
	return finding == p || strings.HasPrefix(finding, p+"/")
}

// Debts returns the rules that are expired or matched nothing in the scan.
func (ig *Ignorer) Debts() []report.Debt {
	out := []report.Debt{}
	for i, r := range ig.rules {
		switch {
		case r.Expired(ig.now):
			out = append(out, report.Debt{Kind: report.DebtExpired, Owner: r.Owner, Rule: *r.Report(), Matched: int(ig.matched[i].Load())})
		case ig.matched[i].Load() == 0:
			out = append(out, report.Debt{Kind: report.DebtUnused, Owner: r.Owner, Rule: *r.Report()})
		}
	}
	return out
}
