package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A cache entry's objects are JSON: [[line,{object}],...]. JSON alone
// loses which numbers were floats (the JSON reader makes 5.0 an int64), so
// the encoding fixes one form per Go type and the decoder accepts no other:
//   - an int64 is written as strconv.FormatInt writes it, and only digits
//     (with a leading minus) read as an int64;
//   - a float64 is written as strconv.FormatFloat(f, 'g', -1, 64) writes it,
//     with ".0" after it when that has neither "." nor "e" (5.0, -0.0), and
//     a number with "." or "e" reads as a float64 only when it is exactly
//     that text of the float it parses to; NaN and infinities are not
//     encoded (their files are not cached), and no number is accepted
//     that parses to one;
//   - map[string]any and []any are never nil (a nil one is not encoded),
//     and a JSON null is a nil value;
//   - strings are valid UTF-8, and an object holds a key once.

// maxCacheDepth bounds the nesting of an encoded object, on the way in and
// on the way out: Kubernetes objects are a few dozen levels deep, and a
// deeper one (which yaml.v3 allows up to 10,000 levels) is parsed each
// time rather than cached.
const maxCacheDepth = 200

// cacheJSONAPI is the jsoniter configuration of the codec: no HTML escapes,
// which only make entries longer.
var cacheJSONAPI = jsoniter.Config{EscapeHTML: false}.Froze()

// encodeObjects encodes the objects and lines of ms; false when one holds a
// value the codec cannot give back exactly.
func encodeObjects(ms []Manifest) ([]byte, bool) {
	s := cacheJSONAPI.BorrowStream(nil)
	defer cacheJSONAPI.ReturnStream(s)
	s.WriteArrayStart()
	for i, m := range ms {
		if i > 0 {
			s.WriteMore()
		}
		s.WriteArrayStart()
		s.WriteInt(m.Line)
		s.WriteMore()
		if !encodeValue(s, m.Object.Object, 0) {
			return nil, false
		}
		s.WriteArrayEnd()
	}
	s.WriteArrayEnd()
	if s.Error != nil {
		return nil, false
	}
	return bytes.Clone(s.Buffer()), true
}

// encodeValue writes v; false when it is not a value the codec reads back
// as itself.
func encodeValue(s *jsoniter.Stream, v any, depth int) bool {
	switch v := v.(type) {
	case nil:
		s.WriteNil()
	case bool:
		s.WriteBool(v)
	case string:
		if !utf8.ValidString(v) {
			return false
		}
		s.WriteString(v)
	case int64:
		s.WriteInt64(v)
	case float64:
		text, ok := floatText(v)
		if !ok {
			return false
		}
		s.WriteRaw(text)
	case map[string]any:
		if v == nil || depth >= maxCacheDepth {
			return false
		}
		s.WriteObjectStart()
		first := true
		for k, e := range v {
			if !utf8.ValidString(k) {
				return false
			}
			if !first {
				s.WriteMore()
			}
			first = false
			s.WriteObjectField(k)
			if !encodeValue(s, e, depth+1) {
				return false
			}
		}
		s.WriteObjectEnd()
	case []any:
		if v == nil || depth >= maxCacheDepth {
			return false
		}
		s.WriteArrayStart()
		for i, e := range v {
			if i > 0 {
				s.WriteMore()
			}
			if !encodeValue(s, e, depth+1) {
				return false
			}
		}
		s.WriteArrayEnd()
	default:
		return false
	}
	return true
}

// floatText is the codec's text of f (see above); false for NaN and the
// infinities.
func floatText(f float64) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	text := strconv.FormatFloat(f, 'g', -1, 64)
	if !bytes.ContainsAny([]byte(text), ".e") {
		text += ".0"
	}
	return text, true
}

// errCacheEntry is the error of an entry the decoder does not accept.
var errCacheEntry = errors.New("not an entry this build writes")

// decodeObjects decodes an entry's objects into manifests of file, checking
// each as the parser checked it (toManifest) and refusing a Secret.
func decodeObjects(data []byte, file string) ([]Manifest, error) {
	it := cacheJSONAPI.BorrowIterator(data)
	defer cacheJSONAPI.ReturnIterator(it)
	var ms []Manifest
	var err error
	if it.WhatIsNext() != jsoniter.ArrayValue {
		return nil, errCacheEntry
	}
	it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
		if it.WhatIsNext() != jsoniter.ArrayValue {
			err = errCacheEntry
			return false
		}
		field := 0
		var m Manifest
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			switch field++; field {
			case 1:
				var line int64
				if line, err = decodeInt(it); err == nil && (line < 0 || line > math.MaxInt32) {
					err = errCacheEntry
				}
				m.Line = int(line)
			case 2:
				var v any
				v, err = decodeValue(it, 0)
				obj, isMap := v.(map[string]any)
				if err == nil && !isMap {
					err = errCacheEntry
				}
				if err == nil {
					var u *unstructured.Unstructured
					if u, _, err = toManifest(obj, true); err == nil && u.GetKind() == "Secret" {
						err = errCacheEntry
					}
					m.Object = u
				}
			default:
				err = errCacheEntry
			}
			return err == nil
		})
		if err == nil && field != 2 {
			err = errCacheEntry
		}
		m.File = file
		ms = append(ms, m)
		return err == nil
	})
	if err == nil && it.Error != nil {
		err = it.Error
	}
	if err == nil {
		// At the end of its bytes the iterator's error is io.EOF; anything
		// else is text after the array.
		if it.WhatIsNext(); it.Error != io.EOF {
			err = errCacheEntry
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCacheEntry, err)
	}
	return ms, nil
}

// decodeValue reads one value as encodeValue wrote it.
func decodeValue(it *jsoniter.Iterator, depth int) (any, error) {
	switch it.WhatIsNext() {
	case jsoniter.StringValue:
		s := it.ReadString()
		if !utf8.ValidString(s) {
			return nil, errCacheEntry
		}
		return s, it.Error
	case jsoniter.NumberValue:
		return decodeNumber(it)
	case jsoniter.NilValue:
		it.ReadNil()
		return nil, it.Error
	case jsoniter.BoolValue:
		return it.ReadBool(), it.Error
	case jsoniter.ArrayValue:
		if depth >= maxCacheDepth {
			return nil, errCacheEntry
		}
		s := []any{}
		var err error
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			var v any
			v, err = decodeValue(it, depth+1)
			s = append(s, v)
			return err == nil
		})
		if err == nil {
			err = it.Error
		}
		return s, err
	case jsoniter.ObjectValue:
		if depth >= maxCacheDepth {
			return nil, errCacheEntry
		}
		m := map[string]any{}
		var err error
		n := 0
		it.ReadMapCB(func(it *jsoniter.Iterator, k string) bool {
			n++
			var v any
			if v, err = decodeValue(it, depth+1); err == nil && !utf8.ValidString(k) {
				err = errCacheEntry
			}
			m[k] = v
			return err == nil
		})
		if err == nil {
			err = it.Error
		}
		if err == nil && n != len(m) {
			err = errCacheEntry // a key twice
		}
		return m, err
	}
	return nil, errCacheEntry
}

// decodeNumber reads an int64 or a float64, each only in the form the
// encoder writes it.
func decodeNumber(it *jsoniter.Iterator) (any, error) {
	text := string(it.ReadNumber())
	if it.Error != nil {
		return nil, it.Error
	}
	if !bytes.ContainsAny([]byte(text), ".eE") {
		i, err := strconv.ParseInt(text, 10, 64)
		var buf [24]byte
		if err != nil || string(strconv.AppendInt(buf[:0], i, 10)) != text {
			return nil, errCacheEntry
		}
		return i, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, errCacheEntry
	}
	if again, ok := floatText(f); !ok || again != text {
		return nil, errCacheEntry
	}
	return f, nil
}

// decodeInt reads an int64 in the encoder's form.
func decodeInt(it *jsoniter.Iterator) (int64, error) {
	if it.WhatIsNext() != jsoniter.NumberValue {
		return 0, errCacheEntry
	}
	v, err := decodeNumber(it)
	i, ok := v.(int64)
	if err == nil && !ok {
		err = errCacheEntry
	}
	return i, err
}
