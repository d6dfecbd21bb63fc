package report

// Verdict is what a live-change contract says about a finding.
type Verdict string

// The verdicts, in the order reports list them.
const (
	// VerdictAllowed: a rule of the namespace's contract allows the change.
	VerdictAllowed Verdict = "allowed"
	// VerdictViolation: the namespace has a contract and no rule allows the change.
	VerdictViolation Verdict = "violation"
	// VerdictUnknown: only a rule that names users or groups could allow the
	// change, and nothing says who made it (no audit attribution).
	VerdictUnknown Verdict = "unknown"
	// VerdictUncovered: no contract covers the object's namespace.
	VerdictUncovered Verdict = "uncovered"
)

// Verdicts lists every verdict in report order.
var Verdicts = []Verdict{VerdictAllowed, VerdictViolation, VerdictUnknown, VerdictUncovered}

// ContractVerdict is the verdict of the contract that covers a finding's
// namespace.
type ContractVerdict struct {
	// Name is the contract; empty when the verdict is uncovered.
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	// Rule is the allow rule that decided, as configured: the one that
	// allowed the change, or for unknown the one that needs an identity.
	Rule string `json:"rule,omitempty"`
	// Reason says in a sentence why.
	Reason string `json:"reason,omitempty"`
}

// FailOnViolation is the --fail-on value (and notify route entry) that
// stands for every finding whose contract verdict is violation, whatever its
// class.
const FailOnViolation = string(VerdictViolation)

// contractText is the note a table or Markdown row gives a finding's
// verdict: only a violation or an unknown needs reading there; the summary
// counts the rest.
func contractText(f Finding) string {
	c := f.Contract
	if c == nil {
		return ""
	}
	switch c.Verdict {
	case VerdictViolation:
		return "violates contract " + c.Name
	case VerdictUnknown:
		return "contract " + c.Name + ": unknown until an audit attribution says who"
	}
	return ""
}
