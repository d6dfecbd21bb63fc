package contract

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	yes, no := true, false
	overlapping := `
contracts:
- name: production
  namespaces: ["prod-*"]
  allow: [{class: webhook, webhooks: [istio-sidecar-injector, vault-*]}, {class: pipeline, users: [ci]}]
- name: prod-eu
  namespaces: ["*-eu"]
  allow: [{class: operator}]
- name: labelled
  namespaceSelector: {matchLabels: {tier: prod}}
  allow: [{class: pipeline, users: [ci]}]
`
	for _, tc := range []struct {
		name  string
		doc   string
		facts Facts
		want  []string
	}{
		{"overlapping globs, a namespace two contracts cover, missing webhooks, trust in field managers, uncovered namespaces",
			overlapping,
			Facts{
				Namespaces: map[string]map[string]string{"prod-eu": {}, "prod-us": {"tier": "prod"}, "shop": {}, "kube-system": {}},
				Webhooks:   []string{"istio-sidecar-injector"},
			},
			[]string{
				`error: contract "prod-eu" (line 6): namespaces *-eu overlaps prod-* of contract "production": a namespace both match gets the first contract only`,
				"error: namespace prod-eu is covered by contracts production, prod-eu: only the first applies",
				"error: namespace prod-us is covered by contracts production, labelled: only the first applies",
				`error: contract "production" (line 5): allow[0]: no MutatingWebhookConfiguration vault-* in the cluster (there are: istio-sidecar-injector)`,
				`warning: contract "prod-eu" (line 6): allow[0] name no users or groups: at admission they trust the field manager the client names, which anyone can choose`,
				"warning: no contract covers namespace shop: its findings are reported as uncovered",
			}},
		{"an unknown class comes first, with its line",
			"contracts:\n- {name: prod, namespaces: [prod-*], allow: [{class: humans, users: [a]}]}\n", Facts{},
			[]string{`error: contract "prod" (line 2): allow[0] (line 2): unknown class "humans" (want one of [webhook operator pipeline human unknown] or "*")`}},
		{"installed policies without their break-glass ConfigMap enforce nothing",
			"contracts:\n- {name: prod, namespaces: [prod-*], allow: [{class: human, users: [a]}]}\n",
			Facts{Policies: []string{"driftscan-contract-prod"}, Params: &no, ParamsRef: DefaultParams},
			[]string{"error: policies driftscan-contract-prod are installed but their break-glass ConfigMap driftscan/driftscan-breakglass does not exist: they enforce nothing until it does (apply the output of `driftscan contract admission` again)"}},
		{"a clean contract has no problem", "contracts:\n- {name: prod, namespaces: [prod-*], allow: [{class: human, users: [a]}]}\n",
			Facts{Policies: []string{"driftscan-contract-prod"}, Params: &yes, Namespaces: map[string]map[string]string{"prod-a": {}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cs []Contract
			var cfg struct {
				Contracts []Contract `yaml:"contracts"`
			}
			if err := yamlDecode(tc.doc, &cfg); err != nil {
				t.Fatal(err)
			}
			cs = cfg.Contracts
			var got []string
			for _, p := range Check(cs, tc.facts) {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if HasErrors(Check(cs, tc.facts)) != (len(tc.want) > 0 && strings.HasPrefix(tc.want[0], "error")) {
				t.Errorf("HasErrors disagrees with the problems")
			}
		})
	}
}
