package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/report"
)

const withContracts = `apiVersion: driftscan.dev/v1alpha1
kind: ScanConfig
apps:
- {name: web, namespace: prod-web, source: {path: apps/web}}
notify:
  slack: {tokenEnv: SLACK_BOT_TOKEN}
contracts:
- name: production
  namespaces: ["prod-*"]
  allow:
  - {class: operator}
  - {class: human, during: breakglass}
  selfHeal: forbidden
`

func TestContractsAreReadAndPageOnlyForViolationsByDefault(t *testing.T) {
	cfg, err := Parse([]byte(withContracts))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contracts) != 1 || cfg.Contracts[0].Name != "production" || cfg.Contracts[0].Line != 8 {
		t.Fatalf("contracts: %+v", cfg.Contracts)
	}
	if diff := cmp.Diff([]report.Class{"violation"}, cfg.Notify.Route.PagerDuty); diff != "" {
		t.Errorf("default PagerDuty route with contracts (-want +got):\n%s", diff)
	}
	// A route the config writes is kept, and may name violation.
	explicit := strings.Replace(withContracts, "  slack: {tokenEnv: SLACK_BOT_TOKEN}\n", "  slack: {tokenEnv: SLACK_BOT_TOKEN}\n  route: {pagerduty: [violation, unknown]}\n", 1)
	if cfg, err = Parse([]byte(explicit)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]report.Class{"violation", "unknown"}, cfg.Notify.Route.PagerDuty); diff != "" {
		t.Errorf("explicit route (-want +got):\n%s", diff)
	}
}

func TestContractErrorsNameTheContractAndLine(t *testing.T) {
	bad := strings.Replace(withContracts, "{class: operator}", "{class: operators}", 1)
	_, err := Parse([]byte(bad))
	if err == nil || !strings.Contains(err.Error(), `contracts: contract "production" (line 8): allow[0] (line 11): unknown class "operators"`) {
		t.Fatalf("got %v", err)
	}
	bad = strings.Replace(withContracts, "  selfHeal: forbidden\n", "  selfheal: forbidden\n", 1)
	_, err = Parse([]byte(bad))
	if err == nil || !strings.Contains(err.Error(), `line 13: contract "production": field selfheal not found`) {
		t.Fatalf("got %v", err)
	}
}
