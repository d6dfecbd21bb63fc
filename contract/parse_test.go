package contract

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/report"
)

// load parses a document with a contracts: list and validates it, as the
// scan config does.
func load(t testing.TB, doc string) ([]Contract, error) {
	t.Helper()
	var cfg struct {
		Contracts []Contract `yaml:"contracts"`
	}
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, err
	}
	return cfg.Contracts, Validate(cfg.Contracts)
}

// yamlDecode decodes strictly, as the scan config does, without validating.
func yamlDecode(doc string, v any) error {
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func example(t testing.TB) []Contract {
	t.Helper()
	data, err := os.ReadFile("testdata/contracts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := load(t, string(data))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestParseKeepsEveryFieldAndTheLines(t *testing.T) {
	cs := example(t)
	prod := cs[1]
	want := Contract{
		Name: "production", Namespaces: []string{"prod-*"}, Owner: "platform-team", SelfHeal: SelfHealForbidden, Line: 9,
		Allow: []Rule{
			{Class: report.ClassOperator, Line: 13},
			{Class: report.ClassWebhook, Webhooks: []string{"istio-sidecar-injector"}, Line: 14},
			{Class: report.ClassPipeline, Managers: []string{"kubectl-set", "argo-rollouts*"}, Users: []string{"system:serviceaccount:ci:deployer"}, Line: 15},
			{Class: report.ClassHuman, During: DuringBreakglass, Line: 16},
		},
	}
	if diff := cmp.Diff(want, prod); diff != "" {
		t.Errorf("production (-want +got):\n%s", diff)
	}
	if got := cs[2].NamespaceSelector.MatchLabels["env"]; got != "staging" {
		t.Errorf("staging selector: got %q", got)
	}
}

func TestParseErrorsNameTheContractAndTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"an unknown field", `
contracts:
- name: production
  namespaces: [prod-*]
  alow: [{class: human}]
`, []string{"line 5", `contract "production"`, "field alow not found"}},
		{"an unknown field in a rule", `
contracts:
- name: production
  namespaces: [prod-*]
  allow:
  - {class: human, user: [alice]}
`, []string{"line 6", "allow rule", "field user not found"}},
		{"an unknown class", `
contracts:
- name: production
  namespaces: [prod-*]
  allow:
  - {class: operator}
  - {class: humans}
`, []string{`contract "production" (line 3)`, "allow[1] (line 7)", `unknown class "humans"`}},
		{"no namespaces", `
contracts:
- name: staging
  allow: [{class: "*"}]
`, []string{`contract "staging" (line 3)`, "set namespaces (globs) or a namespaceSelector"}},
		{"a during that is not breakglass", `
contracts:
- name: production
  namespaces: [prod-*]
  allow: [{class: human, during: weekends}]
`, []string{`contract "production" (line 3)`, `during "weekends": want breakglass`}},
		{"a selfHeal that is neither", `
contracts:
- name: production
  namespaces: [prod-*]
  allow: [{class: operator}]
  selfHeal: sometimes
`, []string{`selfHeal "sometimes": want forbidden or allowed`}},
		{"a name twice", `
contracts:
- {name: prod, namespaces: [a], allow: [{class: operator}]}
- {name: prod, namespaces: [b], allow: [{class: operator}]}
`, []string{`contract "prod" (line 4): defined twice`}},
		{"a character class in a glob", `
contracts:
- {name: prod, namespaces: ["prod-[ab]"], allow: [{class: operator}]}
`, []string{`contract "prod" (line 3)`, "only * and ? are wildcards"}},
		{"no rules", `
contracts:
- {name: prod, namespaces: [prod-*]}
`, []string{"allow is empty"}},
		{"webhooks on a class that is not webhook", `
contracts:
- {name: prod, namespaces: [prod-*], allow: [{class: human, webhooks: [istio]}]}
`, []string{"webhooks are named only for class webhook"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.doc)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}
