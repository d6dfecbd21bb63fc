package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"
)

// writeMarkdown writes GitHub-flavoured Markdown for a pull request comment
// or a CI step summary: a title and a summary table by app and class, then
// per app a collapsed <details> block for each object that is not InSync
// (a findings table for drift, the reason for Missing, Extra and Error), and
// the ignore-rule debts last. Apps with nothing to report are only counted.
func writeMarkdown(w io.Writer, r *Report, opts WriteOptions) error {
	width := opts.valueWidth()
	now := opts.now(r)
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }

	p("## driftscan: `%s`\n\n", mdCodeText(r.Cluster))
	p("Scanned at %s: %s, %s.\n\n", r.ScannedAt.UTC().Format("2006-01-02 15:04:05 MST"), plural(r.Summary.Apps, "app"), mdText(summaryText(r.Summary)))

	var loud []App
	for _, app := range r.Apps {
		if !app.Quiet() {
			loud = append(loud, app)
		}
	}
	if len(loud) > 0 {
		p("| App |")
		for _, c := range Classes {
			p(" %s |", c)
		}
		p(" drifted | missing | extra | errors |\n")
		p("| :-- |%s\n", strings.Repeat(" --: |", len(Classes)+4))
		row := func(name string, s Summary) {
			p("| %s |", name)
			for _, c := range Classes {
				p(" %d |", s.ByClass[c])
			}
			p(" %d | %d | %d | %d |\n", s.Drifted, s.Missing, s.Extra, s.Errors)
		}
		for _, app := range loud {
			row(mdText(app.Name), app.Summary())
		}
		row("**total**", r.Summary)
		p("\n")
	}
	if quiet := len(r.Apps) - len(loud); quiet > 0 {
		p("%s in sync.\n\n", plural(quiet, "app"))
	}

	for _, app := range loud {
		p("### %s\n\n", mdText(app.Name))
		var meta []string
		if app.Owner != "" {
			meta = append(meta, "Owner "+mdText(app.Owner))
		}
		if src := sourceText(app.Source); src != "" {
			meta = append(meta, "Source "+mdCode(src, 0))
		}
		if len(meta) > 0 {
			p("%s\n\n", strings.Join(meta, " · "))
		}
		if app.Error != "" {
			p("**Error:**\n\n%s", mdFence(app.Error))
		}
		if app.OverIgnoreCap {
			p("**Warning:** this app has more ignore rules than `--max-ignores-per-app` allows.\n\n")
		}
		if app.Pending.Notable() {
			p("**Pending:** %s\n\n", mdText(app.Pending.Summary()))
		}
		if g := app.GitOps; g != nil && g.SyncBlocked != "" {
			p("**Sync blocked:** %s\n\n", mdText(g.SyncBlocked))
		}
		for _, o := range app.Objects {
			if o.Status == StatusInSync {
				continue
			}
			writeMarkdownObject(&b, app, o, width, now)
		}
	}

	if len(r.Errors) > 0 {
		p("### Errors\n\n")
		for _, e := range r.Errors {
			p("- %s\n", mdCode(e, 0))
		}
		p("\n")
	}

	if len(r.Warnings) > 0 {
		p("### Warnings\n\nThe scan could not read these, and some findings say less than they could.\n\n")
		for _, w := range r.Warnings {
			where := ""
			if w.App != "" {
				where = "**" + mdText(w.App) + "**: "
			}
			if w.Object != "" {
				where += mdCode(w.Object, 0) + ": "
			}
			p("- %s%s (%s)\n", where, mdText(w.Message), mdCode(string(w.Code), 0))
		}
		p("\n")
	}

	if len(r.Debts) > 0 {
		p("### Ignore-rule debt\n\n")
		p("| Kind | Owner | Rule | Why |\n| --- | --- | --- | --- |\n")
		for _, d := range r.Debts {
			p("| %s | %s | %s | %s |\n", d.Kind, mdText(orDash(d.Owner)), mdCode(d.Rule.Target(), 0), mdText(debtText(d)))
		}
		p("\n")
	}

	out := strings.TrimRight(b.String(), "\n") + "\n"
	_, err := io.WriteString(w, out)
	return err
}

// writeMarkdownObject writes one <details> block. GitHub renders Markdown
// inside <details> only after a blank line, so one follows </summary> and
// precedes </details>.
func writeMarkdownObject(b *strings.Builder, app App, o Object, width int, now time.Time) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	detail := string(o.Status)
	if o.Status == StatusDrifted {
		active := o.ActiveFindings()
		byClass := map[Class]int{}
		for _, f := range active {
			byClass[f.Class]++
		}
		detail += ", " + plural(len(active), "finding")
		if by := byClassText(byClass); by != "" {
			detail += " (" + by + ")"
		}
		if n := len(o.Findings) - len(active); n > 0 {
			detail += fmt.Sprintf(", %d ignored", n)
		}
	}
	summary := "<code>" + html.EscapeString(o.Ref()) + "</code>: " + html.EscapeString(detail)
	p("<details><summary>%s</summary>\n\n", summary)
	where := ""
	if mp := app.ManifestPath(o); mp != "" {
		where = " Declared in " + mdCode(location(mp, o.Line), 0) + "."
	}
	switch o.Status {
	case StatusMissing, StatusExtra:
		p("%s.%s\n\n", upperFirst(statusText(o)), where)
	case StatusError:
		p("Could not be compared.%s\n\n%s", where, mdFence(o.Error))
	default:
		if where != "" {
			p("%s\n\n", strings.TrimSpace(where))
		}
	}
	if len(o.Findings) > 0 {
		p("| Class | Type | Path | Git | Live | Manager | Age | Note |\n")
		p("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, f := range o.Findings {
			var notes []string
			if f.Ignored {
				notes = append(notes, ignoredText(f))
			}
			if c := contractText(f); c != "" && !f.Ignored {
				notes = append(notes, c)
			}
			if f.Hint != "" {
				notes = append(notes, "hint: "+f.Hint)
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s |\n",
				f.Class, f.Type, mdCode(f.Path, 0), mdValue(f.Git, width), mdValue(f.Live, width),
				mdText(orDash(f.By())), f.Age(now), mdText(strings.Join(notes, "; ")))
		}
		p("\n")
	}
	p("</details>\n\n")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// mdValue is a Git or live value in a table cell: code, cut at width, or an
// italic "none" when absent.
func mdValue(v string, width int) string {
	if v == "" {
		return "_none_"
	}
	return mdCode(v, width)
}

// mdCode puts s in a code span that survives a GFM table cell: on one line,
// cut at width (0: whole), fenced with more backticks than s holds in a row,
// and with "|" escaped (GFM unescapes \| inside code spans in tables).
func mdCode(s string, width int) string {
	s = cut(oneLine(s), width)
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ")) {
		s = " " + s + " "
	}
	return fence + strings.ReplaceAll(s, "|", `\|`) + fence
}

// mdCodeText is s for use inside a code span the caller fences with one
// backtick.
func mdCodeText(s string) string {
	return strings.ReplaceAll(oneLine(s), "`", "'")
}

// mdText escapes s as plain Markdown text on one line: every ASCII
// punctuation character that Markdown or a GFM table could read as syntax
// gets a backslash.
func mdText(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(s)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~#!&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdFence puts s in a fenced code block, the fence longer than any run of
// backticks in s.
func mdFence(s string) string {
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return fence + "text\n" + strings.TrimRight(s, "\n") + "\n" + fence + "\n\n"
}

func longestRun(s string, c rune) int {
	longest, n := 0, 0
	for _, r := range s {
		if r == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}
