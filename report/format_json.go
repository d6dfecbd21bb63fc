package report

import (
	"encoding/json"
	"io"
)

// writeJSON writes the report contract as indented JSON ending in a newline.
// HTML characters are left as they are: values such as "a<b" read as
// written.
func writeJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
