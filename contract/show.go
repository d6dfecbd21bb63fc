package contract

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/calricon/driftscan/report"
)

// BreakglassCommand is what a person runs to lift a contract's break-glass
// rules for one app.
const BreakglassCommand = `driftscan breakglass suspend APP --ttl 1h --reason "INC-..."`

// WriteTable writes the contracts as a table for a terminal.
func WriteTable(w io.Writer, cs []Contract) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTRACT\tNAMESPACES\tOWNER\tWHO MAY CHANGE LIVE STATE\tSELF-HEAL")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, strings.Join(c.namespaceText(), ", "), orDash(c.Owner),
			strings.Join(c.allowTexts(), "; "), selfHealText(c.SelfHeal))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\n"+footer())
	return err
}

// WriteMarkdown writes the contracts as a Markdown section a team can put in
// its runbook.
func WriteMarkdown(w io.Writer, cs []Contract) error {
	var b strings.Builder
	b.WriteString("## Who may change live state\n\n")
	b.WriteString("| contract | namespaces | owner | who may change live state | self-heal |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, c := range cs {
		var nss []string
		for _, ns := range c.Namespaces {
			nss = append(nss, code(ns))
		}
		if sel := c.NamespaceSelector; sel != nil {
			nss = append(nss, "labelled "+code(sel.String()))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(c.Name), strings.Join(nss, ", "), cell(orDash(c.Owner)),
			cell(strings.Join(c.allowTexts(), "; ")), cell(selfHealText(c.SelfHeal)))
	}
	b.WriteString("\n")
	b.WriteString(footer() + "\n")
	if bg := breakglassContracts(cs); len(bg) > 0 {
		fmt.Fprintf(&b, "\n**In an incident** (%s): suspend the app's sync first, which also lifts the rules limited to break-glass, then hotfix:\n\n", strings.Join(bg, ", "))
		b.WriteString("```sh\n" + BreakglassCommand + "\ndriftscan breakglass resume APP   # once the hotfix is in Git\n```\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func footer() string {
	return "Any other change in these namespaces is a violation; a namespace no contract covers is reported as uncovered."
}

func breakglassContracts(cs []Contract) []string {
	var out []string
	for _, c := range cs {
		if c.BreakglassRules() {
			out = append(out, c.Name)
		}
	}
	return out
}

// allowTexts says each rule in words.
func (c Contract) allowTexts() []string {
	var out []string
	for _, r := range c.Allow {
		out = append(out, r.Text())
	}
	return out
}

// classWords names each class's actors.
var classWords = map[report.Class]string{
	AnyClass:             "anyone",
	report.ClassOperator: "operators",
	report.ClassWebhook:  "mutating webhooks",
	report.ClassPipeline: "pipelines",
	report.ClassHuman:    "people",
	report.ClassUnknown:  "unknown actors",
}

// Text says the rule in words: "pipelines as kubectl-set by
// system:serviceaccount:ci:deployer", "people, only during break-glass".
func (r Rule) Text() string {
	s := classWords[r.Class]
	if s == "" {
		s = string(r.Class)
	}
	if len(r.Webhooks) > 0 {
		s += " " + strings.Join(r.Webhooks, ", ")
	}
	if len(r.Managers) > 0 {
		s += " as " + strings.Join(r.Managers, ", ")
	}
	var who []string
	who = append(who, r.Users...)
	for _, g := range r.Groups {
		who = append(who, "group "+g)
	}
	if len(who) > 0 {
		s += " by " + strings.Join(who, ", ")
	}
	if r.During == DuringBreakglass {
		s += ", only during break-glass"
	}
	return s
}

func selfHealText(s SelfHeal) string {
	switch s {
	case SelfHealForbidden:
		return "forbidden: drift is alerted, never reverted"
	case SelfHealAllowed:
		return "allowed: the reconciler reverts any other change"
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func code(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }

// cell escapes a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
