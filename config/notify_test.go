package config

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

func TestNotifyReadsTheIssueExample(t *testing.T) {
	var doc struct {
		Owners Owners `yaml:"owners"`
		Notify Notify `yaml:"notify"`
	}
	dec := yaml.NewDecoder(strings.NewReader(issueYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	want := Notify{
		Slack: Slack{TokenEnv: "SLACK_BOT_TOKEN"},
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
	if err := ValidateNotify(doc.Notify, doc.Owners); err != nil {
		t.Errorf("ValidateNotify: %v", err)
	}
}

func TestNotifyRejectsASecretInline(t *testing.T) {
	dec := yaml.NewDecoder(bytes.NewReader([]byte("slack: {token: xoxb-123}\n")))
	dec.KnownFields(true)
	var c Notify
	if err := dec.Decode(&c); err == nil || !strings.Contains(err.Error(), "field token not found") {
		t.Errorf("decode = %v, want the unknown field token refused", err)
	}
}

func TestValidateNotify(t *testing.T) {
	tests := []struct {
		name   string
		c      Notify
		owners Owners
		want   string
	}{
		{"a token and a webhook at once", Notify{Slack: Slack{TokenEnv: "A", WebhookURLFile: "/b"}}, nil, "a bot token or an incoming webhook, not both"},
		{"a token from two places", Notify{Slack: Slack{TokenEnv: "A", TokenFile: "/b"}}, nil, "tokenEnv or tokenFile, not both"},
		{"an unknown class", Notify{Route: Route{PagerDuty: []report.Class{"humans"}}}, nil, `route.pagerduty: unknown class "humans"`},
		{"a bad severity", Notify{Tiers: []Tier{{Namespaces: []string{"prod"}, PagerDutySeverity: "high"}}}, nil, `pagerdutySeverity "high"`},
		{"a bad glob", Notify{Tiers: []Tier{{Namespaces: []string{"prod-["}, PagerDutySeverity: "info"}}}, nil, `pattern "prod-["`},
		{"a tier that matches nothing", Notify{Tiers: []Tier{{PagerDutySeverity: "info"}}}, nil, "set namespaces or apps"},
		{"an API URL without its slash", Notify{Slack: Slack{TokenEnv: "A", APIURL: "https://proxy/api"}}, nil, "must end with a slash"},
		{"a slack owner without slack", Notify{}, Owners{"a": {Slack: &SlackRoute{Channel: "#a"}}}, "names no token or webhook"},
		{"a token owner without channel", Notify{Slack: Slack{TokenEnv: "T"}}, Owners{"a": {Slack: &SlackRoute{Mention: "<@U1>"}}}, "a bot token needs a channel"},
		{"a routing key from two places", Notify{}, Owners{"a": {PagerDuty: &PagerDutyRoute{RoutingKeyEnv: "A", RoutingKeyFile: "/b"}}}, "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateNotify(tt.c, tt.owners)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ValidateNotify = %v, want an error saying %q", err, tt.want)
			}
		})
	}
	webhookOnly := Notify{Slack: Slack{WebhookURLEnv: "W"}}
	if err := ValidateNotify(webhookOnly, Owners{"a": {Slack: &SlackRoute{Mention: "<@U1>"}}}); err != nil {
		t.Errorf("a webhook with a mention-only owner: %v", err)
	}
}
