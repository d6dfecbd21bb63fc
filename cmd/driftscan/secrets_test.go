package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// TestNoSecretValueLeavesInAnyOutput scans a Secret, a ConfigMap a
// redaction rule covers and an env var that holds a token, all changed live,
// and looks for their values in every output format, the notifications that
// would be sent and the debug log.
func TestNoSecretValueLeavesInAnyOutput(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir, _ := filepath.Abs("../../fixtures/apps/secrets")
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", ns, mf.Object)
	}
	env.Patch(t, "kubectl-edit", cluster.Secret, ns, "db", types.MergePatchType, `{"stringData":{"password":"live-secret-correcthorse","added":"live-secret-added-key"}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "legacy", types.MergePatchType, `{"data":{"password":"live-cm-password-tr0ub4dor"}}`)
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "api", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"API_TOKEN","value":"ghp_liveTokenLooksReal9876543210fedcba"}]}]}}}}`)
	secrets := []string{"hunter2", "correcthorse", "live-secret-added-key", "s3cr3t", "tr0ub4dor", "gitTokenLooksReal", "liveTokenLooksReal",
		"slack-token-xoxb-123", "pd-routing-key-secret"}

	cfgPath := filepath.Join(t.TempDir(), "scan.yaml")
	cfg := fmt.Sprintf(`apiVersion: driftscan.dev/v1alpha1
kind: ScanConfig
appliers: [argocd-controller]
apps:
- {name: secrets, owner: team-sec, namespace: %s, source: {path: %s}}
redact: ['^\.data\.password$', 'env\[name="API_TOKEN"\]']
owners:
  team-sec:
    slack: {channel: "#sec"}
    pagerduty: {routingKeyEnv: PD_KEY}
notify:
  slack: {tokenEnv: SLACK_TOKEN}
`, ns, dir)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLACK_TOKEN", "slack-token-xoxb-123")
	t.Setenv("PD_KEY", "pd-routing-key-secret")
	out := t.TempDir()
	args := []string{"scan", "--kubeconfig", env.Kubeconfig, "--config", cfgPath, "--dry-run-notify", "--log-level", "debug", "--wide", "-o", "table"}
	for _, f := range report.Formats {
		args = append(args, "-o", string(f)+"="+filepath.Join(out, "report."+string(f)))
	}
	res := runCLI(t, args...)
	if res.code != 1 {
		t.Fatalf("exit %d\n%s", res.code, res.err)
	}
	texts := map[string]string{"stdout (table and dry-run notifications)": res.out, "stderr (debug log)": res.err}
	for _, f := range report.Formats {
		data, err := os.ReadFile(filepath.Join(out, "report."+string(f)))
		if err != nil {
			t.Fatal(err)
		}
		texts[string(f)] = string(data)
	}
	for where, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains the secret %q", where, s)
			}
		}
	}
	// The findings are there, masked: only whether the values differ shows.
	for _, want := range []string{".data.password", ".data.added", `env[name="API_TOKEN"].value`, "*** (differs)"} {
		if !strings.Contains(res.out, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	if !strings.Contains(res.out, "#sec") {
		t.Errorf("the dry run does not show the notification it would send:\n%s", res.out)
	}
}
