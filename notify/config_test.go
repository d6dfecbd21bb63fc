package notify

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/report"
)

// issueYAML is the configuration the notification issue gives.
const issueYAML = `
owners:
  team-web:
    slack: {channel: "#web-oncall", mention: "<!subteam^S0123>"}
    pagerduty: {routingKeyEnv: PD_KEY_WEB}
notify:
  slack: {tokenEnv: SLACK_BOT_TOKEN}
  pagerduty: {eventsURL: ""}
  route:
    slack: [webhook, operator, pipeline, human, unknown]
    pagerduty: [human, unknown]
  tiers:
  - namespaces: [prod-*]
    pagerdutySeverity: critical
`

func TestConfigReadsTheIssueExample(t *testing.T) {
	var doc struct {
		Owners Owners `yaml:"owners"`
		Notify Config `yaml:"notify"`
	}
	dec := yaml.NewDecoder(strings.NewReader(issueYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	want := Config{
		Slack: SlackConfig{TokenEnv: "SLACK_BOT_TOKEN"},
		Route: DefaultRoute(),
		Tiers: []Tier{{Namespaces: []string{"prod-*"}, PagerDutySeverity: "critical"}},
	}
	if diff := cmp.Diff(want, doc.Notify); diff != "" {
		t.Errorf("notify (-want +got):\n%s", diff)
	}
	wantOwners := Owners{"team-web": {
		Slack:     &SlackRoute{Channel: "#web-oncall", Mention: "<!subteam^S0123>"},
		PagerDuty: &PagerDutyRoute{RoutingKeyEnv: "PD_KEY_WEB"},
	}}
	if diff := cmp.Diff(wantOwners, doc.Owners); diff != "" {
		t.Errorf("owners (-want +got):\n%s", diff)
	}
	if err := (Options{Config: doc.Notify, Owners: doc.Owners}).Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestConfigRejectsASecretInline(t *testing.T) {
	dec := yaml.NewDecoder(bytes.NewReader([]byte("slack: {token: xoxb-123}\n")))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err == nil || !strings.Contains(err.Error(), "field token not found") {
		t.Errorf("decode = %v, want the unknown field token refused", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"a token and a webhook at once", Options{Config: Config{Slack: SlackConfig{TokenEnv: "A", WebhookURLFile: "/b"}}}, "a bot token or an incoming webhook, not both"},
		{"a token from two places", Options{Config: Config{Slack: SlackConfig{TokenEnv: "A", TokenFile: "/b"}}}, "tokenEnv or tokenFile, not both"},
		{"an unknown class", Options{Config: Config{Route: Route{PagerDuty: []report.Class{"humans"}}}}, `route.pagerduty: unknown class "humans"`},
		{"a bad severity", Options{Config: Config{Tiers: []Tier{{Namespaces: []string{"prod"}, PagerDutySeverity: "high"}}}}, `pagerdutySeverity "high"`},
		{"a bad glob", Options{Config: Config{Tiers: []Tier{{Namespaces: []string{"prod-["}, PagerDutySeverity: "info"}}}}, `pattern "prod-["`},
		{"a tier that matches nothing", Options{Config: Config{Tiers: []Tier{{PagerDutySeverity: "info"}}}}, "set namespaces or apps"},
		{"an API URL without its slash", Options{Config: Config{Slack: SlackConfig{TokenEnv: "A", APIURL: "https://proxy/api"}}}, "must end with a slash"},
		{"a slack owner without slack", Options{Owners: Owners{"a": {Slack: &SlackRoute{Channel: "#a"}}}}, "names no token or webhook"},
		{"a token owner without channel", Options{Config: Config{Slack: SlackConfig{TokenEnv: "T"}}, Owners: Owners{"a": {Slack: &SlackRoute{Mention: "<@U1>"}}}}, "a bot token needs a channel"},
		{"a routing key from two places", Options{Owners: Owners{"a": {PagerDuty: &PagerDutyRoute{RoutingKeyEnv: "A", RoutingKeyFile: "/b"}}}}, "not both"},
		{"a negative renotify", Options{RenotifyAfter: -1}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error saying %q", err, tt.want)
			}
		})
	}
	webhookOnly := Options{Config: Config{Slack: SlackConfig{WebhookURLEnv: "W"}}, Owners: Owners{"a": {Slack: &SlackRoute{Mention: "<@U1>"}}}}
	if err := webhookOnly.Validate(); err != nil {
		t.Errorf("a webhook with a mention-only owner: %v", err)
	}
}

func TestSecretsFromFiles(t *testing.T) {
	s := &secrets{
		getenv: func(string) string { return "" },
		readFile: func(p string) ([]byte, error) {
			if p == "/run/secrets/pd" {
				return []byte("  R0UT1NG\n"), nil
			}
			return nil, &fileError{p}
		},
	}
	v, err := s.read("routing key", secretRef{File: "/run/secrets/pd"})
	if err != nil || v != "R0UT1NG" {
		t.Errorf("read = %q, %v; want the file's trimmed content", v, err)
	}
	if _, err := s.read("token", secretRef{Env: "SLACK_BOT_TOKEN"}); err == nil || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN is empty") {
		t.Errorf("unset env: %v", err)
	}
	if got := s.mask("key R0UT1NG here"); got != "key *** here" {
		t.Errorf("mask = %q", got)
	}
}

type fileError struct{ path string }

func (e *fileError) Error() string { return "open " + e.path + ": no such file" }
