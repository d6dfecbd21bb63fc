package render

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/calricon/driftscan/internal/kubekeys"
)

// Most manifest files are block YAML of one shape, the one kubectl, Helm
// and people write: mappings of plain or quoted keys, sequences of "- "
// items, scalars on their key's line or the next (plain, over lines too,
// or quoted without escapes on one line), literal block scalars (|, |-),
// {} and one-line flow sequences of such scalars (["*"], [get, list], []).
// yaml.v3 builds a node tree of them (one 152-byte node per value, its
// tokens and buffers) that the render throws away: a fifth of a scan's CPU
// at 5,000 plain objects without a cache. fastDocument reads that shape
// straight into the values YAMLNodeValue gives, and gives up, for yaml.v3
// to read, at anything else: a tab, a carriage return, a byte beyond
// ASCII, an anchor, alias or tag, a flow mapping that is not empty, a flow
// sequence of anything else or over more than one line, a folded or kept
// block scalar, a quoted scalar over more than one line or a plain one
// with a blank line or comment within, a key given twice or that is not a
// string, a top-level items list (whose item lines the render reports), a
// document marker other than the leading "---", and anything yaml.v3 would
// refuse. FuzzFastDocument holds it to yaml.v3.

// fastDocument is the value and the 1-based line of the root of data, one
// document of a file (SplitYAMLDocuments); false when data is not of the
// shape above, or holds no document.
func fastDocument(data []byte) (map[string]any, int, bool) {
	for _, c := range data {
		if c >= 0x7f || c < ' ' && c != '\n' {
			return nil, 0, false
		}
	}
	lines := linesPool.Get().(*[][]byte)
	defer func() {
		clear(*lines) // no file's bytes kept alive in the pool
		linesPool.Put(lines)
	}()
	*lines = splitLines((*lines)[:0], data)
	p := fastYAML{lines: *lines, virtual: -1}
	// Comments, blank lines and one leading document marker.
	line, indent, ok := p.peek()
	if ok && indent < 0 && bytes.HasPrefix(line, []byte("---")) {
		if rest := trimComment(line[3:]); len(rest) != 0 || len(line) > 3 && line[3] != ' ' {
			return nil, 0, false
		}
		p.n++
		line, indent, ok = p.peek()
	}
	if !ok || indent != 0 || isSeqItem(line) {
		return nil, 0, false
	}
	root := p.n
	m, ok := p.mapping(0)
	if !ok || p.n < len(p.lines) {
		return nil, 0, false
	}
	if _, ok := m["items"]; ok {
		return nil, 0, false
	}
	return m, root + 1, true
}

// linesPool holds the slices fastDocument splits a document's lines into:
// made anew for each document they were 2% of a cold scan's CPU.
var linesPool = sync.Pool{New: func() any { return new([][]byte) }}

// splitLines appends to dst the lines of data, as bytes.Split(data, "\n")
// gives them.
func splitLines(dst [][]byte, data []byte) [][]byte {
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return append(dst, data)
		}
		dst = append(dst, data[:i])
		data = data[i+1:]
	}
}

// fastYAML reads lines of block YAML. virtual, when not -1, is the column
// at which the line n starts for the node being read: the first key of a
// mapping that is a sequence item ("- name: web").
type fastYAML struct {
	lines               [][]byte
	n                   int
	virtual, virtualCol int
}

// peek skips blank and comment lines and returns the next line, and where
// its content starts; false at the end of data. A line made only of a
// document marker or "..." is not content fastYAML reads: it says so by
// giving it at column -1.
func (p *fastYAML) peek() ([]byte, int, bool) {
	for ; p.n < len(p.lines); p.n++ {
		line := p.lines[p.n]
		indent := indentOf(line)
		if indent == len(line) || line[indent] == '#' {
			continue
		}
		if indent == 0 && (bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("...")) || line[0] == '%') {
			return line, -1, true
		}
		if p.n == p.virtual {
			return line, p.virtualCol, true
		}
		return line, indent, true
	}
	return nil, 0, false
}

// mapping reads the block mapping whose keys start at col.
func (p *fastYAML) mapping(col int) (map[string]any, bool) {
	m := map[string]any{}
	for {
		line, indent, ok := p.peek()
		if !ok || indent >= 0 && indent < col {
			return m, true
		}
		if indent != col || isSeqItem(line[col:]) {
			return nil, false
		}
		key, rest, ok := splitKey(line[col:])
		if !ok {
			return nil, false
		}
		if _, twice := m[key]; twice {
			return nil, false
		}
		p.n++
		v, ok := p.value(rest, col)
		if !ok {
			return nil, false
		}
		m[key] = v
	}
}

// value reads the value of a key at col whose line goes on with rest
// after the key's colon.
func (p *fastYAML) value(rest []byte, col int) (any, bool) {
	text := trimComment(rest)
	if len(text) == 0 {
		line, indent, ok := p.peek()
		switch {
		case !ok || indent < 0 || indent < col:
			return nil, true
		case indent == col && isSeqItem(line[col:]):
			return p.sequence(col)
		case indent == col:
			return nil, true
		case isSeqItem(line[indent:]):
			return p.sequence(indent)
		}
		if _, _, isKey := splitKey(line[indent:]); !isKey {
			// A scalar on the line after its key's ("securityContext:"
			// then "  {}", as toYaml writes an empty map).
			p.n++
			return p.scalarLine(trimComment(line[indent:]), col)
		}
		return p.mapping(indent)
	}
	if text[0] == '|' {
		return p.literal(text, col)
	}
	return p.scalarLine(text, col)
}

// sequence reads the block sequence whose "- " start at col.
func (p *fastYAML) sequence(col int) ([]any, bool) {
	s := []any{}
	for {
		line, indent, ok := p.peek()
		if !ok || indent >= 0 && indent < col {
			return s, true
		}
		if indent != col {
			return nil, false
		}
		if !isSeqItem(line[col:]) {
			return s, true // the mapping the sequence is a value of goes on
		}
		item := line[col+1:]
		at := col + 1 + indentOf(line[col+1:])
		text := trimComment(item)
		var v any
		switch {
		case len(text) == 0:
			p.n++
			next, indent, ok := p.peek()
			switch {
			case !ok || indent <= col:
				v = nil
			case isSeqItem(next[indent:]):
				return nil, false
			default:
				if v, ok = p.mapping(indent); !ok {
					return nil, false
				}
			}
		case isSeqItem(line[at:]) || text[0] == '|':
			return nil, false
		default:
			if _, _, isKey := splitKey(line[at:]); isKey {
				p.virtual, p.virtualCol = p.n, at
				v, ok = p.mapping(at)
				p.virtual = -1
			} else {
				p.n++
				v, ok = p.scalarLine(text, col)
			}
			if !ok {
				return nil, false
			}
		}
		s = append(s, v)
	}
}

// scalarLine reads text, a scalar that is the rest of its line but a
// comment; its node is at col. The line is read already. A plain or
// single-quoted scalar may go on over lines more indented than col
// (plainLines, quotedLines); a more indented line after it is given up.
func (p *fastYAML) scalarLine(text []byte, col int) (any, bool) {
	var v any
	switch text[0] {
	case '"', '\'':
		if n := len(text); n > 2 && text[n-1] == text[0] {
			if kept, ok := kubekeys.Value(text[1 : n-1]); ok { // no quote or escape within
				v = kept
				break
			}
		}
		s, n, ok := quoted(text)
		switch {
		case ok && n == len(text):
		case !ok && text[0] == '\'' && !bytes.Contains(p.lines[p.n-1], []byte(" #")):
			// It closes on a later line (a wrapped CRD description).
			if s, ok = p.quotedLines(text, col); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
		v = s
	case '[', '{':
		switch {
		case string(text) == "{}":
			v = map[string]any{}
		case text[0] == '[':
			s, ok := flowSequence(text)
			if !ok {
				return nil, false
			}
			v = s
		default:
			return nil, false
		}
	default:
		if !plainStart(text) || bytes.Contains(text, []byte(": ")) || text[len(text)-1] == ':' {
			return nil, false
		}
		more, ok := p.plainLines(col)
		if !ok {
			return nil, false
		}
		if kept, ok := kubekeys.Value(text); ok && more == "" {
			v = kept // apps/v1, Deployment, TCP: plain strings, one copy
			break
		}
		if v, ok = fastPlain(string(text) + more); !ok {
			return nil, false
		}
	}
	if _, indent, ok := p.peek(); ok && indent > col {
		return nil, false
	}
	return v, true
}

// plainLines reads the lines that go on with a plain scalar whose node is
// at col, from the line after its first (controller-gen wraps a CRD's
// descriptions so): each more indented than col, folded into one space and
// its text. A blank line within (a line break), a comment, a line that
// holds ": " or " #", or a first line with a comment, is given up.
func (p *fastYAML) plainLines(col int) (string, bool) {
	var b []byte
	commented := bytes.Contains(p.lines[p.n-1], []byte(" #"))
	for p.n < len(p.lines) {
		line := p.lines[p.n]
		indent := indentOf(line)
		if indent == len(line) || indent <= col {
			break // a line after a blank one that goes on is scalarLine's to refuse
		}
		text := bytes.TrimRight(line[indent:], " ")
		if commented || text[0] == '#' ||
			bytes.Contains(text, []byte(": ")) || bytes.Contains(text, []byte(" #")) || text[len(text)-1] == ':' {
			return "", false
		}
		b = append(append(b, ' '), text...)
		p.n++
	}
	return string(b), true
}

// quotedLines reads a single-quoted scalar that starts with first, the
// rest of its line, and closes at the end of a later line, each more
// indented than col: its lines folded into one space each. A blank line
// within (a line break), or text after the closing quote, is given up.
func (p *fastYAML) quotedLines(first []byte, col int) (string, bool) {
	b := append([]byte(nil), bytes.TrimRight(first, " ")...)
	for ; p.n < len(p.lines); p.n++ {
		line := p.lines[p.n]
		text := bytes.Trim(line, " ")
		if len(text) == 0 || indentOf(line) <= col {
			return "", false
		}
		b = append(append(b, ' '), text...)
		for i := 0; i < len(text); i++ {
			if text[i] != '\'' {
				continue
			}
			if i+1 < len(text) && text[i+1] == '\'' {
				i++
				continue
			}
			p.n++
			return singleQuoted(b) // false when text follows the quote
		}
	}
	return "", false
}

// literal reads a literal block scalar (| or |-; its header is text) of a
// key at col, from the lines after the key's.
func (p *fastYAML) literal(header []byte, col int) (any, bool) {
	strip := false
	switch string(header) {
	case "|":
	case "|-":
		strip = true
	default:
		return nil, false // kept, indented or commented headers
	}
	// The block's indentation is its first line's, and its first line is
	// not blank.
	if p.n >= len(p.lines) {
		return nil, false
	}
	first := p.lines[p.n]
	indent := indentOf(first)
	if indent == len(first) || indent <= col {
		return nil, false
	}
	var b strings.Builder
	blank := 0 // blank lines not yet written
	for ; p.n < len(p.lines); p.n++ {
		line := p.lines[p.n]
		spaces := indentOf(line)
		if spaces == len(line) {
			if spaces > indent {
				return nil, false // spaces that are content
			}
			blank++
			continue
		}
		if spaces < indent {
			if spaces > col {
				return nil, false
			}
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		for ; blank > 0; blank-- {
			b.WriteByte('\n')
		}
		b.Write(line[indent:])
	}
	if p.n == len(p.lines) && blank == 0 {
		return nil, false // the last line has no line break
	}
	if !strip {
		b.WriteByte('\n')
	}
	return b.String(), true
}

// indentOf is the number of spaces line starts with.
func indentOf(line []byte) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// isSeqItem says whether line starts a sequence item: "-" alone or "- ".
func isSeqItem(line []byte) bool {
	return len(line) > 0 && line[0] == '-' && (len(line) == 1 || line[1] == ' ')
}

// splitKey cuts a line at the colon after its key: the key, quoted
// (quoted) or of letters, digits and "._/-" (not first) and reading as a
// string, at most maxSimpleKey long, and the rest after the colon; false
// when the line is not such a key and colon.
func splitKey(line []byte) (string, []byte, bool) {
	if len(line) > 0 && (line[0] == '"' || line[0] == '\'') {
		key, n, ok := quoted(line)
		if !ok || n > maxSimpleKey || n == len(line) || line[n] != ':' || n+1 < len(line) && line[n+1] != ' ' {
			return "", nil, false
		}
		return key, line[n+1:], true
	}
	i := 0
	for i < len(line) && keyByte(line[i], i == 0) {
		i++
	}
	if i == 0 || i > maxSimpleKey || i == len(line) || line[i] != ':' || i+1 < len(line) && line[i+1] != ' ' {
		return "", nil, false
	}
	// Most keys are the ones every object repeats: kept once, not made
	// anew. A key of keyBytes is ASCII, so it reads as itself wherever
	// yaml.v3 tags it a string (fastPlain would give it back, boxed).
	key := kubekeys.Intern(line[:i])
	if plainTag(key) != "!!str" {
		return "", nil, false
	}
	return key, line[i+1:], true
}

// maxSimpleKey bounds a key's length: yaml.v3 looks for a key's colon
// only within 1024 bytes of where the key starts, and refuses a longer key
// (its scanner's stale simple keys).
const maxSimpleKey = 1000

func keyByte(c byte, first bool) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '/' || !first && c == '-'
}

// trimComment is line without its leading and trailing spaces and a
// comment: a '#' at its start or after a space. A '#' within quotes after
// a space is taken for a comment too: such a line is given up later, as
// its quote does not close.
func trimComment(line []byte) []byte {
	line = bytes.TrimLeft(line, " ")
	if len(line) > 0 && line[0] == '#' {
		return nil
	}
	if i := bytes.Index(line, []byte(" #")); i >= 0 {
		line = line[:i]
	}
	return bytes.TrimRight(line, " ")
}

// plainStart says whether a plain scalar may start as text does: not with
// an indicator (yaml.v3 reads those otherwise, or refuses them).
func plainStart(text []byte) bool {
	switch text[0] {
	case '-', '?', ':':
		return len(text) > 1 && text[1] != ' '
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	return true
}

// quoted reads the quoted scalar that starts text: a double-quoted one
// with no escape, or a single-quoted one. It gives the value and the
// length of the scalar in text; false when the quote does not close on
// the line, or holds an escape.
func quoted(text []byte) (string, int, bool) {
	if text[0] == '"' {
		end := bytes.IndexByte(text[1:], '"')
		if end < 0 || bytes.IndexByte(text[1:end+1], '\\') >= 0 {
			return "", 0, false
		}
		return string(text[1 : end+1]), end + 2, true
	}
	for i := 1; i < len(text); i++ {
		if text[i] != '\'' {
			continue
		}
		if i+1 < len(text) && text[i+1] == '\'' {
			i++
			continue
		}
		s, ok := singleQuoted(text[:i+1])
		return s, i + 1, ok
	}
	return "", 0, false
}

// flowSequence is the value of text, a flow sequence on one line whose
// items are quoted scalars (quoted) or plain ones of letters, digits and
// "._/-" that start with a letter or digit: ["*"], [get, list], [].
func flowSequence(text []byte) ([]any, bool) {
	if text[len(text)-1] != ']' {
		return nil, false
	}
	in := bytes.TrimSpace(text[1 : len(text)-1])
	s := []any{}
	for len(in) > 0 {
		switch c := in[0]; {
		case c == '"' || c == '\'':
			v, n, ok := quoted(in)
			if !ok {
				return nil, false
			}
			s, in = append(s, v), in[n:]
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9':
			n := 0
			for n < len(in) && keyByte(in[n], false) {
				n++
			}
			v, ok := fastPlain(string(in[:n]))
			if !ok {
				return nil, false
			}
			s, in = append(s, v), in[n:]
		default:
			return nil, false
		}
		in = bytes.TrimLeft(in, " ")
		if len(in) == 0 {
			break
		}
		if in[0] != ',' {
			return nil, false
		}
		if in = bytes.TrimLeft(in[1:], " "); len(in) == 0 {
			return nil, false // a trailing comma
		}
	}
	return s, true
}

// singleQuoted is the value of a single-quoted scalar that is all of
// text, two quotes in a row standing for one.
func singleQuoted(text []byte) (string, bool) {
	var b strings.Builder
	for i := 1; i < len(text); i++ {
		if text[i] != '\'' {
			b.WriteByte(text[i])
			continue
		}
		if i+1 < len(text) && text[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), i == len(text)-1
	}
	return "", false
}

// fastPlain is the JSON value of a plain scalar, as yaml.v3 tags it
// (resolve, with no tag given) and plainScalar then reads it; false for
// what may be a timestamp, and for what plainScalar does not read.
func fastPlain(s string) (any, bool) {
	return plainScalar(plainTag(s), s)
}

// plainTag is the tag yaml.v3's resolve gives the plain scalar s, or ""
// when s may be a timestamp (resolve.go: the first byte's hint, the map
// of special values, then integers in every base, then floats).
func plainTag(s string) string {
	if s == "" {
		return "!!null"
	}
	switch c := s[0]; {
	case c == '+' || c == '-' || '0' <= c && c <= '9':
		if len(s) > 4 && s[4] == '-' && allDigits(s[:4]) {
			return "" // parseTimestamp wants four digits and a dash
		}
		if _, ok := resolveSpecial[s]; ok {
			return resolveSpecial[s]
		}
		plain := strings.ReplaceAll(s, "_", "")
		// 100m, 128Mi, 25%, 1.2.3: no number in any base. Asking strconv
		// would cost two errors (an allocation each) and the pattern.
		if numberBytes(plain) {
			if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
				return "!!int"
			}
			if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
				return "!!int"
			}
			if yamlStyleFloat.MatchString(plain) {
				if _, err := strconv.ParseFloat(plain, 64); err == nil {
					return "!!float"
				}
			}
		}
		for _, prefix := range []string{"0b", "-0b", "0o", "-0o"} {
			if strings.HasPrefix(plain, prefix) {
				return "" // plainScalar's !!int reads them, but let yaml.v3 say
			}
		}
		return "!!str"
	case c == '.':
		if tag, ok := resolveSpecial[s]; ok {
			return tag
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return "!!float"
		}
		return "!!str"
	case strings.IndexByte("yYnNtTfFoO~<", c) >= 0:
		if tag, ok := resolveSpecial[s]; ok {
			return tag
		}
	}
	return "!!str"
}

// numberBytes reports whether s holds only bytes that an integer in any
// base strconv.ParseInt reads with base 0 (a sign, 0x, 0o, 0b, hex digits)
// or a float of yamlStyleFloat can hold: the rest are no number.
func numberBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		case c == '+', c == '-', c == '.', c == 'x', c == 'X', c == 'o', c == 'O':
		default:
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// resolveSpecial is yaml.v3's map of special plain values (resolve.go).
var resolveSpecial = map[string]string{
	"true": "!!bool", "True": "!!bool", "TRUE": "!!bool",
	"false": "!!bool", "False": "!!bool", "FALSE": "!!bool",
	"~": "!!null", "null": "!!null", "Null": "!!null", "NULL": "!!null",
	".nan": "!!float", ".NaN": "!!float", ".NAN": "!!float",
	".inf": "!!float", ".Inf": "!!float", ".INF": "!!float",
	"+.inf": "!!float", "+.Inf": "!!float", "+.INF": "!!float",
	"-.inf": "!!float", "-.Inf": "!!float", "-.INF": "!!float",
	"<<": "!!merge",
}
