package report

import "fmt"

// dismissedColumns head the rows of dismissed differences in the table.
var dismissedColumns = []string{"REASON", "TYPE", "PATH", "GIT → LIVE", "WHY"}

// dismissedLines lists, with --explain-dismissed, every difference the
// scan dismissed as no drift, by object; nothing otherwise (the counts are
// on the table's last line, dismissedText).
func dismissedLines(r *Report, color bool, width int) []tableLine {
	var lines []tableLine
	text := func(format string, a ...any) { lines = append(lines, tableLine{text: fmt.Sprintf(format, a...)}) }
	headed := false
	for _, app := range r.Apps {
		for _, o := range app.Objects {
			if len(o.Dismissed) == 0 {
				continue
			}
			if !headed {
				text("")
				text("%s (--explain-dismissed): differences that are no drift, and why", paint(color, ansiBold, "DISMISSED"))
				lines = append(lines, tableLine{indent: rowIndent, cells: dismissedColumns, table: "dismissed"})
				headed = true
			}
			text("%s%s  (app %s)", appIndent, o.Ref(), app.Name)
			for _, d := range o.Dismissed {
				lines = append(lines, tableLine{indent: rowIndent, cells: []string{d.Reason.Text(), string(d.Type), oneLine(d.Path), cellValue(d.Git, width) + gitLiveArrow + cellValue(d.Live, width), oneLine(d.Detail)}, table: "dismissed", dim: true})
			}
		}
	}
	return lines
}

// dismissedText is the count of dismissals for the table's last line:
// "57 dismissed as no drift (defaulted 40, zero value 10, built-in 7)";
// "" when none.
func dismissedText(r *Report) string {
	if r.Stats == nil || r.Stats.Dismissed.Total() == 0 {
		return ""
	}
	return fmt.Sprintf("%d dismissed as no drift (%s)", r.Stats.Dismissed.Total(), r.Stats.Dismissed)
}
