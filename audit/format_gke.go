package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// gkePayload is the Cloud Audit Logs AuditLog of a GKE Kubernetes audit entry.
// https://cloud.google.com/kubernetes-engine/docs/how-to/audit-logging
type gkePayload struct {
	ServiceName        string `json:"serviceName"`
	MethodName         string `json:"methodName"`
	ResourceName       string `json:"resourceName"`
	AuthenticationInfo struct {
		PrincipalEmail string `json:"principalEmail"`
	} `json:"authenticationInfo"`
	RequestMetadata struct {
		CallerIP                string `json:"callerIp"`
		CallerSuppliedUserAgent string `json:"callerSuppliedUserAgent"`
	} `json:"requestMetadata"`
	Request json.RawMessage `json:"request"`
	Status  *struct {
		Code int `json:"code"`
	} `json:"status"`
}

// gkeService is the serviceName of Kubernetes audit entries.
const gkeService = "k8s.io"

// isGKE reports whether e is a Kubernetes audit entry of Cloud Logging.
func (e *entry) isGKE() bool {
	return e.ProtoPayload != nil && e.ProtoPayload.ServiceName == gkeService
}

// gke turns a GKE entry into an Event. The entry carries no request URI,
// so neither the fieldManager parameter nor dryRun can be read: Manager is
// the user agent's program name and ManagerKnown is false. The entry's
// operation.id (else insertId) is the API server's audit ID; its labels are
// the audit annotations.
func (e *entry) gke() (*Event, verdict) {
	p := e.ProtoPayload
	verb := p.MethodName[strings.LastIndexByte(p.MethodName, '.')+1:]
	ref, ok := gkeObject(p.ResourceName)
	if !mutatingVerbs[verb] || !ok {
		return nil, dropped
	}
	if p.Status != nil && p.Status.Code != 0 { // a google.rpc.Code: 0 is OK
		return nil, dropped
	}
	ua := p.RequestMetadata.CallerSuppliedUserAgent
	if ProgramOf(ua) == ownProgram {
		return nil, dropped
	}
	var t time.Time
	if err := json.Unmarshal(e.Timestamp, &t); err != nil {
		return nil, dropped
	}
	id := e.InsertID
	if e.Operation != nil && e.Operation.ID != "" {
		id = e.Operation.ID
	}
	ev := &Event{
		AuditID: id, Verb: verb, User: p.AuthenticationInfo.PrincipalEmail, UserAgent: ua,
		Object: ref, Manager: ProgramOf(ua), Received: t, Completed: t,
		Body: gkeBody(p.Request), Webhooks: webhookMutations(e.Labels),
	}
	if ip := p.RequestMetadata.CallerIP; ip != "" {
		ev.SourceIPs = []string{ip}
	}
	return ev, keep
}

// gkeTime is the time of any GKE entry, for the log's time range.
func (e *entry) gkeTime() time.Time {
	var t time.Time
	_ = json.Unmarshal(e.Timestamp, &t)
	return t
}

// gkeObject parses a resourceName: GROUP/VERSION/namespaces/NS/RESOURCE/NAME[/SUBRESOURCE]
// for namespaced objects, GROUP/VERSION/RESOURCE/NAME[/SUBRESOURCE] for
// the others; the core group is written "core".
func gkeObject(name string) (ObjectRef, bool) {
	parts := strings.Split(name, "/")
	if len(parts) < 4 {
		return ObjectRef{}, false
	}
	group := parts[0]
	if group == "core" {
		group = ""
	}
	rest := parts[2:]
	var ref ObjectRef
	switch {
	case rest[0] == "namespaces" && len(rest) >= 4:
		ref = ObjectRef{Group: group, Namespace: rest[1], Resource: rest[2], Name: rest[3]}
		rest = rest[4:]
	default:
		ref = ObjectRef{Group: group, Resource: rest[0], Name: rest[1]}
		rest = rest[2:]
	}
	if len(rest) > 0 {
		ref.Subresource = rest[0]
	}
	return ref, ref.Name != ""
}

// gkeBody strips the protobuf type annotation from a request body.
func gkeBody(raw json.RawMessage) []byte {
	raw = body(raw)
	if raw == nil || !bytes.Contains(raw, []byte(`"@type"`)) {
		return raw
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "@type")
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}
