package report

import (
	"strings"
	"unicode/utf8"
)

// The narrowest a cut path or who cell gets on a narrow terminal; below
// this a line runs over rather than say nothing.
const (
	minPathWidth = 16
	minWhoWidth  = 10
)

// findingColumns are the widths of the findings table's columns across the
// whole report, and whether values go on a line of their own.
type findingColumns struct {
	class, typ, path, values, who, age int
	// stacked: the row is class, type, path, who, age, and "git → live" is
	// on the next line, starting under the path.
	stacked bool
}

// layoutFindings measures every row and picks the layout: one line per
// finding when it fits width (or width is 0), stacked otherwise, with the
// path and who columns shrunk to what is left.
func layoutFindings(rows []*findingRow, width int) findingColumns {
	c := findingColumns{
		class: textWidth(colClass), typ: textWidth(colType), path: textWidth(colPath),
		values: textWidth(colValues), who: textWidth(colWho), age: textWidth(colAge),
	}
	for _, r := range rows {
		c.class = max(c.class, textWidth(string(r.class)))
		c.typ = max(c.typ, textWidth(r.typ))
		c.path = max(c.path, textWidth(r.path))
		c.values = max(c.values, textWidth(r.git)+arrowWidth+textWidth(r.live))
		c.who = max(c.who, textWidth(r.who))
		c.age = max(c.age, textWidth(r.age))
	}
	gap := len(colGap)
	inline := len(rowIndent) + c.class + gap + c.typ + gap + c.path + gap + c.values + gap + c.who + gap + c.age
	if width <= 0 || inline <= width {
		return c
	}
	// Stacked, the who column holds the manager; the person has a line.
	c.stacked = true
	c.who = textWidth(colWho)
	for _, r := range rows {
		c.who = max(c.who, textWidth(r.manager))
	}
	room := width - len(rowIndent) - c.class - gap - c.typ - gap - gap - gap - c.age // path + who
	if c.path+c.who <= room {
		return c
	}
	who := min(c.who, max(minWhoWidth, room/3))
	path := max(minPathWidth, room-who)
	if path > c.path {
		path = c.path
		who = min(c.who, max(minWhoWidth, room-path))
	}
	c.path, c.who = path, who
	return c
}

// pathColumn is where the path column starts, counted from the line's start.
func (c findingColumns) pathColumn() int {
	return len(rowIndent) + c.class + len(colGap) + c.typ + len(colGap)
}

func (c findingColumns) writeHeader(b *strings.Builder, color bool) {
	if !c.stacked {
		b.WriteString(joinCells(rowIndent, []string{colClass, colType, colPath, colValues, colWho, colAge},
			[]int{c.class, c.typ, c.path, c.values, c.who, c.age}))
		b.WriteByte('\n')
		return
	}
	b.WriteString(joinCells(rowIndent, []string{colClass, colType, colPath, colWho, colAge},
		[]int{c.class, c.typ, c.path, c.who, c.age}))
	b.WriteByte('\n')
	b.WriteString(strings.Repeat(" ", c.pathColumn()) + paint(color, ansiDim, colValues))
	b.WriteByte('\n')
}

// writeRow writes a finding: its row, its values (on the row, or under the
// path when stacked, followed by the person the audit log names) and, when the row has no room for it, why it is ignored
// on a line of its own.
func (c findingColumns) writeRow(b *strings.Builder, r *findingRow, width int, color bool) {
	class := pad(string(r.class), c.class)
	if color && !r.ignored {
		if cc := classColor[r.class]; cc != "" {
			class = cc + string(r.class) + ansiReset + strings.Repeat(" ", c.class-textWidth(string(r.class)))
		}
	}
	var out []string
	var line string
	if !c.stacked {
		line = joinCells(rowIndent, []string{class, r.typ, r.path, r.git + gitLiveArrow + r.live, r.who, r.age},
			[]int{c.class, c.typ, c.path, c.values, c.who, c.age})
	} else {
		line = joinCells(rowIndent, []string{class, r.typ, cutStart(r.path, c.path), cut(r.manager, c.who), r.age},
			[]int{c.class, c.typ, c.path, c.who, c.age})
	}
	noteInline := r.note != "" && (width <= 0 || textWidth(pad(line, len(rowIndent)+c.rowWidth()))+len(colGap)+textWidth(r.note) <= width)
	if noteInline {
		line = pad(line, len(rowIndent)+c.rowWidth()) + colGap + r.note
	}
	out = append(out, line)
	if c.stacked {
		room := 0
		if width > 0 {
			room = width - c.pathColumn()
		}
		out = append(out, strings.Repeat(" ", c.pathColumn())+fitValues(r.git, r.live, room))
		if r.person != "" {
			out = append(out, wrap(strings.Repeat(" ", c.pathColumn())+r.person, width, c.pathColumn()+2)...)
		}
	}
	if r.note != "" && !noteInline {
		out = append(out, wrap(hintIndent+r.note, width, len(hintIndent)+1)...)
	}
	writeLines(b, out, color && r.ignored)
}

// rowWidth is the width of a row's cells after the indent, the last column
// padded.
func (c findingColumns) rowWidth() int {
	g := len(colGap)
	if c.stacked {
		return c.class + g + c.typ + g + c.path + g + c.who + g + c.age
	}
	return c.class + g + c.typ + g + c.path + g + c.values + g + c.who + g + c.age
}

// fitValues is "git → live" in at most room columns (0: no limit): when
// both do not fit, each is cut in the middle, the shorter one giving the
// longer what it does not need.
func fitValues(git, live string, room int) string {
	gw, lw := utf8.RuneCountInString(git), utf8.RuneCountInString(live)
	budget := room - arrowWidth
	if room <= 0 || gw+lw <= budget {
		return git + gitLiveArrow + live
	}
	budget = max(budget, 2)
	half := budget / 2
	switch {
	case gw <= half:
		lw = budget - gw
	case lw <= budget-half:
		gw = budget - lw
	default:
		gw, lw = half, budget-half
	}
	return cut(git, gw) + gitLiveArrow + cut(live, lw)
}

// joinCells pads each cell but the last to its width and joins them with the
// column gap.
func joinCells(indent string, cells []string, widths []int) string {
	var b strings.Builder
	b.WriteString(indent)
	for i, cell := range cells {
		if i > 0 {
			b.WriteString(colGap)
		}
		if i < len(cells)-1 {
			cell = pad(cell, widths[i])
		}
		b.WriteString(cell)
	}
	return b.String()
}

// debtColumns are the widths of the debts table's first three columns.
type debtColumns struct{ kind, owner, target int }

func layoutDebts(debts []*Debt) debtColumns {
	var c debtColumns
	for _, d := range debts {
		c.kind = max(c.kind, textWidth(string(d.Kind)))
		c.owner = max(c.owner, textWidth(orDash(d.Owner)))
		c.target = max(c.target, textWidth(oneLine(d.Rule.Target())))
	}
	return c
}

// writeRow writes a debt on one line when it fits width, else what it says
// about the rule on the lines under it.
func (c debtColumns) writeRow(b *strings.Builder, d *Debt, width int) {
	cells := []string{string(d.Kind), orDash(d.Owner), oneLine(d.Rule.Target()), oneLine(debtText(*d))}
	widths := []int{c.kind, c.owner, c.target, 0}
	if line := joinCells(appIndent, cells, widths); width <= 0 || textWidth(line) <= width {
		b.WriteString(line)
		b.WriteByte('\n')
		return
	}
	room := width - len(appIndent) - c.kind - c.owner - 2*len(colGap)
	cells[2] = cut(cells[2], max(room, minPathWidth))
	b.WriteString(strings.TrimRight(joinCells(appIndent, cells[:3], widths[:3]), " "))
	b.WriteByte('\n')
	wrapInto(b, rowIndent+cells[3], width, len(rowIndent))
}

// arrowWidth is the columns gitLiveArrow takes ("→" is three bytes).
var arrowWidth = textWidth(gitLiveArrow)

// cellColumns are the column widths of one table of plain cells.
type cellColumns []int

// layoutTables measures the rows of every table of plain cells, by name.
func layoutTables(lines []tableLine) map[string]cellColumns {
	out := map[string]cellColumns{}
	for _, l := range lines {
		if l.cells == nil {
			continue
		}
		c := out[l.table]
		for i, cell := range l.cells {
			if i >= len(c) {
				c = append(c, 0)
			}
			c[i] = max(c[i], textWidth(cell))
		}
		out[l.table] = c
	}
	return out
}

func (c cellColumns) writeRow(b *strings.Builder, l tableLine, width int, color bool) {
	out := []string{joinCells(l.indent, l.cells, c)}
	if n := len(l.cells); width > 0 && n > 1 && textWidth(out[0]) > width {
		out = []string{joinCells(l.indent, l.cells[:n-1], c)}
		out = append(out, wrap(l.indent+"  "+l.cells[n-1], width, len(l.indent)+2)...)
	}
	writeLines(b, out, color && l.dim)
}

// writeLines writes lines without their trailing blanks, each dimmed after
// its indent when dim.
func writeLines(b *strings.Builder, lines []string, dim bool) {
	for _, l := range lines {
		l = strings.TrimRight(l, " ")
		if dim {
			body := strings.TrimLeft(l, " ")
			l = l[:len(l)-len(body)] + ansiDim + body + ansiReset
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
}
