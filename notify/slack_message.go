package notify

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/calricon/driftscan/report"
)

// Slack's limits on a message (https://docs.slack.dev/reference/block-kit/blocks).
const (
	slackMaxBlocks      = 50
	slackMaxSectionText = 3000
	slackMaxHeaderText  = 150
	// slackMaxValue cuts a Git or live value inside a finding line.
	slackMaxValue = 120
)

// slackMessage is one Slack message: Block Kit blocks and the fallback text
// notifications and screen readers show.
type slackMessage struct {
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
	// Objects are the objects the message is about, shown or left out.
	Objects int `json:"-"`
}

// slackGroup is the objects of one app one owner is told about in one
// message.
type slackGroup struct {
	app     string
	owner   string
	mention string
	target  string
	items   []item
}

// messageContext is what every message of a run shares.
type messageContext struct {
	cluster   string
	reportURL string
	now       time.Time
	// expiredDebts counts, per owner, ignore rules past their date.
	expiredDebts map[string]int
	// pagerDutyValues puts the findings' values into PagerDuty events.
	pagerDutyValues bool
}

// driftMessage is the message for new, changed and still-open drift: a
// header, an intro with the mention, a section per object (as many as the
// block limit allows, then a count of the rest), counts by class and
// expired ignore rules, and a link to the report.
func driftMessage(g slackGroup, mc messageContext) slackMessage {
	header := fmt.Sprintf("Drift in %s on %s", g.app, mc.cluster)
	counts := map[Change]int{}
	byClass := map[report.Class]int{}
	for _, it := range g.items {
		counts[it.change]++
		for _, f := range it.findings {
			byClass[f.Class]++
		}
	}
	var changes []string
	for _, c := range []Change{ChangeNew, ChangeChanged, ChangeOpen} {
		if counts[c] > 0 {
			changes = append(changes, fmt.Sprintf("%d %s", counts[c], c))
		}
	}
	intro := fmt.Sprintf("%s drifted in app *%s* (owner %s): %s.",
		plural(len(g.items), "object"), mrkdwnEscape(g.app), mrkdwnEscape(g.owner), strings.Join(changes, ", "))
	if g.mention != "" {
		intro = g.mention + " " + intro
	}

	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, cut(header, slackMaxHeaderText), false, false)),
		section(intro),
	}
	// Room for the objects: the limit less header, intro, the left-out
	// note, counts and link.
	room := slackMaxBlocks - len(blocks) - 3
	shown := min(len(g.items), room)
	for _, it := range g.items[:shown] {
		blocks = append(blocks, section(objectText(it, mc.now)))
	}
	if left := len(g.items) - shown; left > 0 {
		note := fmt.Sprintf("…and %s not shown here.", plural(left, "more object"))
		if mc.reportURL != "" {
			note = fmt.Sprintf("…and %s not shown here: see the report.", plural(left, "more object"))
		}
		blocks = append(blocks, contextBlock(note))
	}
	var ctx []string
	for _, c := range report.Classes {
		if n := byClass[c]; n > 0 {
			ctx = append(ctx, fmt.Sprintf("%d %s", n, c))
		}
	}
	if n := mc.expiredDebts[g.owner]; n > 0 {
		ctx = append(ctx, fmt.Sprintf("%s of %s expired", plural(n, "ignore rule"), mrkdwnEscape(g.owner)))
	}
	blocks = append(blocks, contextBlock(strings.Join(ctx, " · ")))
	if mc.reportURL != "" {
		blocks = append(blocks, section(link(mc.reportURL, "Full report")))
	}

	text := fmt.Sprintf("%s: %s (%s)", header, plural(len(g.items), "object"), strings.Join(changes, ", "))
	if g.mention != "" {
		text = g.mention + " " + text
	}
	return slackMessage{Text: text, Blocks: blocks, Objects: len(g.items)}
}

// resolvedMessage is the short message for drift that is gone.
func resolvedMessage(g slackGroup, mc messageContext) slackMessage {
	header := fmt.Sprintf("Resolved: drift in %s on %s", g.app, mc.cluster)
	intro := fmt.Sprintf("Drift is gone from %s of app *%s*:", plural(len(g.items), "object"), mrkdwnEscape(g.app))
	if g.mention != "" {
		intro = g.mention + " " + intro
	}
	lines := make([]string, 0, len(g.items))
	for _, it := range g.items {
		lines = append(lines, fmt.Sprintf("• %s: %s", objectName(it), it.why))
	}
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, cut(header, slackMaxHeaderText), false, false)),
		section(joinLines(intro, lines, "object")),
	}
	if mc.reportURL != "" {
		blocks = append(blocks, section(link(mc.reportURL, "Full report")))
	}
	text := fmt.Sprintf("%s: %s", header, plural(len(g.items), "object"))
	return slackMessage{Text: text, Blocks: blocks, Objects: len(g.items)}
}

// objectText is one object's section: its name and change, then a line
// per finding, cut to Slack's section limit with a count of what was left.
func objectText(it item, now time.Time) string {
	head := fmt.Sprintf("%s · %s", objectName(it), it.change)
	lines := make([]string, 0, len(it.findings))
	for _, f := range it.findings {
		lines = append(lines, findingLine(f, now))
	}
	return joinLines(head, lines, "finding")
}

// objectName is "*Deployment* `web/api`".
func objectName(it item) string {
	name := it.key.Name
	if it.key.Namespace != "" {
		name = it.key.Namespace + "/" + name
	}
	return fmt.Sprintf("*%s* %s", mrkdwnEscape(it.key.Kind), code(name))
}

// findingLine is "• `human` `.spec.replicas` `2` → `5` · kubectl/scale · 3h ago",
// and names the contract a finding violates.
func findingLine(f report.Finding, now time.Time) string {
	var what string
	switch f.Type {
	case typeMissing:
		what = "object missing: in Git, not in the cluster"
	case typeExtra:
		what = "extra object: in the cluster with the app's tracking label, not in Git"
	default:
		what = fmt.Sprintf("%s %s → %s", code(cut(f.Path, 3*slackMaxValue)), value(f.Git), value(f.Live))
	}
	parts := []string{fmt.Sprintf("• %s %s", code(string(f.Class)), what)}
	if by := f.By(); by != "" {
		parts = append(parts, mrkdwnEscape(by))
	}
	if age := f.Age(now); age != "-" {
		parts = append(parts, age+" ago")
	}
	if c := f.Contract; c != nil {
		switch c.Verdict {
		case report.VerdictViolation:
			parts = append(parts, "*violates contract "+mrkdwnEscape(c.Name)+"*")
		case report.VerdictUnknown:
			parts = append(parts, "contract "+mrkdwnEscape(c.Name)+": allowed only for a named user, and nobody is on record")
		}
	}
	return strings.Join(parts, " · ")
}

// joinLines puts head and lines into one section text within Slack's
// limit; lines that do not fit are counted instead.
func joinLines(head string, lines []string, noun string) string {
	var b strings.Builder
	b.WriteString(cut(head, slackMaxSectionText))
	for i, l := range lines {
		need := utf8.RuneCountInString(b.String()) + 1 + utf8.RuneCountInString(l)
		if rest := len(lines) - i - 1; rest > 0 {
			// Keep room to say how many lines after this one were left out.
			need += utf8.RuneCountInString(moreNote(rest, noun))
		}
		if need > slackMaxSectionText {
			b.WriteString(moreNote(len(lines)-i, noun))
			break
		}
		b.WriteString("\n" + l)
	}
	return b.String()
}

func moreNote(n int, noun string) string {
	return "\n…and " + plural(n, "more "+noun)
}

func section(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
}

func contextBlock(text string) *slack.ContextBlock {
	return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, cut(text, slackMaxSectionText), false, false))
}

// value is a Git or live value in a finding line.
func value(v string) string {
	if v == "" {
		return "_none_"
	}
	return code(cut(oneLine(v), slackMaxValue))
}

// code writes s as inline code; a backtick inside would end it early.
func code(s string) string {
	return "`" + mrkdwnEscape(strings.ReplaceAll(s, "`", "'")) + "`"
}

// mrkdwnEscape escapes the three characters Slack's mrkdwn gives meaning to.
// https://docs.slack.dev/messaging/formatting-message-text#escaping
func mrkdwnEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// link is a mrkdwn link; the URL's own <, > and | are percent-encoded.
func link(url, label string) string {
	url = strings.NewReplacer("<", "%3C", ">", "%3E", "|", "%7C").Replace(url)
	return "<" + url + "|" + mrkdwnEscape(label) + ">"
}

func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
}

// cut shortens s to at most n characters, ending it with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// plural writes "1 object", "2 objects".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
