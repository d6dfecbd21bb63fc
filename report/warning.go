package report

import "sort"

// WarningCode names a kind of fidelity a scan lost.
type WarningCode string

// The warning codes. Each is something the scan could not read and went on
// without: no object failed, but some findings say less than they could.
const (
	// WarnWebhooksUnreadable: the MutatingWebhookConfigurations could not
	// be listed, so no injected field names the webhook behind it, and
	// hints may wrongly say that no webhook matches.
	WarnWebhooksUnreadable WarningCode = "WebhooksUnreadable"
	// WarnNamespaceUnreadable: a namespace's labels could not be read, so
	// webhooks that select namespaces by label are not matched to its
	// objects.
	WarnNamespaceUnreadable WarningCode = "NamespaceUnreadable"
	// WarnAutoscalersUnreadable: a kind of autoscaler could not be listed
	// (or its kind not looked up), so a replica war with it gets no hint.
	WarnAutoscalersUnreadable WarningCode = "AutoscalersUnreadable"
	// WarnSchemaNotPublished: the server publishes no OpenAPI schema for a
	// group/version, so its objects were compared by deduction: lists as
	// whole values, without merge keys or defaults.
	WarnSchemaNotPublished WarningCode = "SchemaNotPublished"
	// WarnAPIVersionsUnreadable: the cluster's API group/versions could not
	// be discovered, so Helm charts rendered without
	// .Capabilities.APIVersions and may have rendered other objects than
	// they do on this cluster.
	WarnAPIVersionsUnreadable WarningCode = "APIVersionsUnreadable"
	// WarnBreakglassUnreadable: the app's reconciler object could not be
	// listed where it lives, so whether breakglass suspended the app (and
	// whether a suspension expired) is not known.
	WarnBreakglassUnreadable WarningCode = "BreakglassUnreadable"
	// WarnAuditLogUnreadable: an audit log input is missing, cut off or
	// holds entries that are no audit events, so some findings may name
	// nobody (attribution none) although someone is on record.
	WarnAuditLogUnreadable WarningCode = "AuditLogUnreadable"
	// WarnGenerateNameSkipped: Git declares an object by
	// metadata.generateName (a hook, a Job per sync): the API server names
	// each copy, so no live object can be matched to it and it is skipped.
	WarnGenerateNameSkipped WarningCode = "GenerateNameSkipped"
	// WarnHookSkipped: Git declares a sync hook (argocd.argoproj.io/hook,
	// or helm.sh/hook in plain manifests): Argo CD creates and deletes it
	// around each sync and leaves it out of the sync status, and so does
	// the scan.
	WarnHookSkipped WarningCode = "HookSkipped"
	// WarnEncryptedNameSkipped: Git generates a Secret from SOPS-encrypted
	// files with a hash suffix on its name (a kustomize secretGenerator):
	// the applier decrypts the files first, so the name is a hash of values
	// only the key reveals, and the Secret is not compared.
	WarnEncryptedNameSkipped WarningCode = "EncryptedNameSkipped"
	// WarnUnstableRender: the app's chart renders differently each time
	// from the same commit (a generated password, a checksum of it), so the
	// fields that differ between two renders were not compared.
	WarnUnstableRender WarningCode = "UnstableRender"
	// WarnLookupUnread: the app's chart looks an object up (Helm's lookup)
	// that its applier reads when it renders (helm-controller, helm
	// install) and the scan could not (forbidden to its identity, or a
	// LIST of Secrets across namespaces, which it never makes): the chart
	// rendered with nothing there, so fields it takes from that object may
	// show as drift.
	WarnLookupUnread WarningCode = "LookupUnread"
	// WarnNotApplied: Git marks the object for kustomize-controller never
	// to apply (kustomize.toolkit.fluxcd.io/ssa: Ignore, or
	// kustomize.toolkit.fluxcd.io/reconcile: disabled), and it is not
	// compared; or to create only (ssa: IfNotPresent), and only whether it
	// exists is compared: what anyone changes in it later stays. Or the
	// object is of a kind Argo CD excludes (argocd-cm's resource.exclusions
	// or resource.inclusions, or one it always excludes): Argo CD drops it
	// from the app's Git, and it is not compared.
	WarnNotApplied WarningCode = "NotApplied"
	// WarnReconcilerSettingsUnreadable: a reconciler's own settings (Argo
	// CD's argocd-cm or argocd-cmd-params-cm) could not be read, so its
	// apps were discovered and compared with the reconciler's defaults: the
	// ignore rules kept there were not imported (fields the reconciler
	// ignores may show as drift), and Applications of namespaces it does
	// not reconcile may have been scanned.
	WarnReconcilerSettingsUnreadable WarningCode = "ReconcilerSettingsUnreadable"
	// WarnNotScanned: a reconciler object (or one of its sources) applies
	// what driftscan cannot render (a config management plugin, a values
	// file the helm-secrets plugin decrypts, a chart or artifact from a
	// Flux Bucket), so it gave no app and nothing it applies was compared.
	WarnNotScanned WarningCode = "NotScanned"
)

// Warning is fidelity the scan lost without failing: something it could
// not read, which made part of the report less precise than it could be. A
// warning is not an error (Report.HasErrors ignores it); `--fail-on
// warning` makes it fail a run.
type Warning struct {
	Code WarningCode `json:"code"`
	// App and Object (kind/namespace/name) name what the warning concerns;
	// both are empty for one that concerns the whole scan.
	App    string `json:"app,omitempty"`
	Object string `json:"object,omitempty"`
	// Message says what could not be read, why, and what it costs.
	Message string `json:"message"`
}

// sortWarnings orders warnings by app, object, code and message, and
// removes repeats.
func sortWarnings(ws []Warning) []Warning {
	sort.SliceStable(ws, func(i, j int) bool {
		a, b := ws[i], ws[j]
		if a.App != b.App {
			return a.App < b.App
		}
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Message < b.Message
	})
	out := ws[:0]
	for i, w := range ws {
		if i > 0 && w == ws[i-1] {
			continue
		}
		out = append(out, w)
	}
	return out
}
