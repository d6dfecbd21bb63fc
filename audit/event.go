// Package audit reads the Kubernetes API server's audit log and names the
// user behind each drift finding.
//
// It reads audit.k8s.io/v1 Event JSON lines as the API server's log backend
// writes them (one file, or a folder of rotated files, gzip too), and the
// same events exported from a managed cluster's log service: EKS (CloudWatch
// Logs entries whose message is the event) and GKE (Cloud Audit Logs entries
// with a protoPayload). docs/audit.md shows each format. Reading streams, and
// only events that can explain a finding are kept: successful mutating
// requests on the objects being scanned, not dry-run, not driftscan's own.
//
// The package takes no Kubernetes client: the scanner hands it what it knows
// of each finding (object, path, the managedFields entry that owns the path)
// and gets a report.Attribution back.
package audit

import (
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// ObjectRef names an object the way the audit log does: by resource, not kind.
type ObjectRef struct {
	Group       string // "" for the core group
	Resource    string // plural: deployments
	Namespace   string
	Name        string
	Subresource string // scale, status, ...
}

// object drops the subresource: the key events are indexed by.
func (r ObjectRef) object() ObjectRef { r.Subresource = ""; return r }

// Event is one audit event reduced to what attribution reads.
type Event struct {
	AuditID string
	Verb    string
	// User is the identity the request acted as (the impersonated user when
	// there is one); ImpersonatedBy the authenticated user behind it.
	User           string
	Groups         []string
	ImpersonatedBy string
	UserAgent      string
	SourceIPs      []string
	Object         ObjectRef
	// Manager is the field manager the API server recorded; ManagerKnown
	// is false when the entry carries no request URI (GKE) and Manager is
	// only the user agent's program name.
	Manager      string
	ManagerKnown bool
	// Received and Completed are requestReceivedTimestamp and stageTimestamp.
	Received, Completed time.Time
	// Body is the request body (Request and RequestResponse levels): the
	// whole object for create and update, the patch for patch. nil at
	// Metadata level.
	Body []byte
	// Webhooks are the mutating webhooks that changed the request object,
	// from the audit annotations.
	Webhooks []WebhookMutation
	// Source is where the event was read: FILE:LINE or FILE#N.
	Source string

	decodeOnce sync.Once
	decoded    any // Body decoded, for effectOn
}

// WebhookMutation is one mutating webhook call that changed the object, from
// the mutation.webhook.admission.k8s.io/round_R_index_I annotation, with the
// JSON patch of patch.webhook.admission.k8s.io/round_R_index_I when the
// level is Request or higher.
// https://github.com/kubernetes/apiserver/blob/v0.37.2/pkg/admission/plugin/webhook/mutating/dispatcher.go
type WebhookMutation struct {
	Configuration string
	Webhook       string
	Patch         []byte // a JSON patch; nil when not logged
}

// mutatingVerbs are the verbs that write an object.
var mutatingVerbs = map[string]bool{"create": true, "update": true, "patch": true}

// FieldManager returns the field manager the API server records for a
// request: the fieldManager query parameter, else the user agent's program
// name, derived exactly as the API server does (managerOrUserAgent and
// prefixFromUserAgent in k8s.io/apiserver/pkg/endpoints/handlers/create.go):
// the characters before the first "/", without unprintable ones, cut at 128
// bytes.
func FieldManager(requestURI, userAgent string) string {
	if m := queryParam(requestURI, "fieldManager"); m != "" {
		return m
	}
	return ProgramOf(userAgent)
}

// fieldManagerMaxLength is validation.FieldManagerMaxLength in
// k8s.io/apimachinery/pkg/apis/meta/v1/validation.
const fieldManagerMaxLength = 128

// ProgramOf is the API server's prefixFromUserAgent: the user agent up to
// the first "/", printable characters only, at most 128 bytes.
func ProgramOf(userAgent string) string {
	m, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range m {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > fieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DryRun reports whether the request URI asks for a dry run.
func DryRun(requestURI string) bool {
	_, q, ok := strings.Cut(requestURI, "?")
	if !ok {
		return false
	}
	v, err := url.ParseQuery(q)
	return err == nil && v.Get("dryRun") != ""
}

func queryParam(requestURI, key string) string {
	_, q, ok := strings.Cut(requestURI, "?")
	if !ok {
		return ""
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return ""
	}
	return v.Get(key)
}

// serviceAccount returns NAMESPACE/NAME for system:serviceaccount:NAMESPACE:NAME.
func serviceAccount(user string) string {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return ""
	}
	ns, name, ok := strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" {
		return ""
	}
	return ns + "/" + name
}
