package scanner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"
)

// A listed object is decoded for its compare alone, so only what the
// compare reads is built: its status is skipped (normalize drops it), and
// its managedFields, most of an object's size once appliers own its
// fields, stay JSON until an owner is asked for (ownership). The rest is
// decoded as the dynamic client decodes (k8s.io/apimachinery/pkg/util/json):
// integers as int64, other numbers as float64, arrays as []any, objects as
// map[string]any. The item was read from the page by encoding/json, so it
// is valid JSON here and is not checked again: the object and its metadata
// are stepped through byte by byte, and each value that is built is read by
// a jsoniter iterator (github.com/json-iterator/go, which
// structured-merge-diff already reads managedFields with), at a third of
// encoding/json's cost.

// liveJSON configures the iterators the decoding borrows.
var liveJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// decodeLive decodes one listed object: its content without status, and
// the JSON of its metadata.managedFields (nil when it has none). The
// object and its metadata are stepped through byte by byte (eachField),
// so what is not built is not read either; each value built is read by
// a jsoniter iterator.
func decodeLive(raw []byte) (obj map[string]any, managedFields []byte, err error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, nil, errors.New("a listed item that is no JSON object")
	}
	iter := liveJSON.BorrowIterator(nil)
	defer liveJSON.ReturnIterator(iter)
	value := func(v, end int) any {
		if err != nil {
			return nil
		}
		iter.ResetBytes(raw[v:end])
		iter.Error = nil
		out := readValue(iter)
		if iter.Error != io.EOF { // a number that ends the slice ends at EOF
			err = iter.Error
		}
		return out
	}
	obj = map[string]any{}
	ok := true
	eachField(raw, i, func(key []byte, v int) (int, bool) {
		end := skipValue(raw, v)
		switch string(key) {
		case "status":
		case "metadata":
			if raw[v] != '{' {
				obj["metadata"] = value(v, end)
				break
			}
			md := map[string]any{}
			managedFields = nil
			eachField(raw, v, func(key []byte, v int) (int, bool) {
				end := skipValue(raw, v)
				if string(key) == "managedFields" {
					managedFields = bytes.Clone(raw[v:end])
				} else {
					md[jsonKey(key)] = value(v, end)
				}
				return end, err == nil
			}, &ok)
			obj["metadata"] = md
		default:
			obj[jsonKey(key)] = value(v, end)
		}
		return end, err == nil
	}, &ok)
	if err != nil {
		return nil, nil, err
	}
	return obj, managedFields, nil
}

// jsonKey is the string a key's bytes (between its quotes) stand for.
func jsonKey(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key)
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s); err != nil {
		return string(key) // not reached: the page's decoder read it as JSON
	}
	return s
}

// readValue reads the next value as utiljson.Unmarshal would into an any.
func readValue(iter *jsoniter.Iterator) any {
	switch iter.WhatIsNext() {
	case jsoniter.StringValue:
		return iter.ReadString()
	case jsoniter.NumberValue:
		return number(iter, iter.ReadNumber().String())
	case jsoniter.BoolValue:
		return iter.ReadBool()
	case jsoniter.NilValue:
		iter.ReadNil()
		return nil
	case jsoniter.ArrayValue:
		list := []any{}
		for iter.ReadArray() {
			list = append(list, readValue(iter))
		}
		return list
	case jsoniter.ObjectValue:
		m := map[string]any{}
		iter.ReadMapCB(func(iter *jsoniter.Iterator, key string) bool {
			m[key] = readValue(iter)
			return true
		})
		return m
	}
	iter.ReportError("decode", "not a JSON value")
	return nil
}

// number is sigs.k8s.io/json's convertNumber with preserveInts: an
// integer that fits int64 is one, anything else a float64.
func number(iter *jsoniter.Iterator, s string) any {
	if !strings.Contains(s, ".") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		iter.ReportError("decode", fmt.Sprintf("cannot unmarshal number %s into Go value of type float64", s))
		return nil
	}
	return f
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
// other value, or a string with escapes, is for json.Unmarshal.
func headString(raw []byte, v int, dst *string) (int, bool) {
	end := skipValue(raw, v)
	switch raw[v] {
	case 'n':
		return end, true
	case '"':
		s := raw[v+1 : end-1]
		if bytes.IndexByte(s, '\\') >= 0 {
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
