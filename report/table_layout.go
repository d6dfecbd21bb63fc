package report

import (
	"strings"
	"unicode/utf8"
)

// textWidth is how many columns s takes on a terminal: its characters,
// without the ANSI escape sequences that colour them.
func textWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == '\x1b' && i+1 < len(s) && s[i+1] == '[' {
			// CSI: parameters and intermediates up to a final byte in @..~.
			j := i + 2
			for j < len(s) && (s[j] < '@' || s[j] > '~') {
				j++
			}
			i = j + 1
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

// pad fills s with spaces to width columns.
func pad(s string, width int) string {
	if n := textWidth(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// wrap breaks one line of prose into lines of at most width columns, at
// spaces; continuation lines start with hang spaces. The line's own leading
// indent and the runs of spaces between words are kept. A word longer than a
// line (a URL, a long object name) is left whole on a line of its own, so it
// can still be copied, and the terminal wraps it. Width 0 leaves the line
// whole.
func wrap(line string, width, hang int) []string {
	if width <= 0 || textWidth(line) <= width {
		return []string{line}
	}
	indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
	var (
		out  []string
		cur  = indent
		curW = len(indent)
		// gap is the run of spaces before the next word.
		gap    string
		inLine = false // cur holds a word
	)
	rest := line[len(indent):]
	for rest != "" {
		word := rest
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			word = rest[:i]
		}
		rest = rest[len(word):]
		spaces := len(rest) - len(strings.TrimLeft(rest, " "))
		next := rest[:spaces]
		rest = rest[spaces:]
		if word == "" {
			gap += next
			continue
		}
		ww := textWidth(word)
		if inLine && curW+len(gap)+ww > width {
			out = append(out, cur)
			cur, curW, gap = strings.Repeat(" ", hang), hang, ""
		}
		cur += gap + word
		curW += len(gap) + ww
		inLine = true
		gap = next
	}
	return append(out, cur)
}

// wrapInto appends the wrapped lines of line to b, each ending in a newline.
func wrapInto(b *strings.Builder, line string, width, hang int) {
	for _, l := range wrap(line, width, hang) {
		b.WriteString(strings.TrimRight(l, " "))
		b.WriteByte('\n')
	}
}
