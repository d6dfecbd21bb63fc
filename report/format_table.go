package report

import (
	"fmt"
	"io"
	"strings"
)

// The table is for an on-call engineer in a terminal: only what needs
// attention is listed (objects that are not InSync, apps with an error), in
// columns aligned across the whole report, with the scan summary last so it
// is on screen when the output ends. InSync objects and quiet apps are only
// counted.
//
// On a terminal the table fits its width (WriteOptions.Width): when a
// finding's row does not fit on one line, its "git → live" goes on a line of
// its own under the path, paths are cut at the start and other long cells in
// the middle, the person the audit log names goes on a line of its own too,
// and prose (headers, errors, hints) wraps at spaces. A finding's row always
// keeps class, type, path, manager and age.

// ANSI SGR codes.
const (
	ansiReset   = "\x1b[0m"
	ansiBold    = "\x1b[1m"
	ansiDim     = "\x1b[2m"
	ansiRed     = "\x1b[31m"
	ansiBoldRed = "\x1b[1;31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiBlue    = "\x1b[34m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
)

// classColor: the more a class needs a person, the louder its colour.
var classColor = map[Class]string{
	ClassWebhook:  ansiCyan,
	ClassOperator: ansiBlue,
	ClassPipeline: ansiYellow,
	ClassHuman:    ansiBoldRed,
	ClassUnknown:  ansiMagenta,
}

var statusColor = map[Status]string{
	StatusInSync:  ansiGreen,
	StatusDrifted: ansiYellow,
	StatusMissing: ansiRed,
	StatusError:   ansiBoldRed,
	StatusExtra:   ansiMagenta,
}

// paint wraps s in an ANSI colour when on is set.
func paint(on bool, color, s string) string {
	if !on || color == "" || s == "" {
		return s
	}
	return color + s + ansiReset
}

// tableLine is one output line: prose, the findings table's header, a
// finding's row, a debt's row, or a row of another table (cells). Rows of
// one table are aligned with each other across the whole report.
type tableLine struct {
	text    string // prose; may hold colour codes
	hang    int    // prose: the indent of its continuation lines
	header  bool
	finding *findingRow
	debt    *Debt
	// A row of the table named table: its cells aligned with the table's
	// other rows after indent, dimmed when dim. When it does not fit the
	// width, its last cell goes on the lines under it.
	cells  []string
	table  string
	indent string
	dim    bool
}

// findingRow is a finding's cells, already one line each.
type findingRow struct {
	class     Class
	typ       string
	path      string
	git, live string // cut at the value width; <none> when absent
	who       string // manager and person, for one line
	manager   string // the manager alone, and
	person    string // the person, each on a line of its own when stacked
	age       string
	note      string // why it is ignored
	ignored   bool
}

// The findings table's column titles.
const (
	colClass  = "CLASS"
	colType   = "TYPE"
	colPath   = "PATH"
	colValues = "GIT → LIVE"
	colWho    = "MANAGER"
	colAge    = "AGE"
)

const (
	appIndent    = "  "
	rowIndent    = "    "
	hintIndent   = "      "
	colGap       = "  "
	gitLiveArrow = " → "
)

func writeTable(w io.Writer, r *Report, opts WriteOptions) error {
	color := opts.Color
	valueWidth := opts.valueWidth()
	now := opts.now(r)
	var lines []tableLine
	text := func(hang int, format string, a ...any) {
		lines = append(lines, tableLine{text: fmt.Sprintf(format, a...), hang: hang})
	}

	text(2, "%s %s  scanned %s", paint(color, ansiBold, "CLUSTER"), r.Cluster, r.ScannedAt.UTC().Format("2006-01-02 15:04:05 MST"))

	quiet := 0
	for _, app := range r.Apps {
		if app.Quiet() {
			quiet++
			continue
		}
		text(0, "")
		head := paint(color, ansiBold, "APP "+app.Name)
		if app.Owner != "" {
			head += "  owner " + app.Owner
		}
		if src := sourceText(app.Source); src != "" {
			head += "  " + src
		}
		text(len(rowIndent), "%s", head)
		if app.Error != "" {
			text(len(rowIndent), "%s%s %s", appIndent, paint(color, ansiBoldRed, "error:"), oneLine(app.Error))
		}
		if app.OverIgnoreCap {
			text(len(rowIndent), "%s%s this app has more ignore rules than --max-ignores-per-app allows", appIndent, paint(color, ansiYellow, "warning:"))
		}
		if app.Pending.Notable() {
			text(len(rowIndent), "%s%s", appIndent, app.Pending.Summary())
		}
		if g := app.GitOps; g != nil && g.SyncBlocked != "" {
			text(len(rowIndent), "%s%s %s", appIndent, paint(color, ansiYellow, "sync blocked:"), oneLine(g.SyncBlocked))
		}
		headed := false
		for _, o := range app.Objects {
			if o.Status == StatusInSync {
				continue
			}
			if !headed && len(o.Findings) > 0 {
				lines = append(lines, tableLine{header: true})
				headed = true
			}
			status := paint(color, statusColor[o.Status], string(o.Status))
			if st := statusText(o); st != "" {
				status += ": " + oneLine(st)
			}
			head := appIndent + o.Ref() + "  " + status
			if p := app.ManifestPath(o); p != "" {
				head += "  (" + location(p, o.Line) + ")"
			}
			text(len(rowIndent), "%s", head)
			for _, f := range o.Findings {
				row := &findingRow{
					class:   f.Class,
					typ:     string(f.Type),
					path:    oneLine(f.Path),
					git:     cellValue(f.Git, valueWidth),
					live:    cellValue(f.Live, valueWidth),
					who:     orDash(oneLine(f.By())),
					manager: orDash(oneLine(f.manager())),
					person:  oneLine(f.Attribution.Who()),
					age:     f.Age(now),
					ignored: f.Ignored,
				}
				if f.Ignored {
					row.note = "(" + oneLine(ignoredText(f)) + ")"
				} else if c := contractText(f); c != "" {
					row.note = "(" + oneLine(c) + ")"
				}
				lines = append(lines, tableLine{finding: row})
				if f.Hint != "" {
					text(len(hintIndent)+len("hint: "), "%shint: %s", hintIndent, oneLine(f.Hint))
				}
			}
		}
		text(len(rowIndent), "%s%s: %s", appIndent, app.Name, summaryText(app.Summary()))
	}

	if len(r.Errors) > 0 {
		text(0, "")
		for _, e := range r.Errors {
			text(2, "%s %s", paint(color, ansiBoldRed, "error:"), oneLine(e))
		}
	}

	if len(r.Warnings) > 0 {
		text(0, "")
		for _, w := range r.Warnings {
			text(len("warning: "), "%s %s", paint(color, ansiYellow, "warning:"), warningText(w))
		}
	}

	lines = append(lines, dismissedLines(r, color, valueWidth)...)

	if len(r.Debts) > 0 {
		text(0, "")
		text(0, "%s", paint(color, ansiBold, "IGNORE-RULE DEBTS"))
		for i := range r.Debts {
			lines = append(lines, tableLine{debt: &r.Debts[i]})
		}
	}

	text(0, "")
	scan := "scan: " + plural(r.Summary.Apps, "app")
	if quiet > 0 {
		scan += fmt.Sprintf(" (%d in sync)", quiet)
	}
	last := scan + ", " + summaryText(r.Summary)
	if d := dismissedText(r); d != "" {
		last += "; " + d
	}
	text(len("scan: "), "%s", last)

	return printTable(w, lines, opts.width(), color)
}

// location is "file:line", or the file alone when the line is unknown.
func location(p string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", p, line)
	}
	return p
}

// printTable lays the lines out in width columns (0: no limit) and writes
// them. Colour is added after the widths are measured, so escape codes take
// no room.
func printTable(w io.Writer, lines []tableLine, width int, color bool) error {
	var findings []*findingRow
	var debts []*Debt
	for _, l := range lines {
		switch {
		case l.finding != nil:
			findings = append(findings, l.finding)
		case l.debt != nil:
			debts = append(debts, l.debt)
		}
	}
	fc := layoutFindings(findings, width)
	dc := layoutDebts(debts)
	tables := layoutTables(lines)

	var b strings.Builder
	for _, l := range lines {
		switch {
		case l.header:
			fc.writeHeader(&b, color)
		case l.finding != nil:
			fc.writeRow(&b, l.finding, width, color)
		case l.debt != nil:
			dc.writeRow(&b, l.debt, width)
		case l.cells != nil:
			tables[l.table].writeRow(&b, l, width, color)
		default:
			wrapInto(&b, l.text, width, l.hang)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
