package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/PagerDuty/go-pagerduty"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// PagerDuty sends Events API v2 events with github.com/PagerDuty/go-pagerduty.
// https://developer.pagerduty.com/docs/events-api-v2/overview/
type PagerDuty struct {
	client *pagerduty.Client
}

// NewPagerDuty returns a sender for cfg; hc carries every request (retries
// live in its transport).
func NewPagerDuty(cfg config.PagerDuty, hc *http.Client) *PagerDuty {
	base := strings.TrimSuffix(strings.TrimSuffix(cfg.EventsURL, "/"), "/v2/enqueue")
	if base == "" {
		base = config.DefaultEventsURL
	}
	c := pagerduty.NewClient("", pagerduty.WithV2EventsAPIEndpoint(base))
	c.HTTPClient = hc
	return &PagerDuty{client: c}
}

// Send sends one event and checks that PagerDuty accepted it.
func (p *PagerDuty) Send(ctx context.Context, e pagerduty.V2Event) error {
	resp, err := p.client.ManageEventWithContext(ctx, &e)
	if err != nil {
		return fmt.Errorf("events API %s %s: %w", e.Action, e.DedupKey, err)
	}
	if resp.Status != "success" {
		return fmt.Errorf("events API %s %s: status %q: %s", e.Action, e.DedupKey, resp.Status, resp.Message)
	}
	return nil
}

// Events API v2 limits.
const (
	pdMaxSummary  = 1024
	pdMaxDedupKey = 255
	// pdMaxFindings and pdMaxValue keep custom_details well under the
	// 512 KB an event may have.
	pdMaxFindings = 50
	pdMaxValue    = 1000
)

// dedupKey is the incident of one object of one app in one cluster:
// readable when it fits PagerDuty's 255 characters, else a hash of it.
func dedupKey(k Key) string {
	s := "driftscan/" + k.Cluster + "/" + k.App + "/" + k.Ref()
	if len(s) <= pdMaxDedupKey {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "driftscan/" + hex.EncodeToString(sum[:])
}

// pdDetails is an event's custom_details.
type pdDetails struct {
	Cluster         string      `json:"cluster"`
	App             string      `json:"app"`
	Owner           string      `json:"owner"`
	Object          string      `json:"object"`
	Change          Change      `json:"change"`
	Findings        []pdFinding `json:"findings"`
	OmittedFindings int         `json:"omittedFindings,omitempty"`
	Report          string      `json:"report,omitempty"`
}

type pdFinding struct {
	Path  string       `json:"path,omitempty"`
	Type  report.Type  `json:"type"`
	Class report.Class `json:"class"`
	// Git and Live are sent only with PagerDuty.IncludeValues.
	Git  string `json:"git,omitempty"`
	Live string `json:"live,omitempty"`
	By   string `json:"by,omitempty"`
	Time string `json:"time,omitempty"`
	Hint string `json:"hint,omitempty"`
	// Attribution is who made the finding, from the audit log.
	Attribution *report.Attribution `json:"attribution,omitempty"`
}

// triggerEvent opens or updates the object's incident.
func triggerEvent(it item, routingKey, severity string, mc messageContext, scannedAt time.Time) pagerduty.V2Event {
	var classes []string
	byClass := map[report.Class]int{}
	for _, f := range it.findings {
		byClass[f.Class]++
	}
	for _, c := range report.Classes {
		if n := byClass[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%d %s", n, c))
		}
	}
	ref := it.key.Ref()
	summary := fmt.Sprintf("Drift on %s (app %s, cluster %s): %s; owner %s",
		ref, it.app, mc.cluster, strings.Join(classes, ", "), it.owner)
	if people := report.Authors(it.findings); len(people) > 0 {
		summary += "; by " + strings.Join(people, ", ")
	}
	d := pdDetails{Cluster: mc.cluster, App: it.app, Owner: it.owner, Object: ref, Change: it.change, Report: mc.reportURL}
	for i, f := range it.findings {
		if i == pdMaxFindings {
			d.OmittedFindings = len(it.findings) - i
			break
		}
		pf := pdFinding{Path: f.Path, Type: f.Type, Class: f.Class, By: f.By(), Time: f.Time, Hint: f.Hint, Attribution: f.Attribution}
		if mc.pagerDutyValues {
			pf.Git, pf.Live = cutBytes(f.Git, pdMaxValue), cutBytes(f.Live, pdMaxValue)
		}
		d.Findings = append(d.Findings, pf)
	}
	var names []string
	for _, c := range report.Classes {
		if byClass[c] > 0 {
			names = append(names, string(c))
		}
	}
	e := pagerduty.V2Event{
		RoutingKey: routingKey,
		Action:     "trigger",
		DedupKey:   it.dedupKey,
		Client:     "driftscan",
		ClientURL:  mc.reportURL,
		Payload: &pagerduty.V2Payload{
			Summary:   cutBytes(summary, pdMaxSummary),
			Source:    mc.cluster,
			Severity:  severity,
			Timestamp: scannedAt.UTC().Format(time.RFC3339),
			Component: ref,
			Group:     it.app,
			Class:     "drift/" + strings.Join(names, ","),
			Details:   d,
		},
	}
	if mc.reportURL != "" {
		e.Links = []any{map[string]string{"href": mc.reportURL, "text": "driftscan report"}}
	}
	return e
}

// resolveEvent closes the object's incident.
func resolveEvent(it item, routingKey string) pagerduty.V2Event {
	return pagerduty.V2Event{RoutingKey: routingKey, Action: "resolve", DedupKey: it.dedupKey}
}

// cutBytes shortens s to at most n bytes without splitting a character,
// ending it with "…".
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	end := n - len(ell)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ell
}
