package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/mattn/go-isatty"
)

// The table is for an on-call engineer in a terminal: only what needs
// attention is listed (objects that are not InSync, apps with an error), in
// columns aligned across the whole report, with the scan summary last so it
// is on screen when the output ends. InSync objects and quiet apps are only
// counted.

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
	InSync:  ansiGreen,
	Drifted: ansiYellow,
	Missing: ansiRed,
	Error:   ansiBoldRed,
	Extra:   ansiMagenta,
}

// ColorFor reports whether output written to f may use colour: f is a
// terminal and NO_COLOR is not set to a non-empty value (https://no-color.org)
// and TERM is not "dumb".
func ColorFor(f *os.File) bool {
	if f == nil {
		return false
	}
	fd := f.Fd()
	return colorFor(isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd), os.LookupEnv)
}

// colorFor is ColorFor with the terminal check done and the environment
// injected.
func colorFor(terminal bool, lookupEnv func(string) (string, bool)) bool {
	if !terminal {
		return false
	}
	if v, ok := lookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	if v, _ := lookupEnv("TERM"); v == "dumb" {
		return false
	}
	return true
}

// paint wraps s in an ANSI colour when on is set.
func paint(on bool, color, s string) string {
	if !on || color == "" || s == "" {
		return s
	}
	return color + s + ansiReset
}

// tableLine is one output line: either text printed as is, or a row whose
// cells are aligned with every other row of the report.
type tableLine struct {
	text   string
	indent string
	cells  []string // a row when not nil
	table  string   // rows of the same table share their column widths
	class  Class    // colours the first cell
	dim    bool     // an ignored finding
}

// tableColumns heads the finding rows.
var tableColumns = []string{"CLASS", "TYPE", "PATH", "GIT → LIVE", "MANAGER", "AGE", ""}

const (
	appIndent     = "  "
	rowIndent     = "    "
	hintIndent    = "      "
	tablePadding  = 2
	gitLiveArrow  = " → "
	tableMinWidth = 0
)

func writeTable(w io.Writer, r *Report, opts WriteOptions) error {
	color := opts.Color
	width := opts.valueWidth()
	now := opts.now(r)
	var lines []tableLine
	text := func(format string, a ...any) { lines = append(lines, tableLine{text: fmt.Sprintf(format, a...)}) }
	row := func(l tableLine) { lines = append(lines, l) }

	text("%s %s  scanned %s", paint(color, ansiBold, "CLUSTER"), r.Cluster, r.ScannedAt.UTC().Format("2006-01-02 15:04:05 MST"))

	quiet := 0
	for _, app := range r.Apps {
		if app.Quiet() {
			quiet++
			continue
		}
		text("")
		head := paint(color, ansiBold, "APP "+app.Name)
		if app.Owner != "" {
			head += "  owner " + app.Owner
		}
		if src := sourceText(app.Source); src != "" {
			head += "  " + src
		}
		text("%s", head)
		if app.Error != "" {
			text("%s%s %s", appIndent, paint(color, ansiBoldRed, "error:"), oneLine(app.Error))
		}
		if app.OverIgnoreCap {
			text("%s%s this app has more ignore rules than --max-ignores-per-app allows", appIndent, paint(color, ansiYellow, "warning:"))
		}
		headed := false
		for _, o := range app.Objects {
			if o.Status == InSync {
				continue
			}
			if !headed && len(o.Findings) > 0 {
				row(tableLine{indent: rowIndent, cells: tableColumns, table: "findings"})
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
			text("%s", head)
			for _, f := range o.Findings {
				cells := []string{
					string(f.Class),
					string(f.Type),
					oneLine(f.Path),
					cellValue(f.Git, width) + gitLiveArrow + cellValue(f.Live, width),
					orDash(f.By()),
					f.Age(now),
					"",
				}
				if f.Ignored {
					cells[len(cells)-1] = "(" + ignoredText(f) + ")"
				} else if c := contractText(f); c != "" {
					cells[len(cells)-1] = "(" + c + ")"
				}
				row(tableLine{indent: rowIndent, cells: cells, table: "findings", class: f.Class, dim: f.Ignored})
				if f.Hint != "" {
					text("%shint: %s", hintIndent, oneLine(f.Hint))
				}
			}
		}
		text("%s%s: %s", appIndent, app.Name, summaryText(app.Summary()))
	}

	if len(r.Errors) > 0 {
		text("")
		for _, e := range r.Errors {
			text("%s %s", paint(color, ansiBoldRed, "error:"), oneLine(e))
		}
	}

	if len(r.Warnings) > 0 {
		text("")
		for _, w := range r.Warnings {
			text("%s %s", paint(color, ansiYellow, "warning:"), warningText(w))
		}
	}

	lines = append(lines, dismissedLines(r, color, width)...)

	if len(r.Debts) > 0 {
		text("")
		text("%s", paint(color, ansiBold, "IGNORE-RULE DEBTS"))
		for _, d := range r.Debts {
			row(tableLine{indent: appIndent, cells: []string{string(d.Kind), orDash(d.Owner), d.Rule.Target(), debtText(d)}, table: "debts"})
		}
	}

	text("")
	scan := "scan: " + plural(r.Summary.Apps, "app")
	if quiet > 0 {
		scan += fmt.Sprintf(" (%d in sync)", quiet)
	}
	last := scan + ", " + summaryText(r.Summary)
	if d := dismissedText(r); d != "" {
		last += "; " + d
	}
	text("%s", last)

	return printTable(w, lines, color)
}

// location is "file:line", or the file alone when the line is unknown.
func location(p string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", p, line)
	}
	return p
}

// printTable aligns every row of lines in one pass of text/tabwriter, so
// columns line up across objects and apps, then prints the rows between the
// text lines. Colour is added after alignment so escape codes take no width.
func printTable(w io.Writer, lines []tableLine, color bool) error {
	// Finding rows and debt rows have different columns: align each table
	// on its own.
	aligned := map[int]string{}
	groups := map[string][]int{}
	for i, l := range lines {
		if l.cells != nil {
			groups[l.table] = append(groups[l.table], i)
		}
	}
	for _, idx := range groups {
		var buf bytes.Buffer
		tw := tabwriter.NewWriter(&buf, tableMinWidth, 8, tablePadding, ' ', 0)
		for _, i := range idx {
			if _, err := io.WriteString(tw, strings.Join(lines[i].cells, "\t")+"\n"); err != nil {
				return err
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		out := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		for k, i := range idx {
			aligned[i] = strings.TrimRight(out[k], " ")
		}
	}

	var b strings.Builder
	for i, l := range lines {
		if l.cells == nil {
			b.WriteString(l.text)
			b.WriteByte('\n')
			continue
		}
		s := aligned[i]
		switch {
		case !color:
		case l.dim:
			s = ansiDim + s + ansiReset
		case l.class != "":
			// The row starts with the class name, padded by the alignment.
			if c := classColor[l.class]; c != "" && strings.HasPrefix(s, string(l.class)) {
				s = c + string(l.class) + ansiReset + s[len(l.class):]
			}
		}
		b.WriteString(l.indent)
		b.WriteString(s)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
