package report

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
)

// writeJSON writes the report contract as indented JSON ending in a newline.
// HTML characters are left as they are: values such as "a<b" read as
// written. The output is exactly what json.Encoder with SetIndent("", "  ")
// writes; it is indented by an indenter, since encoding/json's own indent
// runs its validating scanner over every byte a second time (a quarter of
// a 20,000-object scan's writing of its report), and holds the indented
// copy whole.
//
// The apps, nearly all of a report, are encoded in batches by the other
// cores' goroutines (one on two cores) while this one indents and writes
// the batches already encoded, in order: the report is written at the
// scan's end, when nothing else runs, and one goroutine encoding and then
// indenting it all left a core idle. A 5,000-object scan's report took
// 10.4 ms that way, 6.4 ms this way; with as many encoders as cores, 7.9
// ms, the indenting waiting its turn for a core.
func writeJSON(w io.Writer, r *Report) error {
	if len(r.Apps) < 2 {
		return writeWhole(w, r)
	}
	head := *r
	head.Apps = nil
	compact, err := encodeCompact(&head)
	if err != nil {
		return err
	}
	// The apps go where the head holds none. No string holds this text:
	// in a string a quote follows a backslash, never a comma.
	const none = `,"apps":null,`
	at := bytes.Index(compact, []byte(none))
	if at < 0 {
		return writeWhole(w, r)
	}
	batches := appBatches(len(r.Apps))
	encoded := make([]chan encodedApps, len(batches))
	for i := range encoded {
		encoded[i] = make(chan encodedApps, 1) // a worker never waits to hand one over
	}
	workers := min(max(1, runtime.GOMAXPROCS(0)-1), len(batches))
	for k := range workers {
		go func() {
			for i := k; i < len(batches); i += workers {
				b, err := encodeCompact(r.Apps[batches[i][0]:batches[i][1]])
				encoded[i] <- encodedApps{b, err}
			}
		}()
	}
	in := newIndenter(w, "  ", indentChunk, indentChunk) // the report is larger than the chunk it holds
	in.write(compact[:at+len(`,"apps":`)])
	for i := range encoded {
		e := <-encoded[i]
		if e.err != nil {
			return e.err
		}
		if i > 0 {
			e.json[0] = ',' // the batches' items are one array's
		}
		in.write(e.json[:len(e.json)-2]) // ] and encoding's newline
	}
	in.write([]byte{']'})
	in.write(compact[at+len(none)-1:])
	return in.flush()
}

// encodedApps is one batch of apps as a compact JSON array.
type encodedApps struct {
	json []byte
	err  error
}

// appBatches splits n apps into [start, end) ranges for writeJSON: enough
// that the indenting starts soon and the encoders share the work evenly.
func appBatches(n int) [][2]int {
	const most = 16
	size := (n + most - 1) / most
	var out [][2]int
	for start := 0; start < n; start += size {
		out = append(out, [2]int{start, min(start+size, n)})
	}
	return out
}

// writeWhole encodes r, then indents it.
func writeWhole(w io.Writer, r *Report) error {
	compact, err := encodeCompact(r)
	if err != nil {
		return err
	}
	return writeIndented(w, compact, "  ", indentChunk)
}

// encodeCompact is v as json.Encoder writes it without escaping HTML
// characters, with the newline Encode ends a value with.
func encodeCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// indentChunk is how much indented JSON an indenter holds before it
// writes it out. A 20,000-object report is 7.7 MB indented and 4.5 MB
// compact: indented whole, into a buffer of twice the compact size, it was
// 9 MB more at the scan's end, each page of it faulted in and cleared.
const indentChunk = 64 << 10

// writeIndented writes src, JSON as encoding/json writes it (valid, and
// with no space between tokens), to w indented as json.Indent(dst, src,
// "", indent) does: each element on a line of its own, "key": value, empty
// objects and arrays kept as {} and []. Whitespace outside strings is
// copied only at the end of src (json.Indent keeps trailing space); it
// never validates, so it must only be given encoding/json's output. It
// writes each time it holds chunk bytes or more, and at the end.
func writeIndented(w io.Writer, src []byte, indent string, chunk int) error {
	in := newIndenter(w, indent, chunk, len(src))
	in.write(src)
	return in.flush()
}

// indenter is writeIndented over JSON given in pieces: each piece must end
// outside a string (writeJSON cuts between values).
type indenter struct {
	w      io.Writer
	indent string
	chunk  int
	dst    []byte
	depth  int
	// open: the last byte given opened an object or array, and whether it
	// is empty ({} or []) is in the next piece.
	open bool
	err  error
}

// newIndenter is an indenter writing to w, for JSON of about size bytes.
func newIndenter(w io.Writer, indent string, chunk, size int) *indenter {
	return &indenter{w: w, indent: indent, chunk: chunk, dst: make([]byte, 0, min(2*size, chunk+chunk/4))}
}

// write indents src after what was given before, writing out each chunk.
// It works on copies of the indenter's state, put back at the end.
func (in *indenter) write(src []byte) {
	dst, depth, open := in.dst, in.depth, in.open
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, in.indent...)
		}
	}
	for i := 0; i < len(src) && in.err == nil; i++ {
		c := src[i]
		if open {
			open = false
			if c == '}' || c == ']' {
				dst = append(dst, c)
				continue
			}
			depth++
			newline()
		}
		switch c {
		case '"':
			// Copy the string whole: up to the quote no backslash escapes.
			j := i + 1
			for j < len(src) {
				if src[j] == '\\' {
					j += 2
					continue
				}
				if src[j] == '"' {
					break
				}
				j++
			}
			dst = append(dst, src[i:min(j+1, len(src))]...)
			i = j
		case '{', '[':
			dst = append(dst, c)
			open = true
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		case ' ', '\t', '\r', '\n':
			if depth == 0 {
				dst = append(dst, c)
			}
		default:
			dst = append(dst, c)
		}
		if len(dst) >= in.chunk {
			_, in.err = in.w.Write(dst)
			dst = dst[:0]
		}
	}
	in.dst, in.depth, in.open = dst, depth, open
}

// flush writes what is held, and says what went wrong since the start.
func (in *indenter) flush() error {
	if in.open { // an object or array never closed: not encoding/json's
		in.open = false
		in.depth++
		in.dst = append(in.dst, '\n')
		for range in.depth {
			in.dst = append(in.dst, in.indent...)
		}
	}
	if in.err != nil || len(in.dst) == 0 {
		return in.err
	}
	_, in.err = in.w.Write(in.dst)
	in.dst = in.dst[:0]
	return in.err
}
