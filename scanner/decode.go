package scanner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"

	"github.com/calricon/driftscan/internal/kubekeys"
)

// A listed object is decoded for its compare alone, so only what the
// compare reads is built: its status is skipped (normalize drops it), and
// its managedFields, most of an object's size once appliers own its
// fields, stay JSON until an owner is asked for (ownership). The rest is
// decoded as the dynamic client decodes (k8s.io/apimachinery/pkg/util/json):
// integers as int64, other numbers as float64, arrays as []any, objects as
// map[string]any, and pruned as the compare prunes it (PruneEmpty). The
// page's reader checked the item (scanJSON), so it is valid JSON here,
// nested no deeper than maxPageDepth, and is not checked again: liveValue
// builds each value in one pass over its bytes. It took a third of
// jsoniter's time, which took a third of encoding/json's.

// liveJSON configures the iterators that read managedFields (ownership).
var liveJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// decodeLive decodes one listed object: its content without status, and
// the JSON of its metadata.managedFields (nil when it has none). Nulls
// and empty lists and maps are left out of every map, as PruneEmpty
// would leave them out after (a list keeps its items): the compare reads
// them so, and the pruning walk, which visited every map of every object
// again, was a tenth of a cold scan's compare.
func decodeLive(raw []byte) (obj map[string]any, managedFields []byte, err error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, nil, errors.New("a listed item that is no JSON object")
	}
	obj = map[string]any{}
	ok := true
	eachField(raw, i, func(key []byte, v int) (int, bool) {
		var val any
		end := 0
		k := jsonKey(key)
		switch k {
		case "status":
			return skipValue(raw, v), true
		case "metadata":
			managedFields = nil // the last metadata's, as utiljson keeps the last
			if raw[v] != '{' {
				val, end, err = liveValue(raw, v)
				break
			}
			md := map[string]any{}
			end = eachField(raw, v, func(key []byte, v int) (int, bool) {
				k := jsonKey(key)
				if k == "managedFields" {
					end := skipValue(raw, v)
					managedFields = bytes.Clone(raw[v:end])
					return end, true
				}
				val, end, e := liveValue(raw, v)
				setPruned(md, k, val)
				err = e
				return end, err == nil
			}, &ok)
			val = md
		default:
			val, end, err = liveValue(raw, v)
		}
		setPruned(obj, k, val)
		return end, err == nil && ok
	}, &ok)
	if err != nil {
		return nil, nil, err
	}
	return obj, managedFields, nil
}

// setPruned sets m[k] to v, or deletes k when v is empty (a later
// duplicate key wins, as it does in utiljson).
func setPruned(m map[string]any, k string, v any) {
	if empty(v) {
		delete(m, k)
		return
	}
	m[k] = v
}

// liveValue decodes the JSON value at raw[i] (valid, as decodeLive's
// input is) as utiljson.Unmarshal does into an any, pruned as PruneEmpty
// prunes it, and returns the index after it.
func liveValue(raw []byte, i int) (any, int, error) {
	switch raw[i] {
	case '"':
		if v, end, ok := keptValue(raw, i); ok {
			return v, end, nil
		}
		return liveString(raw, i)
	case '{':
		m := map[string]any{}
		i = skipSpace(raw, i+1)
		for raw[i] != '}' {
			k, end := liveKey(raw, i)
			i = skipSpace(raw, skipSpace(raw, end)+1) // past ':'
			var v any
			var err error
			if v, i, err = liveValue(raw, i); err != nil {
				return nil, 0, err
			}
			setPruned(m, k, v)
			if i = skipSpace(raw, i); raw[i] == ',' {
				i = skipSpace(raw, i+1)
			}
		}
		return m, i + 1, nil
	case '[':
		list := []any{}
		i = skipSpace(raw, i+1)
		for raw[i] != ']' {
			v, end, err := liveValue(raw, i)
			if err != nil {
				return nil, 0, err
			}
			list = append(list, v)
			if i = skipSpace(raw, end); raw[i] == ',' {
				i = skipSpace(raw, i+1)
			}
		}
		return list, i + 1, nil
	case 't':
		return true, i + len("true"), nil
	case 'f':
		return false, i + len("false"), nil
	case 'n':
		return nil, i + len("null"), nil
	}
	end := skipValue(raw, i)
	n, err := liveNumber(raw[i:end])
	return n, end, err
}

// keptValue is kubekeys' kept copy of the string at raw[i] (its opening
// quote), boxed, and the index after it: the defaults every live object
// holds are then not made anew in each. false for a string it does not
// keep, or one with an escape.
func keptValue(raw []byte, i int) (any, int, bool) {
	j := bytes.IndexByte(raw[i+1:min(len(raw), i+2+kubekeys.MaxValue)], '"')
	if j < 0 {
		return nil, 0, false
	}
	s := raw[i+1 : i+1+j]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, 0, false
	}
	v, ok := kubekeys.Value(s)
	return v, i + j + 2, ok
}

// liveKey is the key at raw[i] (its opening quote), as jsonKey reads
// it, and the index after it.
func liveKey(raw []byte, i int) (string, int) {
	end := skipValue(raw, i)
	return jsonKey(raw[i+1 : end-1]), end
}

// liveString decodes the string at raw[i] (its opening quote). A string of
// ASCII or valid UTF-8 without an escape is its bytes; any other is left
// to encoding/json, which replaces invalid UTF-8 as utiljson does.
func liveString(raw []byte, i int) (string, int, error) {
	ascii := true
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			if b := raw[i+1 : j]; ascii || utf8.Valid(b) {
				return string(b), j + 1, nil
			}
			j = len(raw)
		case c == '\\':
			j = len(raw)
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	end := skipValue(raw, i)
	var s string
	if err := json.Unmarshal(raw[i:end], &s); err != nil {
		return "", 0, err
	}
	return s, end, nil
}

// liveNumber is sigs.k8s.io/json's convertNumber with preserveInts: an
// integer that fits int64 is one, anything else a float64.
func liveNumber(b []byte) (any, error) {
	// Most are a few digits: added up here, without a string.
	if n := len(b); n > 0 && n <= 18 {
		neg := b[0] == '-'
		digits := b
		if neg {
			digits = b[1:]
		}
		var v int64
		plain := len(digits) > 0
		for _, c := range digits {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			v = v*10 + int64(c-'0')
		}
		if plain {
			if neg {
				v = -v
			}
			return v, nil
		}
	}
	s := string(b)
	if !strings.Contains(s, ".") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("cannot unmarshal number %s into Go value of type float64", s)
	}
	return f, nil
}

// jsonKey is the string a key's bytes (between its quotes) stand for.
func jsonKey(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 && utf8.Valid(key) {
		return kubekeys.Intern(key)
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s); err != nil {
		return string(key) // not reached: the page's decoder read it as JSON
	}
	return s
}

// readHead decodes what itemHead holds of a listed item, as
// json.Unmarshal into it would, without building the rest: every item of
// every page has its head read, declared or not, and encoding/json would
// check the whole item again and read each key it skips. raw is valid JSON
// (the page's decoder read it). keys, when not nil, are the offsets of
// raw's keys, which the page's decoder records as it checks the item
// (pageReader.valueKeys): the values of the keys that are not the head's
// (spec, status, data, most of a page's bytes) are then not stepped over
// again; without them the rest of the item is stepped over a byte at a
// time. Anything but plain ASCII keys and string values without escapes,
// where the two could differ, is left to json.Unmarshal.
func readHead(raw []byte, keys []int, h *itemHead) error {
	var got itemHead
	if !scanHead(raw, keys, &got) {
		return json.Unmarshal(raw, h)
	}
	*h = got
	return nil
}

// scanHead reads raw's head into h, with keys as readHead takes them;
// false when json.Unmarshal must.
func scanHead(raw []byte, keys []int, h *itemHead) bool {
	ok := true
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	field := func(key []byte, v int) (int, bool) {
		switch {
		case !plainASCII(key):
			return 0, false
		case asciiFold(key, "apiVersion"):
			return headString(raw, v, &h.APIVersion)
		case asciiFold(key, "kind"):
			return headString(raw, v, &h.Kind)
		case asciiFold(key, "metadata"):
			switch raw[v] {
			case 'n':
				return skipValue(raw, v), true
			case '{':
			default:
				return 0, false
			}
			end := eachField(raw, v, func(key []byte, v int) (int, bool) {
				switch {
				case !plainASCII(key):
					return 0, false
				case asciiFold(key, "name"):
					return headString(raw, v, &h.Metadata.Name)
				case asciiFold(key, "namespace"):
					return headString(raw, v, &h.Metadata.Namespace)
				case asciiFold(key, "uid"):
					return headString(raw, v, &h.Metadata.UID)
				case asciiFold(key, "resourceVersion"):
					return headString(raw, v, &h.Metadata.ResourceVersion)
				}
				return skipValue(raw, v), true
			}, &ok)
			return end, ok
		}
		if keys != nil {
			return v, true // the caller goes on from the next key
		}
		return skipValue(raw, v), true
	}
	if keys != nil {
		for _, k := range keys {
			end := skipValue(raw, k) // the key, quotes included
			if _, fine := field(raw[k+1:end-1], skipSpace(raw, skipSpace(raw, end)+1)); !fine {
				return false
			}
		}
		return true
	}
	i = eachField(raw, i, field, &ok)
	return ok && i > 0
}

// eachField calls field with each key of the object at raw[i] (its bytes
// between the quotes) and the index of its value; field returns the index
// after the value, or false to stop. It returns the index after the
// object, or 0 and ok cleared when field stopped.
func eachField(raw []byte, i int, field func(key []byte, v int) (int, bool), ok *bool) int {
	i = skipSpace(raw, i+1) // past '{'
	for *ok && i < len(raw) && raw[i] != '}' {
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		end := skipValue(raw, i) // the key, quotes included
		key := raw[i+1 : end-1]
		v := skipSpace(raw, skipSpace(raw, end)+1) // past ':'
		next, fine := field(key, v)
		if !fine {
			*ok = false
			return 0
		}
		i = skipSpace(raw, next)
	}
	return i + 1
}

// headString sets *dst to the string at raw[v]; a null leaves it. Any
// other value, or a string with escapes or bytes that are not UTF-8
// (which json.Unmarshal reads as U+FFFD), is for json.Unmarshal.
func headString(raw []byte, v int, dst *string) (int, bool) {
	end := skipValue(raw, v)
	switch raw[v] {
	case 'n':
		return end, true
	case '"':
		s := raw[v+1 : end-1]
		if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
			return 0, false
		}
		*dst = string(s)
		return end, true
	}
	return 0, false
}

// skipValue returns the index after the JSON value at raw[i].
func skipValue(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		for i++; i < len(raw); i++ {
			switch raw[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return i
	case '{', '[':
		depth := 0
		for ; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				i = skipValue(raw, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for ; i < len(raw); i++ { // a number, true, false or null
		switch raw[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// plainASCII: no escapes and no bytes beyond ASCII, where encoding/json's
// case folding of keys is ASCII's.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// asciiFold is encoding/json's key match for an ASCII key: letters match
// regardless of case.
func asciiFold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range key {
		a, b := key[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
