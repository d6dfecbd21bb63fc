package report

import (
	"fmt"
	"sort"
	"strings"
)

// Reason says why a difference between Git and live was dismissed as no
// drift. Every dismissal is counted in Stats.Dismissed; with
// --explain-dismissed each is also listed in Object.Dismissed.
type Reason string

// The reasons, in the order reports list them.
const (
	// Defaulted: the API server (or a CRD's structural schema) filled in a
	// default Git leaves out: an unowned field under a parent Git declares,
	// or keys added inside an atomic value the applier still owns, whose
	// live form holds everything Git declares.
	Defaulted Reason = "defaulted"
	// ZeroValue: Git writes a zero value (0, false, "") that the API
	// server does not store, so live has no field at all.
	ZeroValue Reason = "zeroValue"
	// UnstableRender: the field differs between two renders of the same
	// commit (randAlphaNum, a checksum of generated values); the app's
	// warning lists these fields.
	UnstableRender Reason = "unstableRender"
	// ReconcilerMetadata: the tracking label or annotation that Argo CD,
	// Flux or Helm writes on what it applies, with the value that tool
	// writes for this app.
	ReconcilerMetadata Reason = "reconcilerMetadata"
	// Builtin: a key the API server, one of its admission plugins or a
	// built-in controller adds (the pvc-protection finalizer, the
	// Deployment controller's revision, a Service's allocated IPs).
	Builtin Reason = "builtin"
	// OperatorOwned: a field an operator or controller owns that Git
	// leaves out.
	OperatorOwned Reason = "operatorOwned"
	// Encrypted: a value Git holds encrypted with SOPS, which the applier
	// that decrypts it wrote live. driftscan never holds the key, so this
	// is as far as the value can be compared: a value anyone else wrote is
	// drift, and shown masked.
	Encrypted Reason = "encrypted"
	// Restart: the time a rollout restart writes on a workload's pod
	// template (kubectl rollout restart, and tools that restart the same
	// way), which Git leaves out: a record of an action, not configuration.
	Restart Reason = "restart"
	// ExtraneousIgnored: with --extra, a live object Git no longer
	// declares, tracked as an Argo CD app's, that Git marked
	// argocd.argoproj.io/compare-options: IgnoreExtraneous: Argo CD does
	// not count it towards the app's sync status (kustomize's generators
	// are told to mark what they generate so, with Prune=false, to keep
	// older generations).
	ExtraneousIgnored Reason = "ignoreExtraneous"
)

// Reasons lists every reason in report order.
var Reasons = []Reason{Defaulted, ZeroValue, UnstableRender, ReconcilerMetadata, Builtin, OperatorOwned, Encrypted, Restart, ExtraneousIgnored}

// Dismissal is one difference between Git and live that is no drift, and
// why. Values are masked like a finding's.
type Dismissal struct {
	// Path is the structured-merge-diff path, as in Finding.Path.
	Path   string `json:"path"`
	Type   Type   `json:"type"`
	Reason Reason `json:"reason"`
	// Detail says what was seen, for example the default filled in.
	Detail string `json:"detail"`
	// Manager owns Path live, "" when none does.
	Manager string `json:"manager,omitempty"`
	Git     string `json:"git"`
	Live    string `json:"live"`
}

// Dismissed counts dismissals by reason.
type Dismissed map[Reason]int

// Total is the number of dismissals of every reason.
func (d Dismissed) Total() int {
	n := 0
	for _, c := range d {
		n += c
	}
	return n
}

// Sorted returns the reasons that have dismissals, in report order.
func (d Dismissed) Sorted() []Reason {
	var out []Reason
	for _, r := range Reasons {
		if d[r] > 0 {
			out = append(out, r)
		}
	}
	for r := range d {
		if !known(r) && d[r] > 0 {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

func known(r Reason) bool { return rank(r) < len(Reasons) }

func rank(r Reason) int {
	for i, k := range Reasons {
		if k == r {
			return i
		}
	}
	return len(Reasons)
}

// Text is the reason as the table prints it.
func (r Reason) Text() string {
	switch r {
	case ZeroValue:
		return "zero value"
	case UnstableRender:
		return "unstable render"
	case ReconcilerMetadata:
		return "reconciler metadata"
	case Builtin:
		return "built-in"
	case OperatorOwned:
		return "operator-owned"
	case Encrypted:
		return "encrypted"
	case Restart:
		return "restart"
	}
	return string(r)
}

// String lists the counts in report order: "defaulted 40, zero value 5".
func (d Dismissed) String() string {
	var parts []string
	for _, r := range d.Sorted() {
		parts = append(parts, fmt.Sprintf("%s %d", r.Text(), d[r]))
	}
	return strings.Join(parts, ", ")
}
