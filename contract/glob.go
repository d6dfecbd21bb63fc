package contract

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Globs in contracts know two wildcards: * (any run of characters) and ?
// (one character). They are turned into RE2 expressions, so that the report
// (Go's regexp) and the admission policy (CEL's matches(), also RE2) match
// exactly the same names.

// globRegexp returns the anchored RE2 expression for a glob.
func globRegexp(glob string) string {
	var b strings.Builder
	b.WriteByte('^')
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteByte('.')
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteByte('$')
	return b.String()
}

// validGlob rejects what the two wildcards cannot express.
func validGlob(glob string) error {
	if glob == "" {
		return fmt.Errorf("empty pattern")
	}
	if strings.ContainsAny(glob, "[]\\") {
		return fmt.Errorf("pattern %q: only * and ? are wildcards; [, ] and \\ are not allowed", glob)
	}
	return nil
}

// literal reports whether a glob has no wildcard.
func literal(glob string) bool { return !strings.ContainsAny(glob, "*?") }

func matchGlob(glob, s string) bool {
	if literal(glob) {
		return glob == s
	}
	return regexp.MustCompile(globRegexp(glob)).MatchString(s)
}

func matchAnyGlob(globs []string, s string) bool {
	for _, g := range globs {
		if matchGlob(g, s) {
			return true
		}
	}
	return false
}

// globsOverlap reports whether some string matches both globs. Each * may
// absorb any symbol of the other pattern (a literal, a ?, or a run the
// other's * stands for); literals and ? must agree one for one.
func globsOverlap(a, b string) bool {
	p, q := []rune(a), []rune(b)
	memo := map[[2]int]bool{}
	seen := map[[2]int]bool{}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		k := [2]int{i, j}
		if seen[k] {
			return memo[k]
		}
		seen[k] = true
		var ok bool
		switch {
		case i == len(p) && j == len(q):
			ok = true
		case i < len(p) && p[i] == '*':
			ok = match(i+1, j) || (j < len(q) && match(i, j+1))
		case j < len(q) && q[j] == '*':
			ok = match(i, j+1) || (i < len(p) && match(i+1, j))
		case i < len(p) && j < len(q):
			ok = (p[i] == q[j] || p[i] == '?' || q[j] == '?') && match(i+1, j+1)
		}
		memo[k] = ok
		return ok
	}
	return match(0, 0)
}

// LabelSelector is the selector as Kubernetes writes it, for a policy
// binding's namespaceSelector.
func (s Selector) LabelSelector() *metav1.LabelSelector {
	ls := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: metav1.LabelSelectorOperator(r.Operator), Values: r.Values,
		})
	}
	return ls
}

// Matches reports whether namespace labels match the selector.
func (s Selector) Matches(l map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector())
	if err != nil {
		return false // Validate rejects such selectors
	}
	return sel.Matches(labels.Set(l))
}

// validate checks the selector the way the API server would.
func (s Selector) validate() error {
	if len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		return fmt.Errorf("namespaceSelector is empty: it would select every namespace; use namespaces: [\"*\"] to say so")
	}
	_, err := metav1.LabelSelectorAsSelector(s.LabelSelector())
	return err
}
