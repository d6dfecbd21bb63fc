package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// none is how the human-facing formats show an absent value, as kubectl does.
const none = "<none>"

// oneLine makes a value safe for a single table cell: control characters
// that would break a line or a column are written as Go escapes.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	return strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
}

// cut shortens s to at most width characters by taking out its middle and
// putting "…" there, so that both ends stay readable: the registry and the
// tag of an image, the algorithm and the last digits of a hash. The end,
// which tells values apart more often, gets two thirds. Width 0 leaves s
// whole.
func cut(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	if width == 1 {
		return "…"
	}
	r := []rune(s)
	head := (width - 1) / 3
	tail := width - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// cutStart shortens s to at most width characters by taking out its
// beginning: for a field path, whose end names the field. Width 0 leaves s
// whole.
func cutStart(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	if width == 1 {
		return "…"
	}
	r := []rune(s)
	return "…" + string(r[len(r)-(width-1):])
}

// cellValue is a Git or live value as a table cell: one line, cut, and
// <none> when absent.
func cellValue(v string, width int) string {
	if v == "" {
		return none
	}
	return cut(oneLine(v), width)
}

// plural writes "1 finding", "2 findings".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	if strings.HasSuffix(word, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// byClassText lists non-zero class counts in report order: "1 human, 1 webhook".
func byClassText(byClass map[Class]int) string {
	var parts []string
	for _, c := range Classes {
		if n := byClass[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c))
		}
	}
	return strings.Join(parts, ", ")
}

// byVerdictText lists the contract verdict counts in report order, zeros
// left out: "1 violation, 2 uncovered".
func byVerdictText(byVerdict map[Verdict]int) string {
	var parts []string
	for _, v := range Verdicts {
		if n := byVerdict[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	return strings.Join(parts, ", ")
}

// summaryText is the one-line count of a Summary, shared by the table and
// Markdown: "5 objects, 1 drifted, 2 findings (1 human, 1 webhook), 1 ignored".
// Missing, extra, errors, warnings and ignored appear only when not zero.
func summaryText(s Summary) string {
	parts := []string{plural(s.Objects, "object"), fmt.Sprintf("%d drifted", s.Drifted)}
	if s.Missing > 0 {
		parts = append(parts, fmt.Sprintf("%d missing", s.Missing))
	}
	if s.Extra > 0 {
		parts = append(parts, fmt.Sprintf("%d extra", s.Extra))
	}
	if s.Errors > 0 {
		parts = append(parts, plural(s.Errors, "error"))
	}
	if s.Warnings > 0 {
		parts = append(parts, plural(s.Warnings, "warning"))
	}
	findings := plural(s.Findings, "finding")
	if by := byClassText(s.ByClass); by != "" {
		findings += " (" + by + ")"
	}
	parts = append(parts, findings)
	if by := byVerdictText(s.ByVerdict); by != "" {
		parts = append(parts, "contracts: "+by)
	}
	if s.Ignored > 0 {
		parts = append(parts, fmt.Sprintf("%d ignored", s.Ignored))
	}
	return strings.Join(parts, ", ")
}

// ignoredText explains an ignored finding:
// "ignored: <reason>, owner <owner>, until <expires>".
func ignoredText(f Finding) string {
	r := f.IgnoreRule
	if r == nil {
		return "ignored"
	}
	parts := []string{"ignored: " + orDash(r.Reason)}
	if r.Owner != "" {
		parts = append(parts, "owner "+r.Owner)
	}
	if r.Expires != "" {
		parts = append(parts, "until "+r.Expires)
	}
	return strings.Join(parts, ", ")
}

// warningText is a warning on one line, after "warning:": the app it
// concerns, the message and the code, "app web: cannot list … (SchemaNotPublished)".
func warningText(w Warning) string {
	s := oneLine(w.Message) + " (" + string(w.Code) + ")"
	if w.Object != "" {
		s = w.Object + ": " + s
	}
	if w.App != "" {
		s = "app " + w.App + ": " + s
	}
	return s
}

// statusText is what an object header says after the status: why it needs
// attention beyond its findings.
func statusText(o Object) string {
	switch o.Status {
	case StatusMissing:
		return "in Git, not in the cluster"
	case StatusExtra:
		return "in the cluster with the app's tracking label, not in Git"
	case StatusError:
		return o.Error
	}
	return ""
}

// debtText describes a debt after its rule: when it expired or that it
// matched nothing, and why it was made.
func debtText(d Debt) string {
	var s string
	switch d.Kind {
	case DebtExpired:
		s = fmt.Sprintf("expired %s, would hide %s", orDash(d.Rule.Expires), plural(d.Matched, "finding"))
	case DebtUnused:
		s = "matched nothing"
		if d.Rule.Expires != "" {
			s += ", expires " + d.Rule.Expires
		}
	default:
		s = string(d.Kind)
	}
	if d.Rule.Reason != "" {
		s += " (reason: " + d.Rule.Reason + ")"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortCommit is the first 7 characters of a commit, as git abbreviates it.
func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

// sourceText says where an app's desired state comes from:
// "https://github.com/acme/deploy.git apps/web @ main (3f2a1c9)".
func sourceText(s Source) string {
	var parts []string
	if s.Repo != "" {
		parts = append(parts, s.Repo)
	}
	if s.Path != "" {
		parts = append(parts, s.Path)
	}
	if s.Chart != "" {
		parts = append(parts, "chart "+s.Chart)
	}
	rev := s.Revision
	c := shortCommit(s.Commit)
	if s.Version != "" {
		c = s.Version
	}
	if c != "" && c != rev {
		if rev != "" {
			rev += " (" + c + ")"
		} else {
			rev = c
		}
	}
	if rev != "" {
		parts = append(parts, "@ "+rev)
	}
	return strings.Join(parts, " ")
}
