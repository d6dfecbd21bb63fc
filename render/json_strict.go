package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// strictJSON checks one JSON value as the YAML reader checks a document:
// text that is not valid UTF-8, and an object that holds a key twice, are
// errors (encoding/json would replace the bytes with U+FFFD and keep the
// last value). offset is the error's position in raw.
func strictJSON(raw []byte) (offset int, err error) {
	if !utf8.Valid(raw) {
		i := 0
		for i < len(raw) {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return i, errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	// One set of keys per open object; nil for an open array.
	var stack []map[string]bool
	expectKey := false
	for {
		at := int(dec.InputOffset())
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return 0, nil
		}
		if err != nil {
			return at, err
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, map[string]bool{})
			case '[':
				stack = append(stack, nil)
			default:
				stack = stack[:len(stack)-1]
			}
			expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
			continue
		}
		if expectKey {
			key := tok.(string)
			keys := stack[len(stack)-1]
			if keys[key] {
				return int(dec.InputOffset()) - 1, fmt.Errorf("key %q is defined twice in one object", key)
			}
			keys[key] = true
			expectKey = false
			continue
		}
		// A value: in an object, a key comes next.
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}
