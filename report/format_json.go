package report

import (
	"bytes"
	"encoding/json"
	"io"
)

// writeJSON writes the report contract as indented JSON ending in a newline.
// HTML characters are left as they are: values such as "a<b" read as
// written. The output is exactly what json.Encoder with SetIndent("", "  ")
// writes; it is indented by writeIndented, since encoding/json's own indent
// runs its validating scanner over every byte a second time (a quarter of
// a 20,000-object scan's writing of its report), and holds the indented
// copy whole.
func writeJSON(w io.Writer, r *Report) error {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return err
	}
	// Encode ends its value with a newline, which writeIndented keeps.
	return writeIndented(w, compact.Bytes(), "  ", indentChunk)
}

// indentChunk is how much indented JSON writeIndented holds before it
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
	dst := make([]byte, 0, min(2*len(src), chunk+chunk/4))
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
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
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
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
		if len(dst) >= chunk {
			if _, err := w.Write(dst); err != nil {
				return err
			}
			dst = dst[:0]
		}
	}
	if len(dst) == 0 {
		return nil
	}
	_, err := w.Write(dst)
	return err
}
