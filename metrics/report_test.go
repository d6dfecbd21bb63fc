package metrics

import (
	"time"

	"github.com/calricon/driftscan/report"
)

// scannedAt is the scan time every test report carries.
var scannedAt = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// sampleReport is a finalized report with two apps, drift by every kind of
// actor, an ignored finding, a Missing and an Error object, two debts, and
// warnings of the scan and of an app.
func sampleReport() *report.Report {
	r := report.New(scannedAt, "prod-eu")
	r.Apps = []report.App{
		{
			Name:  "web",
			Owner: "team-web",
			GitOps: &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", SelfHeal: true, SyncBlockedReason: "SyncWindow",
				SyncBlocked: "the deny sync window \"0 22 * * *\" for 8h (change freeze) of AppProject argocd/web blocks automated syncs until 2026-11-30 06:00 UTC"},
			Objects: []report.Object{
				{Kind: "Deployment", Namespace: "web", Name: "web", Findings: []report.Finding{
					{Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassOperator, Manager: "kube-controller-manager"},
					{Path: ".spec.template.spec.containers[name=\"app\"].image", Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "kubectl-set"},
					{Path: ".spec.template.spec.containers[name=\"istio-proxy\"]", Type: report.TypeAdded, Class: report.ClassWebhook},
					{Path: ".metadata.annotations.note", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-edit"},
				}},
				{Kind: "ConfigMap", Namespace: "web", Name: "web-config", Findings: []report.Finding{
					{Path: ".data.LOG_LEVEL", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"},
					{Path: ".data.FEATURE", Type: report.TypeRemoved, Class: report.ClassHuman, Manager: "kubectl-edit"},
					{Path: ".data.DEBUG", Type: report.TypeAdded, Class: report.ClassHuman, Ignored: true},
				}},
				{Kind: "Service", Namespace: "web", Name: "web"},
				{Kind: "Secret", Namespace: "web", Name: "web-db", Status: report.StatusMissing},
			},
		},
		{
			Name:   "payments",
			Owner:  "team-pay",
			GitOps: &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/payments", SelfHeal: true},
			Objects: []report.Object{
				{Kind: "Deployment", Namespace: "pay", Name: "api", Findings: []report.Finding{
					{Path: ".spec.template.spec.containers[name=\"api\"].env[name=\"X\"]", Type: report.TypeAdded, Class: report.ClassUnknown},
				}},
			},
		},
	}
	r.Debts = []report.Debt{
		{Kind: report.DebtExpired, Owner: "team-web", Rule: report.IgnoreRule{Kind: "ConfigMap", Owner: "team-web", App: "web"}, Matched: 1},
		{Kind: report.DebtUnused, Owner: "", Rule: report.IgnoreRule{Kind: "Deployment", Owner: "platform"}},
		{Kind: report.DebtUnused, Owner: "platform", Rule: report.IgnoreRule{Kind: "Service", Owner: "platform"}},
	}
	r.Warnings = []report.Warning{
		{Code: report.WarnNotScanned, Object: "Application/argocd/vault", Message: `not scanned: config management plugin "avp": driftscan runs no plugin, so nothing it renders is compared`},
		{Code: report.WarnSchemaNotPublished, App: "web", Message: "no OpenAPI schema for example.com/v1"},
		{Code: report.WarnSchemaNotPublished, App: "web", Message: "no OpenAPI schema for example.org/v1"},
	}
	r.Stats = &report.Stats{APIRequests: 42, Throttled: 1, DurationSeconds: 3.25, Cache: &report.CacheStats{InSync: 7, Manifests: 9}}
	r.Finalize()
	return r
}
