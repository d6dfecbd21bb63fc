package notify

import (
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// Secrets the tests hand to Notify. No request body kept in a golden file,
// no log line, no dry-run output and no error may contain them.
var testSecrets = map[string]string{
	"SLACK_BOT_TOKEN":   "xoxb-1111-2222-s3cr3tT0ken",
	"SLACK_WEBHOOK_URL": "", // set per test to the fake's URL with a secret path
	"PD_KEY_WEB":        "R0UT1NGKEYweb0000000000000000000",
	"PD_KEY_BILLING":    "R0UT1NGKEYbilling000000000000000",
}

// scannedAt is when the test scans ran; testNow is just after.
var (
	scannedAt = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	testNow   = scannedAt.Add(30 * time.Second)
)

func testOwners() config.Owners {
	return config.Owners{
		"team-web": {
			Slack:     &config.SlackRoute{Channel: "#web-oncall", Mention: "<!subteam^S0123>"},
			PagerDuty: &config.PagerDutyRoute{RoutingKeyEnv: "PD_KEY_WEB"},
		},
		"team-billing": {
			Slack:     &config.SlackRoute{Channel: "#billing"},
			PagerDuty: &config.PagerDutyRoute{RoutingKeyEnv: "PD_KEY_BILLING"},
		},
	}
}

func testConfig() config.Notify {
	return config.Notify{
		Slack: config.Slack{TokenEnv: "SLACK_BOT_TOKEN"},
		Tiers: []config.Tier{{Namespaces: []string{"prod-*"}, PagerDutySeverity: "critical"}},
	}
}

// Findings of the test report, by name, so scenarios can change one.
func imageFinding(live string) report.Finding {
	return report.Finding{
		Path: `.spec.template.spec.containers[name="web"].image`, Type: report.TypeChanged, Class: report.ClassHuman,
		Manager: "kubectl-set", Operation: "Update", Time: "2026-07-01T09:00:00Z",
		Git: "ghcr.io/acme/web:1.4.0", Live: live,
		Attribution: &report.Attribution{Confidence: report.ConfidenceExact, User: "alice@example.com", Groups: []string{"sre"},
			UserAgent: "kubectl/v1.32.3 (linux/amd64) kubernetes/32cc146", SourceIPs: []string{"10.0.4.17"},
			AuditID: "7a1f0c52-2f3e-4c1e-9a57-1d2b3c4d5e6f", Verb: "patch", FieldManager: "kubectl-set", Time: "2026-07-01T09:00:00.109800Z"},
	}
}

func replicasFinding() report.Finding {
	return report.Finding{
		Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassOperator,
		Manager: "kube-controller-manager", Operation: "Update", Subresource: "scale", Time: "2026-07-01T11:58:30Z",
		Git: "2", Live: "5", Hint: "HorizontalPodAutoscaler prod-web/web scales this Deployment: leave spec.replicas out of Git",
	}
}

func sidecarFinding() report.Finding {
	return report.Finding{
		Path: `.spec.template.spec.containers[name="istio-proxy"]`, Type: report.TypeAdded, Class: report.ClassWebhook,
		Live: `{"image":"docker.io/istio/proxyv2:1.27.0","name":"istio-proxy"}`, Actor: "istio-sidecar-injector",
	}
}

func ignoredFinding() report.Finding {
	return report.Finding{
		Path: ".metadata.annotations.deploy-note", Type: report.TypeAdded, Class: report.ClassHuman,
		Manager: "kubectl-annotate", Operation: "Update", Time: "2026-06-30T08:00:00Z", Live: "hotfix by alice",
		Ignored:    true,
		IgnoreRule: &report.IgnoreRule{Kind: "Deployment", JSONPointers: []string{"/metadata/annotations/deploy-note"}, Owner: "team-web", Reason: "on-call notes", Expires: "2026-12-31"},
	}
}

// secretFinding is a Secret's value as the scanner reports it: masked.
func secretFinding() report.Finding {
	return report.Finding{
		Path: ".data.password", Type: report.TypeChanged, Class: report.ClassHuman,
		Manager: "kubectl-edit", Operation: "Update", Time: "2026-06-01T12:00:00Z",
		Git: "***", Live: "*** (differs)",
	}
}

func flagsFinding() report.Finding {
	return report.Finding{Path: ".data.beta", Type: report.TypeChanged, Class: report.ClassUnknown, Git: "false", Live: "true"}
}

func envFinding() report.Finding {
	return report.Finding{
		Path: `.spec.template.spec.containers[name="api"].env[name="DEBUG"]`, Type: report.TypeAdded, Class: report.ClassPipeline,
		Manager: "deploy-pipeline", Operation: "Update", Time: "2026-07-01T10:00:00Z", Live: `{"name":"DEBUG","value":"1"}`,
	}
}

// testReport is a scan of cluster prod-eu-1 with every class, an ignored
// finding, a masked Secret, a Missing object, an app whose render failed,
// an app whose owner has no route, and an expired ignore rule.
func testReport() *report.Report {
	r := report.New(scannedAt, "prod-eu-1")
	r.Apps = []report.App{
		{
			Name: "web", Owner: "team-web",
			Objects: []report.Object{
				{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod-web", Name: "web",
					Findings: []report.Finding{imageFinding("ghcr.io/acme/web:1.4.1-hotfix"), replicasFinding(), sidecarFinding(), ignoredFinding()}},
				{APIVersion: "v1", Kind: "Secret", Namespace: "prod-web", Name: "web-db",
					Findings: []report.Finding{secretFinding()}},
				{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod-web", Name: "web-config"},
			},
		},
		{
			Name: "billing", Owner: "team-billing",
			Objects: []report.Object{
				{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "staging-billing", Name: "billing-api",
					Findings: []report.Finding{envFinding()}},
				{APIVersion: "v1", Kind: "ConfigMap", Namespace: "staging-billing", Name: "billing-flags",
					Findings: []report.Finding{flagsFinding()}},
				{APIVersion: "v1", Kind: "Service", Namespace: "staging-billing", Name: "billing-legacy-ingress", Status: report.StatusMissing},
			},
		},
		{
			Name: "payments", Owner: "team-web",
			Error: "render helm chart apps/payments: template: payments/templates/deployment.yaml:14:20: nil pointer evaluating interface {}.tag",
		},
		{
			Name: "search", Owner: "team-search",
			Objects: []report.Object{
				{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "search", Name: "search",
					Findings: []report.Finding{{Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-scale", Git: "3", Live: "1"}}},
			},
		},
	}
	r.Debts = []report.Debt{{
		Kind: report.DebtExpired, Owner: "team-web", Matched: 1,
		Rule: report.IgnoreRule{Kind: "Deployment", Namespace: "prod-web", JSONPointers: []string{"/spec/template/metadata/annotations"}, Owner: "team-web", Reason: "rollout restarts", Expires: "2026-06-01"},
	}}
	r.Finalize()
	return r
}

// withObject returns r with f applied to the object named name of app.
func withObject(r *report.Report, app, name string, f func(*report.Object)) *report.Report {
	for ai := range r.Apps {
		if r.Apps[ai].Name != app {
			continue
		}
		for oi := range r.Apps[ai].Objects {
			if r.Apps[ai].Objects[oi].Name == name {
				f(&r.Apps[ai].Objects[oi])
			}
		}
	}
	r.Finalize()
	return r
}
