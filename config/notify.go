package config

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/calricon/driftscan/report"
)

// Owners maps an owner name (report.App.Owner) to where that owner is told.
//
//	owners:
//	  team-web:
//	    slack: {channel: "#web-oncall", mention: "<!subteam^S0123>"}
//	    pagerduty: {routingKeyEnv: PD_KEY_WEB}
type Owners map[string]Owner

// Owner is where one owner is told; either route may be nil.
type Owner struct {
	Slack     *SlackRoute     `yaml:"slack,omitempty" json:"slack,omitempty"`
	PagerDuty *PagerDutyRoute `yaml:"pagerduty,omitempty" json:"pagerduty,omitempty"`
	// PullRequest is what the pull requests of the owner's backports get.
	PullRequest *PullRequestRoute `yaml:"pullRequest,omitempty" json:"pullRequest,omitempty"`
}

// SlackRoute is an owner's Slack channel and who to mention there.
type SlackRoute struct {
	// Channel is a channel name ("#web-oncall") or ID. Required with a bot
	// token; an incoming webhook posts to its own channel and ignores it.
	Channel string `yaml:"channel" json:"channel"`
	// Mention is put in front of every message as written, for example
	// "<!subteam^S0123>" or "<@U0123>".
	Mention string `yaml:"mention,omitempty" json:"mention,omitempty"`
}

// PagerDutyRoute names where an owner's Events API v2 routing key is: an
// environment variable or a file, never the key itself.
type PagerDutyRoute struct {
	RoutingKeyEnv  string `yaml:"routingKeyEnv,omitempty" json:"routingKeyEnv,omitempty"`
	RoutingKeyFile string `yaml:"routingKeyFile,omitempty" json:"routingKeyFile,omitempty"`
}

// Notify is the notify section of the scan configuration, read by package
// notify.
//
//	notify:
//	  slack: {tokenEnv: SLACK_BOT_TOKEN}
//	  pagerduty: {eventsURL: ""}
//	  route:
//	    slack: [webhook, operator, pipeline, human, unknown]
//	    pagerduty: [human, unknown]
//	  tiers:
//	  - namespaces: [prod-*]
//	    pagerdutySeverity: critical
type Notify struct {
	Slack     Slack     `yaml:"slack" json:"slack"`
	PagerDuty PagerDuty `yaml:"pagerduty" json:"pagerduty"`
	Route     Route     `yaml:"route" json:"route"`
	// Tiers set the PagerDuty severity by namespace or app; the first tier
	// that matches wins, and DefaultSeverity applies when none does.
	Tiers []Tier `yaml:"tiers,omitempty" json:"tiers,omitempty"`
}

// Slack says how to reach Slack: a bot token (chat.postMessage to each
// owner's channel) or an incoming webhook URL, each from an environment
// variable or a file. When none is set, Slack is off.
type Slack struct {
	TokenEnv       string `yaml:"tokenEnv,omitempty" json:"tokenEnv,omitempty"`
	TokenFile      string `yaml:"tokenFile,omitempty" json:"tokenFile,omitempty"`
	WebhookURLEnv  string `yaml:"webhookURLEnv,omitempty" json:"webhookURLEnv,omitempty"`
	WebhookURLFile string `yaml:"webhookURLFile,omitempty" json:"webhookURLFile,omitempty"`
	// APIURL is the Web API base for a proxy or Enterprise Grid; default
	// DefaultSlackAPIURL. It must end with a slash.
	APIURL string `yaml:"apiURL,omitempty" json:"apiURL,omitempty"`
}

// PagerDuty says where the Events API v2 is.
type PagerDuty struct {
	// EventsURL is the Events API v2 base ("https://events.eu.pagerduty.com")
	// or its enqueue URL; default DefaultEventsURL.
	EventsURL string `yaml:"eventsURL,omitempty" json:"eventsURL,omitempty"`
	// IncludeValues puts each finding's Git and live values into the
	// event's custom_details. Off by default: PagerDuty keeps events for
	// everyone with access to the service, and a value masked nowhere else
	// (a ConfigMap's connection string) would sit there too. Path, class,
	// manager and hint are always sent.
	IncludeValues bool `yaml:"includeValues,omitempty" json:"includeValues,omitempty"`
}

// Route says which classes of drift go to which channel. A nil list means
// the default (DefaultRoute); an empty list sends nothing there. The entry
// "violation" (report.FailOnViolation) sends every finding whose contract
// verdict is violation, whatever its class.
type Route struct {
	Slack     []report.Class `yaml:"slack" json:"slack"`
	PagerDuty []report.Class `yaml:"pagerduty" json:"pagerduty"`
}

// Tier picks a PagerDuty severity for objects in matching namespaces or
// apps. Patterns are path.Match globs ("prod-*"). A tier with both lists
// needs both to match; an empty list matches anything.
type Tier struct {
	Namespaces        []string `yaml:"namespaces,omitempty" json:"namespaces,omitempty"`
	Apps              []string `yaml:"apps,omitempty" json:"apps,omitempty"`
	PagerDutySeverity string   `yaml:"pagerdutySeverity" json:"pagerdutySeverity"`
}

// Defaults.
const (
	DefaultSlackAPIURL = "https://slack.com/api/"
	DefaultEventsURL   = "https://events.pagerduty.com"
	DefaultSeverity    = "error"
)

// Severities are the values the Events API v2 accepts for payload.severity.
// https://developer.pagerduty.com/docs/events-api-v2/trigger-events/
var Severities = []string{"critical", "error", "warning", "info"}

// DefaultRoute sends every class to Slack and pages only for drift nobody
// sanctioned.
func DefaultRoute() Route {
	return Route{
		Slack:     slices.Clone(report.Classes),
		PagerDuty: []report.Class{report.ClassHuman, report.ClassUnknown},
	}
}

// ContractRoute is the default PagerDuty route once the config has
// contracts: page only for violations.
func ContractRoute() []report.Class { return []report.Class{routeViolation} }

// routeViolation is the route entry for contract violations.
const routeViolation = report.Class(report.FailOnViolation)

// Sends reports whether finding f goes to Slack (pagerDuty false) or to
// PagerDuty, by its class or, for the entry "violation", its contract
// verdict, with the defaults applied to a nil list.
func (r Route) Sends(pagerDuty bool, f report.Finding) bool {
	def := DefaultRoute()
	list, fallback := r.Slack, def.Slack
	if pagerDuty {
		list, fallback = r.PagerDuty, def.PagerDuty
	}
	if list == nil {
		list = fallback
	}
	if slices.Contains(list, f.Class) {
		return true
	}
	return f.Contract != nil && f.Contract.Verdict == report.VerdictViolation && slices.Contains(list, routeViolation)
}

// SlackMode is how Slack is reached.
type SlackMode string

const (
	SlackOff     SlackMode = "off"
	SlackToken   SlackMode = "token"
	SlackWebhook SlackMode = "webhook"
)

// Mode is how c reaches Slack: a bot token wins over a webhook.
func (c Slack) Mode() SlackMode {
	switch {
	case c.TokenEnv != "" || c.TokenFile != "":
		return SlackToken
	case c.WebhookURLEnv != "" || c.WebhookURLFile != "":
		return SlackWebhook
	}
	return SlackOff
}

// Severity is the PagerDuty severity for an object of app in namespace ns.
func (c Notify) Severity(app, ns string) string {
	for _, t := range c.Tiers {
		if (len(t.Namespaces) == 0 || matchAny(t.Namespaces, ns)) && (len(t.Apps) == 0 || matchAny(t.Apps, app)) {
			return t.PagerDutySeverity
		}
	}
	return DefaultSeverity
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// Validate checks the notify section on its own; it reads no secret.
func (c Notify) Validate() error {
	var errs []error
	s := c.Slack
	if s.TokenEnv != "" && s.TokenFile != "" {
		errs = append(errs, errors.New("slack: set tokenEnv or tokenFile, not both"))
	}
	if s.WebhookURLEnv != "" && s.WebhookURLFile != "" {
		errs = append(errs, errors.New("slack: set webhookURLEnv or webhookURLFile, not both"))
	}
	if (s.TokenEnv != "" || s.TokenFile != "") && (s.WebhookURLEnv != "" || s.WebhookURLFile != "") {
		errs = append(errs, errors.New("slack: set a bot token or an incoming webhook, not both"))
	}
	if s.APIURL != "" && s.APIURL[len(s.APIURL)-1] != '/' {
		errs = append(errs, fmt.Errorf("slack: apiURL %q must end with a slash", s.APIURL))
	}
	for _, list := range []struct {
		name    string
		classes []report.Class
	}{{"route.slack", c.Route.Slack}, {"route.pagerduty", c.Route.PagerDuty}} {
		for _, cl := range list.classes {
			if !slices.Contains(report.Classes, cl) && cl != routeViolation {
				errs = append(errs, fmt.Errorf("%s: unknown class %q (want one of %v, or %s)", list.name, cl, report.Classes, routeViolation))
			}
		}
	}
	for i, t := range c.Tiers {
		if len(t.Namespaces) == 0 && len(t.Apps) == 0 {
			errs = append(errs, fmt.Errorf("tiers[%d]: set namespaces or apps", i))
		}
		if !slices.Contains(Severities, t.PagerDutySeverity) {
			errs = append(errs, fmt.Errorf("tiers[%d]: pagerdutySeverity %q is not one of %v", i, t.PagerDutySeverity, Severities))
		}
		for _, p := range append(slices.Clone(t.Namespaces), t.Apps...) {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("tiers[%d]: pattern %q: %w", i, p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Validate checks every owner's routes; it reads no secret.
func (o Owners) Validate() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(o)) {
		ow := o[name]
		if ow.PagerDuty != nil {
			p := ow.PagerDuty
			switch {
			case p.RoutingKeyEnv == "" && p.RoutingKeyFile == "":
				errs = append(errs, fmt.Errorf("owner %q: pagerduty: set routingKeyEnv or routingKeyFile", name))
			case p.RoutingKeyEnv != "" && p.RoutingKeyFile != "":
				errs = append(errs, fmt.Errorf("owner %q: pagerduty: set routingKeyEnv or routingKeyFile, not both", name))
			}
		}
		if ow.Slack != nil && ow.Slack.Channel == "" && ow.Slack.Mention == "" {
			errs = append(errs, fmt.Errorf("owner %q: slack: set a channel", name))
		}
	}
	return errors.Join(errs...)
}

// ValidateNotify checks the notify section, the owners, and that they fit
// together; it reads no secret.
func ValidateNotify(c Notify, owners Owners) error {
	errs := []error{c.Validate(), owners.Validate()}
	mode := c.Slack.Mode()
	for _, name := range slices.Sorted(maps.Keys(owners)) {
		s := owners[name].Slack
		switch {
		case s == nil:
		case mode == SlackOff:
			errs = append(errs, fmt.Errorf("owner %q: has a slack route but notify.slack names no token or webhook", name))
		case mode == SlackToken && s.Channel == "":
			errs = append(errs, fmt.Errorf("owner %q: slack: a bot token needs a channel", name))
		}
	}
	return errors.Join(errs...)
}
