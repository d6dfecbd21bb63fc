package backport

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Positions in a document's text, and the extent of its nodes there.

// dash finds the "- " that starts a list item.
func (d *doc) dash(item *yaml.Node) (int, bool) {
	off := d.offset(item.Line, item.Column)
	for i := off - 1; i >= 0; i-- {
		switch d.text[i] {
		case '-':
			if i+1 < len(d.text) && (d.text[i+1] == ' ' || d.text[i+1] == '\n' || d.text[i+1] == '\r' || d.text[i+1] == '\t') {
				return i, true
			}
			return 0, false
		case ' ', '\t', '\n', '\r':
		default:
			return 0, false
		}
	}
	return 0, false
}

// offset is the byte offset of a 1-based line and rune column.
func (d *doc) offset(line, col int) int {
	off := d.lineStart(line)
	for i := 1; i < col && off < len(d.text) && d.text[off] != '\n'; i++ {
		_, size := utf8.DecodeRune(d.text[off:])
		off += size
	}
	return off
}

func (d *doc) column(off int) int {
	start := d.lineStart(d.lineOf(off))
	return utf8.RuneCount(d.text[start:off]) + 1
}

func (d *doc) lineStart(line int) int {
	if line < 1 {
		return 0
	}
	if line > len(d.lines) {
		return len(d.text)
	}
	return d.lines[line-1]
}

// lineEnd is the offset after the newline that ends line.
func (d *doc) lineEnd(line int) int {
	if line >= len(d.lines) {
		return len(d.text)
	}
	return d.lines[line]
}

func (d *doc) lineOf(off int) int {
	i, found := slices.BinarySearch(d.lines, off)
	if found {
		return i + 1
	}
	return i
}

func (d *doc) lineText(line int) string {
	return strings.TrimRight(string(d.text[d.lineStart(line):d.lineEnd(line)]), "\r\n")
}

// lineStartsAt reports whether only spaces come before off on its line.
func (d *doc) lineStartsAt(off int) bool {
	start := d.lineStart(d.lineOf(off))
	return strings.TrimLeft(string(d.text[start:off]), " ") == ""
}

// regionEnd is the end of the region of an entry that starts on line first
// and whose next sibling starts at next: after its last line that is not
// blank and not a comment at the entry's column or left of it (those belong
// to what follows).
func (d *doc) regionEnd(first, next, col int) int {
	last := d.lineOf(max(next-1, 0))
	if next >= len(d.text) {
		last = len(d.lines)
	}
	for l := last; l > first; l-- {
		t := d.lineText(l)
		trimmed := strings.TrimLeft(t, " ")
		if trimmed == "" || (strings.HasPrefix(trimmed, "#") && len(t)-len(trimmed) < col) {
			continue
		}
		return d.lineEnd(l)
	}
	return d.lineEnd(first)
}

// commentsAbove is the start of line, moved up over the comment lines
// right above it that sit at the same column.
func (d *doc) commentsAbove(line, col int) int {
	for line > 1 {
		t := d.lineText(line - 1)
		trimmed := strings.TrimLeft(t, " ")
		if !strings.HasPrefix(trimmed, "#") || len(t)-len(trimmed) != col-1 {
			break
		}
		line--
	}
	return d.lineStart(line)
}

// scalarEnd is the end of a scalar that starts at start and is written on
// one line; ok is false for block scalars and scalars over several lines.
func (d *doc) scalarEnd(start int, s snapshot) (int, bool) {
	rest := d.text[start:]
	switch {
	case s.style&yaml.DoubleQuotedStyle != 0:
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				return start + i + 1, true
			case '\n':
				return 0, false
			}
		}
	case s.style&yaml.SingleQuotedStyle != 0:
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\'':
				if i+1 < len(rest) && rest[i+1] == '\'' {
					i++
					continue
				}
				return start + i + 1, true
			case '\n':
				return 0, false
			}
		}
	case s.style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) != 0:
	default:
		if s.value != "" && !strings.Contains(s.value, "\n") && bytes.HasPrefix(rest, []byte(s.value)) {
			return start + len(s.value), true
		}
	}
	return 0, false
}

// keepCommentColumn keeps a line comment after a replaced scalar where it
// was: the spaces before it grow or shrink by the change in length, down to
// one.
func (d *doc) keepCommentColumn(start, stop int, text string) (int, string) {
	spaces := 0
	for stop+spaces < len(d.text) && d.text[stop+spaces] == ' ' {
		spaces++
	}
	if spaces == 0 || stop+spaces >= len(d.text) || d.text[stop+spaces] != '#' {
		return stop, text
	}
	want := max(spaces-(utf8.RuneCountInString(text)-utf8.RuneCount(d.text[start:stop])), 1)
	return stop + spaces, text + strings.Repeat(" ", want)
}

// flowEnd is the end of the flow collection that starts at start.
func (d *doc) flowEnd(start int) (int, bool) {
	if start >= len(d.text) || (d.text[start] != '{' && d.text[start] != '[') {
		return 0, false
	}
	depth := 0
	for i := start; i < len(d.text); i++ {
		switch c := d.text[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case '"':
			for i++; i < len(d.text) && d.text[i] != '"'; i++ {
				if d.text[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(d.text); i++ {
				if d.text[i] == '\'' {
					if i+1 < len(d.text) && d.text[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '#':
			if i > 0 && (d.text[i-1] == ' ' || d.text[i-1] == '\t') {
				for i < len(d.text) && d.text[i] != '\n' {
					i++
				}
			}
		}
	}
	return 0, false
}
