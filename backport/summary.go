package backport

import (
	"fmt"
	"io"
	"strings"
)

// Format is how Write prints a result.
type Format string

// The formats: text for a terminal, markdown for a pull request's
// description.
const (
	FormatText     Format = "text"
	FormatMarkdown Format = "markdown"
)

// Write prints the result in format f.
func (r *Result) Write(w io.Writer, f Format) error {
	var s string
	switch f {
	case FormatText, "":
		s = r.text()
	case FormatMarkdown:
		s = r.markdown()
	default:
		return fmt.Errorf("unknown format %q (want text or markdown)", f)
	}
	_, err := io.WriteString(w, s)
	return err
}

// shown is a value for people: "(absent)" for nothing, long ones cut.
func shown(s string, limit int) string {
	if s == "" {
		return "(absent)"
	}
	if len(s) > limit {
		return s[:limit-3] + "..."
	}
	return s
}

func (e Edit) who() string {
	by := e.Manager
	if by == "" {
		by = "an unknown manager"
	}
	return fmt.Sprintf("%s (%s)", by, e.Class)
}

func (r *Result) commitMessage() string {
	var b strings.Builder
	n := len(r.Changes)
	fmt.Fprintf(&b, "backport %s: carry %d live change%s back to Git\n\n", r.App, n, plural(n))
	if r.Reason != "" {
		fmt.Fprintf(&b, "Reason: %s\n\n", oneLine(r.Reason))
	} else {
		b.WriteString("Reason: none given (driftscan backport --reason)\n\n")
	}
	b.WriteString("These fields were changed in the cluster outside Git. Writing the live\nvalues to Git lets the next sync keep them instead of reverting them.\n")
	for _, c := range r.Changes {
		fmt.Fprintf(&b, "\n- %s\n", c.Field())
		fmt.Fprintf(&b, "  %s: %s -> %s\n", c.Type, shown(c.Git, 300), shown(c.Live, 300))
		fmt.Fprintf(&b, "  by %s", c.who())
		if c.Time != "" {
			fmt.Fprintf(&b, " at %s", c.Time)
		}
		fmt.Fprintf(&b, "\n  written to %s (%s)\n", c.WrittenTo, c.Via)
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\nNot carried back:\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s, by %s: %s\n", s.Field(), s.who(), s.Reason)
			if s.Suggestion != "" {
				fmt.Fprintf(&b, "  suggested patch: %s\n", s.Suggestion)
			}
		}
	}
	b.WriteString("\nWritten by driftscan backport from a scan of the live cluster.\n")
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (r *Result) text() string {
	var b strings.Builder
	switch {
	case r.Commit != "":
		fmt.Fprintf(&b, "branch  %s\ncommit  %s (branched from %s)\n", r.Branch, r.Commit, short(r.Base))
	case len(r.Changes) == 0 && len(r.Skipped) == 0:
		fmt.Fprintf(&b, "nothing to backport: app %s has no pipeline or human drift\n", r.App)
		return b.String()
	default:
		b.WriteString("nothing was committed\n")
	}
	if len(r.Changes) > 0 {
		fmt.Fprintf(&b, "\ncarried back to Git (%d):\n", len(r.Changes))
		for _, c := range r.Changes {
			fmt.Fprintf(&b, "  %s: %s -> %s, by %s; in %s (%s)\n", c.Field(), shown(c.Git, 80), shown(c.Live, 80), c.who(), c.WrittenTo, c.Via)
		}
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "\nnot carried back (%d):\n", len(r.Skipped))
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "  %s, by %s: %s\n", s.Field(), s.who(), s.Reason)
			if s.Suggestion != "" {
				fmt.Fprintf(&b, "    suggested patch: %s\n", s.Suggestion)
			}
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\nwarning: %s\n", w)
	}
	switch {
	case r.PushedTo != "":
		fmt.Fprintf(&b, "\npushed %s to %s\n", r.Branch, r.PushedTo)
	case r.DryRun:
		b.WriteString("\n(dry run) nothing was committed or pushed\n")
	case r.Commit != "":
		fmt.Fprintf(&b, "\nNot pushed: push %s and open a pull request (or run again with --pr); the commit message describes it.\n", r.Branch)
	}
	return b.String()
}

func (r *Result) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Backport of live changes to app `%s`\n\n", r.App)
	if r.Reason != "" {
		fmt.Fprintf(&b, "**Reason:** %s\n\n", mdEscape(oneLine(r.Reason)))
	}
	if len(r.Changes) == 0 {
		b.WriteString("Nothing was carried back to Git.\n")
	} else {
		b.WriteString("These fields were changed in the cluster outside Git. This pull request writes the live values to Git, so that the next sync keeps them instead of reverting them.\n\n")
		b.WriteString("| Object | Field | Git | Live | Changed by | Written to |\n|---|---|---|---|---|---|\n")
		for _, c := range r.Changes {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s (%s) |\n",
				mdCode(c.Object.String()), mdCode(c.Path), mdCode(shown(c.Git, 120)), mdCode(shown(c.Live, 120)),
				mdCode(managerOr(c.Manager))+" ("+string(c.Class)+")", mdCode(c.WrittenTo), mdEscape(c.Via))
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\n### Not carried back\n\nThe next sync would still revert these; carry them to Git by hand before re-enabling it.\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s %s, by %s (%s): %s", mdCode(s.Object.String()), mdCode(s.Path), mdCode(managerOr(s.Manager)), s.Class, mdEscape(s.Reason))
			if s.Suggestion != "" {
				fmt.Fprintf(&b, " Suggested patch: %s.", mdCode(s.Suggestion))
			}
			b.WriteString("\n")
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n> **Warning:** %s\n", mdEscape(w))
	}
	if r.Commit != "" {
		fmt.Fprintf(&b, "\nBranch %s, commit %s, written by `driftscan backport`.\n", mdCode(r.Branch), mdCode(short(r.Commit)))
	}
	return b.String()
}

func managerOr(m string) string {
	if m == "" {
		return "unknown"
	}
	return m
}

// mdCode writes s as inline code in a table cell.
func mdCode(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}
