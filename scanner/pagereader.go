package scanner

import (
	"errors"
	"fmt"
	"io"
)

// pageReader reads a LIST response body one JSON value at a time through a
// buffer that holds about one item, checking each value's syntax as
// encoding/json does (RFC 8259: strings without control characters and with
// valid escapes, numbers in JSON's grammar, nesting up to maxPageDepth)
// without building anything. encoding/json's Decoder did the same work with
// a state machine a byte at a time, at about a tenth of the speed: it was
// the largest single part of a warm scan's CPU (0.067 of 0.63 s at 5,000
// objects).
type pageReader struct {
	r   io.Reader
	buf []byte
	pos int // the next byte to read is buf[pos]
	eof bool
	err error // the reader's error, other than io.EOF
}

// maxPageDepth bounds the nesting of a value, as encoding/json bounds it.
const maxPageDepth = 10000

// pageChunk is how much pageReader asks its reader for at once.
const pageChunk = 64 << 10

var errPageEnd = errors.New("unexpected end of the LIST response")

func newPageReader(r io.Reader) *pageReader {
	return &pageReader{r: r, buf: make([]byte, 0, pageChunk)}
}

// fill reads at least atLeast more bytes into buf (fewer at the end of
// the input), first dropping the bytes already read (those before pos,
// which becomes 0); false when there was nothing more to read.
func (p *pageReader) fill(atLeast int) bool {
	if p.eof || p.err != nil {
		return false
	}
	if p.pos > 0 {
		n := copy(p.buf, p.buf[p.pos:])
		p.buf, p.pos = p.buf[:n], 0
	}
	if room := cap(p.buf) - len(p.buf); room < pageChunk/2 || room < atLeast {
		grown := make([]byte, len(p.buf), max(2*cap(p.buf), len(p.buf)+atLeast+pageChunk/2))
		copy(grown, p.buf)
		p.buf = grown
	}
	read := 0
	for read < atLeast {
		n, err := p.r.Read(p.buf[len(p.buf):cap(p.buf)])
		p.buf = p.buf[:len(p.buf)+n]
		read += n
		switch {
		case err == io.EOF:
			p.eof = true
			return read > 0
		case err != nil:
			p.err = err
			return read > 0
		}
	}
	return true
}

// failed is the error for input that ended early: the reader's own, or
// errPageEnd.
func (p *pageReader) failed() error {
	if p.err != nil {
		return p.err
	}
	return errPageEnd
}

// peek skips white space and returns the next byte without reading it.
func (p *pageReader) peek() (byte, error) {
	for {
		for p.pos < len(p.buf) {
			switch c := p.buf[p.pos]; c {
			case ' ', '\t', '\n', '\r':
				p.pos++
			default:
				return c, nil
			}
		}
		if !p.fill(1) {
			return 0, p.failed()
		}
	}
}

// expect reads the byte want, after white space.
func (p *pageReader) expect(want byte) error {
	c, err := p.peek()
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("invalid character %q in the LIST response, want %q", c, want)
	}
	p.pos++
	return nil
}

// value reads the next JSON value, after white space, and returns its
// bytes, which are valid until the next call.
func (p *pageReader) value() ([]byte, error) {
	return p.valueKeys(nil)
}

// valueKeys is value that, when the value is an object and keys is not
// nil, sets *keys to the offsets in it of its keys' opening quotes.
func (p *pageReader) valueKeys(keys *[]int) ([]byte, error) {
	if _, err := p.peek(); err != nil {
		return nil, err
	}
	for {
		if keys != nil {
			*keys = (*keys)[:0]
		}
		end, err := scanJSON(p.buf, p.pos, 0, p.eof || p.err != nil, keys)
		if err == nil {
			v := p.buf[p.pos:end]
			if keys != nil {
				for i := range *keys {
					(*keys)[i] -= p.pos
				}
			}
			p.pos = end
			return v, nil
		}
		if err != errShort {
			return nil, err
		}
		// A value is checked from its start again after each fill, so
		// each fill at least doubles what is held of it: a body that
		// comes a byte at a time costs a few passes over a value, not one
		// per byte.
		if !p.fill(max(len(p.buf)-p.pos, 512)) {
			return nil, p.failed()
		}
	}
}

// errShort: the value goes on past the bytes read so far.
var errShort = errors.New("short")

// scanJSON checks the JSON value at b[i] and returns the index after it.
// It returns errShort when b ends inside it, unless final (b holds all
// there is: then that is a syntax error). When the value is an object and
// keys is not nil, the index of each of its keys' opening quote is
// appended to *keys (not those of the objects inside it).
func scanJSON(b []byte, i, depth int, final bool, keys *[]int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, short(final)
	}
	switch c := b[i]; {
	case c == '"':
		return scanString(b, i, final)
	case c == '{' || c == '[':
		if depth >= maxPageDepth {
			return 0, fmt.Errorf("the LIST response nests deeper than %d", maxPageDepth)
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == close {
			return i + 1, nil
		}
		for {
			var err error
			if close == '}' {
				if i = skipSpace(b, i); i >= len(b) {
					return 0, short(final)
				}
				if b[i] != '"' {
					return 0, syntaxError(b[i], "an object key")
				}
				if keys != nil {
					*keys = append(*keys, i)
				}
				if i, err = scanString(b, i, final); err != nil {
					return 0, err
				}
				if i = skipSpace(b, i); i >= len(b) {
					return 0, short(final)
				}
				if b[i] != ':' {
					return 0, syntaxError(b[i], "':' after an object key")
				}
				i++
			}
			if i, err = scanJSON(b, i, depth+1, final, nil); err != nil {
				return 0, err
			}
			if i = skipSpace(b, i); i >= len(b) {
				return 0, short(final)
			}
			switch b[i] {
			case ',':
				i++
			case close:
				return i + 1, nil
			default:
				return 0, syntaxError(b[i], fmt.Sprintf("',' or '%c'", close))
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i, final)
	case c == 't':
		return scanLiteral(b, i, "true", final)
	case c == 'f':
		return scanLiteral(b, i, "false", final)
	case c == 'n':
		return scanLiteral(b, i, "null", final)
	default:
		return 0, syntaxError(c, "the beginning of a value")
	}
}

func short(final bool) error {
	if final {
		return errPageEnd
	}
	return errShort
}

func syntaxError(c byte, want string) error {
	return fmt.Errorf("invalid character %q in the LIST response, looking for %s", c, want)
}

// scanString checks the string at b[i] (its opening quote).
func scanString(b []byte, i int, final bool) (int, error) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c < 0x20:
			return 0, syntaxError(c, "a string's end")
		case c == '\\':
			if i+1 >= len(b) {
				return 0, short(final)
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(b) {
					return 0, short(final)
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, syntaxError(h, "a hex digit of a \\u escape")
					}
				}
				i += 5
			default:
				return 0, syntaxError(b[i+1], "an escape")
			}
		}
	}
	return 0, short(final)
}

// scanNumber checks the number at b[i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// A number that reaches the end of b may go on, unless final.
func scanNumber(b []byte, i int, final bool) (int, error) {
	digits := func(i int) (int, bool) {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i, i > start
	}
	atEnd := func(i int) error {
		if i >= len(b) {
			return short(final)
		}
		return syntaxError(b[i], "a digit")
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, short(final)
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i, _ = digits(i)
	default:
		return 0, syntaxError(b[i], "a digit")
	}
	if i < len(b) && b[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return 0, atEnd(i)
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return 0, atEnd(i)
		}
	}
	if i >= len(b) && !final {
		return 0, errShort // more digits may follow
	}
	return i, nil
}

// scanLiteral checks that b[i] starts lit (true, false, null).
func scanLiteral(b []byte, i int, lit string, final bool) (int, error) {
	for j := 0; j < len(lit); j++ {
		if i+j >= len(b) {
			return 0, short(final)
		}
		if b[i+j] != lit[j] {
			return 0, syntaxError(b[i+j], "the literal "+lit)
		}
	}
	return i + len(lit), nil
}
