package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/calricon/driftscan/report"
)

// blocksOf decodes a message's blocks the way Slack receives them.
func blocksOf(t *testing.T, m slackMessage) []map[string]any {
	t.Helper()
	data, err := json.Marshal(m.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func blockText(b map[string]any) string {
	if text, ok := b["text"].(map[string]any); ok {
		s, _ := text["text"].(string)
		return s
	}
	if els, ok := b["elements"].([]any); ok && len(els) > 0 {
		s, _ := els[0].(map[string]any)["text"].(string)
		return s
	}
	return ""
}

func TestDriftMessageKeepsSlackLimits(t *testing.T) {
	long := strings.Repeat("x", 5000)
	var items []item
	for i := range 60 {
		var findings []report.Finding
		for j := range 100 {
			findings = append(findings, report.Finding{
				Path: fmt.Sprintf(".data.key%03d", j), Type: report.TypeChanged, Class: report.ClassHuman,
				Git: long, Live: long + "<&>",
			})
		}
		items = append(items, item{key: Key{Kind: "ConfigMap", Namespace: "prod", Name: fmt.Sprintf("cm-%02d", i)}, change: ChangeNew, findings: findings})
	}
	g := slackGroup{app: strings.Repeat("very-long-app-name-", 20), owner: "team-web", mention: "<!subteam^S0123>", items: items}
	msg := driftMessage(g, messageContext{cluster: "prod-eu-1", reportURL: "https://ci.example.com/runs/42", now: testNow})

	blocks := blocksOf(t, msg)
	checkBlocks(t, blocks)
	if len(blocks) != slackMaxBlocks {
		t.Errorf("%d blocks, want the limit of %d used", len(blocks), slackMaxBlocks)
	}
	if h := blockText(blocks[0]); utf8.RuneCountInString(h) != slackMaxHeaderText || !strings.HasSuffix(h, "…") {
		t.Errorf("header %q: want it cut to %d characters", h, slackMaxHeaderText)
	}
	first := blockText(blocks[2])
	if !strings.HasSuffix(first, "more findings") || strings.Contains(first, "<&>") {
		t.Errorf("an object with 100 long findings: want them cut with a count and escaped, got ...%s", first[max(0, len(first)-200):])
	}
	var note string
	for _, b := range blocks {
		if s := blockText(b); strings.HasPrefix(s, "…and") {
			note = s
		}
	}
	// 50 blocks less header, intro, note, counts and link leave 45 objects.
	if want := "…and 15 more objects not shown here: see the report."; note != want {
		t.Errorf("left-out note %q, want %q", note, want)
	}
	if last := blockText(blocks[len(blocks)-1]); last != "<https://ci.example.com/runs/42|Full report>" {
		t.Errorf("last block %q, want the report link", last)
	}
}

func TestResolvedMessageCutsLongLists(t *testing.T) {
	var items []item
	for i := range 400 {
		items = append(items, item{key: Key{Kind: "ConfigMap", Namespace: "prod", Name: fmt.Sprintf("config-map-with-a-long-name-%03d", i)}, change: ChangeResolved, why: "back in sync"})
	}
	msg := resolvedMessage(slackGroup{app: "web", owner: "team-web", items: items}, messageContext{cluster: "prod"})
	blocks := blocksOf(t, msg)
	checkBlocks(t, blocks)
	body := blockText(blocks[1])
	if !strings.Contains(body, "more objects") {
		t.Errorf("resolved list of 400 objects is not cut with a count: ...%s", body[len(body)-100:])
	}
}

func TestFindingLine(t *testing.T) {
	tests := []struct {
		name string
		f    report.Finding
		want string
	}{
		{
			"a changed scalar shows Git → live, manager and age",
			report.Finding{Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassOperator, Manager: "kube-controller-manager", Subresource: "scale", Time: "2026-07-01T11:00:00Z", Git: "2", Live: "5"},
			"• `operator` `.spec.replicas` `2` → `5` · kube-controller-manager/scale · 60m ago",
		},
		{
			"an added field nobody owns shows the likely actor",
			report.Finding{Path: ".metadata.annotations.x", Type: report.TypeAdded, Class: report.ClassWebhook, Live: "y", Actor: "injector"},
			"• `webhook` `.metadata.annotations.x` _none_ → `y` · (injector)",
		},
		{
			"a violation names the contract; an allowed change says nothing more",
			report.Finding{Path: ".data.a", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "1", Live: "2",
				Contract: &report.ContractVerdict{Name: "production", Verdict: report.VerdictViolation, Rule: "class human during breakglass"}},
			"• `human` `.data.a` `1` → `2` · kubectl-edit · *violates contract production*",
		},
		{
			"an allowed change",
			report.Finding{Path: ".data.a", Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "kubectl-set", Git: "1", Live: "2",
				Contract: &report.ContractVerdict{Name: "production", Verdict: report.VerdictAllowed}},
			"• `pipeline` `.data.a` `1` → `2` · kubectl-set",
		},
		{
			"an unknown verdict says why",
			report.Finding{Path: ".data.a", Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "kubectl-set", Git: "1", Live: "2",
				Contract: &report.ContractVerdict{Name: "production", Verdict: report.VerdictUnknown}},
			"• `pipeline` `.data.a` `1` → `2` · kubectl-set · contract production: allowed only for a named user, and nobody is on record",
		},
		{
			"mrkdwn and backticks in values cannot break out of the code span",
			report.Finding{Path: ".data.a", Type: report.TypeChanged, Class: report.ClassHuman, Git: "<!channel>", Live: "a`b\nc&d"},
			"• `human` `.data.a` `&lt;!channel&gt;` → `a'b\\nc&amp;d`",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := findingLine(tt.f, testNow); got != tt.want {
				t.Errorf("findingLine =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestLinkEscapesTheURL(t *testing.T) {
	got := link("https://ci.example.com/r?a=1|2&b=<x>", "Full report")
	if want := "<https://ci.example.com/r?a=1%7C2&b=%3Cx%3E|Full report>"; got != want {
		t.Errorf("link = %q, want %q", got, want)
	}
}
