package report

import "strings"

// Confidence says how sure an Attribution is.
type Confidence string

const (
	// ConfidenceExact: one audit event matches on every count (object,
	// subresource, field manager, time, and the request body where the
	// log has it).
	ConfidenceExact Confidence = "exact"
	// ConfidenceCandidate: the audit log narrows the author down but
	// cannot single one out: several users wrote in the same second, the
	// log has no request bodies to show who removed a field, or the
	// export carries no field manager to check.
	ConfidenceCandidate Confidence = "candidate"
	// ConfidenceNone: the audit log was read and holds no event that made
	// the finding; Reason says what was looked for.
	ConfidenceNone Confidence = "none"
)

// Attribution names who made a finding, from the cluster's audit log: the
// user and groups of the request, how it was sent (verb, user agent, field
// manager, subresource) and when. It is set only when the scan read an
// audit log.
//
// It is a field of its own rather than Finding.Actor because Actor was
// already a string in this contract (the MutatingWebhookConfiguration that
// likely injected a field), and the contract only grows.
type Attribution struct {
	Confidence Confidence `json:"confidence"`
	// User is the identity the request acted as: the impersonated user when
	// the request impersonated one, else the authenticated user.
	User   string   `json:"user,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// ServiceAccount is NAMESPACE/NAME when User is
	// system:serviceaccount:NAMESPACE:NAME.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// ImpersonatedBy is the authenticated user that impersonated User.
	ImpersonatedBy string   `json:"impersonatedBy,omitempty"`
	UserAgent      string   `json:"userAgent,omitempty"`
	SourceIPs      []string `json:"sourceIPs,omitempty"`
	AuditID        string   `json:"auditID,omitempty"`
	Verb           string   `json:"verb,omitempty"`
	// FieldManager is the manager the API server recorded for the request:
	// the fieldManager query parameter, else the user agent's program name.
	FieldManager string `json:"fieldManager,omitempty"`
	Subresource  string `json:"subresource,omitempty"`
	// Time is the event's stageTimestamp, RFC 3339 with microseconds.
	Time string `json:"time,omitempty"`
	// Requester: the user only sent the request during which something
	// else wrote the field (a mutating webhook); there is no one else to
	// name, and Reason says so.
	Requester bool `json:"requester,omitempty"`
	// Source is where the event was read: FILE:LINE, or FILE#N for the
	// N-th entry of a JSON document.
	Source string `json:"source,omitempty"`
	// Reason explains a candidate or none verdict, a requester, and an
	// exact verdict that needed more than the managedFields entry's time.
	Reason string `json:"reason,omitempty"`
	// Candidates lists every user who may have made the finding, each with
	// the event that makes them one, when there are several. The fields
	// above are then empty but for Confidence and Reason.
	Candidates []Attribution `json:"candidates,omitempty"`
}

// Known reports whether the attribution names anyone.
func (a *Attribution) Known() bool {
	return a != nil && a.Confidence != ConfidenceNone && (a.User != "" || len(a.Candidates) > 0)
}

// Users returns the user named, or every candidate's.
func (a *Attribution) Users() []string {
	if !a.Known() {
		return nil
	}
	if len(a.Candidates) == 0 {
		return []string{a.User}
	}
	out := make([]string, 0, len(a.Candidates))
	for _, c := range a.Candidates {
		out = append(out, c.User)
	}
	return out
}

// Person names the person for one line of text: "alice@example.com",
// "alice@example.com (candidate)", "alice@example.com or bob@example.com
// (candidates)", or "requested by ci-bot" when the user only sent the
// request; "" when nobody is known.
func (a *Attribution) Person() string {
	if !a.Known() {
		return ""
	}
	who := strings.Join(a.Users(), " or ")
	if a.Requester {
		who = "requested by " + who
	}
	switch {
	case a.Confidence == ConfidenceCandidate && len(a.Candidates) > 1:
		who += " (candidates)"
	case a.Confidence == ConfidenceCandidate:
		who += " (candidate)"
	}
	return who
}

// Who is Person after a manager: "by alice@example.com", or "requested by
// ci-bot".
func (a *Attribution) Who() string {
	p := a.Person()
	if p == "" || a.Requester {
		return p
	}
	return "by " + p
}

// Authors returns the users the audit log names as having made the
// findings (exact or candidate, not mere requesters), each once, in order.
func Authors(findings []Finding) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range findings {
		if f.Attribution == nil || f.Attribution.Requester {
			continue
		}
		for _, u := range f.Attribution.Users() {
			if !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	return out
}
