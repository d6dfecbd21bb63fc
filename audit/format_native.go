package audit

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// entry is the union of the fields of every format read: an audit.k8s.io/v1
// Event, a CloudWatch Logs entry (message), a page of them (events,
// logEvents), and a Cloud Logging entry (protoPayload). One decode tells
// which it is.
type entry struct {
	// audit.k8s.io/v1 Event
	// https://kubernetes.io/docs/reference/config-api/apiserver-audit.v1/#audit-k8s-io-v1-Event
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     userInfo          `json:"user"`
	ImpersonatedUser         *userInfo         `json:"impersonatedUser"`
	SourceIPs                []string          `json:"sourceIPs"`
	UserAgent                string            `json:"userAgent"`
	ObjectRef                *objectRef        `json:"objectRef"`
	ResponseStatus           *responseStatus   `json:"responseStatus"`
	RequestObject            json.RawMessage   `json:"requestObject"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations"`

	// CloudWatch Logs: FilteredLogEvent, OutputLogEvent, a subscription's
	// logEvents[]; the message is the audit event.
	Message *string `json:"message"`
	// Pages: `aws logs filter-log-events` and `get-log-events` output
	// (events), a CloudWatch Logs subscription payload (logEvents).
	Events    []json.RawMessage `json:"events"`
	LogEvents []json.RawMessage `json:"logEvents"`

	// Cloud Logging LogEntry with a Cloud Audit Logs AuditLog payload.
	ProtoPayload *gkePayload `json:"protoPayload"`
	InsertID     string      `json:"insertId"`
	Operation    *struct {
		ID string `json:"id"`
	} `json:"operation"`
	Labels    map[string]string `json:"labels"`
	Timestamp json.RawMessage   `json:"timestamp"`
}

type userInfo struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

type objectRef struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	APIGroup    string `json:"apiGroup"`
	Subresource string `json:"subresource"`
}

type responseStatus struct {
	Code int `json:"code"`
}

// isNative reports whether e is an audit.k8s.io Event.
func (e *entry) isNative() bool {
	if e.Kind == "Event" && strings.HasPrefix(e.APIVersion, "audit.k8s.io/") {
		return true
	}
	// Some forwarders drop kind and apiVersion.
	return e.Kind == "" && e.AuditID != "" && e.Stage != "" && e.Verb != ""
}

// verdict says what became of an audit event.
type verdict int

const (
	dropped verdict = iota // read, cannot explain a finding
	keep                   // an event to index
)

// native turns an audit.k8s.io/v1 Event into an Event, or says why it
// cannot explain a finding: another stage than ResponseComplete (the one
// with the outcome), a failed or read-only request, a dry run, driftscan's
// own request, or no named object.
func (e *entry) native() (*Event, verdict) {
	if e.Stage != "ResponseComplete" || !mutatingVerbs[e.Verb] || e.ObjectRef == nil || e.ObjectRef.Name == "" {
		return nil, dropped
	}
	if e.ResponseStatus != nil && (e.ResponseStatus.Code < 200 || e.ResponseStatus.Code > 299) {
		return nil, dropped
	}
	if DryRun(e.RequestURI) || ProgramOf(e.UserAgent) == ownProgram {
		return nil, dropped
	}
	ev := &Event{
		AuditID:   e.AuditID,
		Verb:      e.Verb,
		User:      e.User.Username,
		Groups:    e.User.Groups,
		UserAgent: e.UserAgent,
		SourceIPs: e.SourceIPs,
		Object: ObjectRef{Group: e.ObjectRef.APIGroup, Resource: e.ObjectRef.Resource, Namespace: e.ObjectRef.Namespace,
			Name: e.ObjectRef.Name, Subresource: e.ObjectRef.Subresource},
		Manager:      FieldManager(e.RequestURI, e.UserAgent),
		ManagerKnown: true,
		Received:     e.RequestReceivedTimestamp,
		Completed:    e.StageTimestamp,
		Body:         body(e.RequestObject),
		Webhooks:     webhookMutations(e.Annotations),
	}
	if u := e.ImpersonatedUser; u != nil && u.Username != "" {
		ev.User, ev.Groups, ev.ImpersonatedBy = u.Username, u.Groups, e.User.Username
	}
	if ev.Received.IsZero() {
		ev.Received = ev.Completed
	}
	return ev, keep
}

// ownProgram is the user agent program of driftscan's own requests.
const ownProgram = "driftscan"

// body returns a request body, or nil for none.
func body(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// Audit annotation prefixes of mutating admission webhooks.
const (
	mutationAnnotation = "mutation.webhook.admission.k8s.io/"
	patchAnnotation    = "patch.webhook.admission.k8s.io/"
)

// webhookMutations reads the webhook calls that mutated the object from the
// audit annotations.
func webhookMutations(ann map[string]string) []WebhookMutation {
	var out []WebhookMutation
	for k, v := range ann {
		round, ok := strings.CutPrefix(k, mutationAnnotation)
		if !ok {
			continue
		}
		var m struct {
			Configuration string `json:"configuration"`
			Webhook       string `json:"webhook"`
			Mutated       bool   `json:"mutated"`
		}
		if json.Unmarshal([]byte(v), &m) != nil || !m.Mutated {
			continue
		}
		wm := WebhookMutation{Configuration: m.Configuration, Webhook: m.Webhook}
		var p struct {
			Patch json.RawMessage `json:"patch"`
		}
		if pv, ok := ann[patchAnnotation+round]; ok && json.Unmarshal([]byte(pv), &p) == nil && len(p.Patch) > 0 {
			wm.Patch = p.Patch
		}
		out = append(out, wm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Configuration+out[i].Webhook < out[j].Configuration+out[j].Webhook })
	return out
}
