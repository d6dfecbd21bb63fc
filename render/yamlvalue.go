package render

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// YAMLNodeValue decodes a YAML node into JSON types, the ones unstructured
// objects hold (int64, not int; map[string]any, not map[any]any), exactly
// as marshalling the value gopkg.in/yaml.v3 decodes to JSON and reading it
// back with the API machinery's JSON decoder would (jsonRoundTrip).
//
// Most nodes are read straight into those types (plainValue), without
// yaml.v3's reflection. A node holding anything plainValue does not read
// exactly as yaml.v3 would (an alias, a merge key, a key that is not a
// string or is given twice, a timestamp, a number beyond int64 or float64,
// text that is not UTF-8, an unusual tag) is decoded by yaml.v3 instead
// (decodedValue), which also reports its errors and guards against alias
// bombs.
func YAMLNodeValue(n *yaml.Node) (any, error) {
	if v, ok := plainValue(n); ok {
		return v, nil
	}
	return decodedValue(n)
}

// decodedValue is YAMLNodeValue through yaml.v3's decoder: converted in
// place (jsonValue) when the decoded value's JSON form is plain, else by
// the JSON round trip.
func decodedValue(n *yaml.Node) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	if out, ok := jsonValue(v); ok {
		return out, nil
	}
	v = nil
	if err := n.Decode(&v); err != nil { // afresh: jsonValue may have changed v
		return nil, err
	}
	out, err := jsonRoundTrip(v)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", n.Line, err)
	}
	return out, nil
}

// plainValue is what decodedValue returns for n, read from the node tree
// directly; false when n holds anything whose value is not certain to be
// that (see YAMLNodeValue). It mirrors gopkg.in/yaml.v3 v3.0.1 decoding
// into an interface{} (decode.go: mapping, sequence, scalar; resolve.go:
// resolve), for the node kinds and tags it accepts:
//   - a mapping whose keys are all !!str scalars, each given once, is a
//     map[string]any (yaml.v3 ignores a mapping's or sequence's own tag);
//   - a sequence is a []any of the same length, never nil;
//   - a scalar's value follows from its Tag and Value alone (plainScalar).
func plainValue(n *yaml.Node) (any, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		return plainScalar(n.Tag, n.Value)
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, ok := plainValue(e)
			if !ok {
				return nil, false
			}
			s[i] = v
		}
		return s, true
	case yaml.MappingNode:
		if len(n.Content)%2 != 0 {
			return nil, false
		}
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || !utf8.ValidString(k.Value) {
				return nil, false
			}
			v, ok := plainValue(n.Content[i+1])
			if !ok {
				return nil, false
			}
			m[k.Value] = v
		}
		if len(m) != len(n.Content)/2 {
			return nil, false // a key twice: yaml.v3's error
		}
		return m, true
	}
	return nil, false // an alias, a document
}

// plainScalar is the JSON value of a scalar node with this tag and value,
// as yaml.v3's resolve(tag, value) and then jsonValue make it; false for
// any other tag, and for a value that resolve would refuse or turn into
// something that is not plain in JSON. The parser tags a plain scalar with
// what resolve("", value) finds, and a quoted one !!str.
func plainScalar(tag, value string) (any, bool) {
	switch tag {
	case "!!str":
		return value, utf8.ValidString(value)
	case "!!null":
		switch value {
		case "", "~", "null", "Null", "NULL":
			return nil, true
		}
	case "!!bool":
		switch value {
		case "true", "True", "TRUE":
			return true, true
		case "false", "False", "FALSE":
			return false, true
		}
	case "!!int":
		if signOrDigit(value) {
			if i, err := strconv.ParseInt(strings.ReplaceAll(value, "_", ""), 0, 64); err == nil {
				return i, true
			}
		}
	case "!!float":
		if f, ok := plainFloat(value); ok {
			return jsonFloat(f)
		}
	}
	return nil, false
}

// plainFloat is the float64 that resolve("!!float", value) gives, when it
// gives one without an error: false for what resolve finds in its map
// (.inf, .nan, ...: not plain in JSON anyway) and for an integer that only
// fits a uint64.
func plainFloat(value string) (float64, bool) {
	switch {
	case value == "":
		return 0, false
	case value[0] == '.':
		f, err := strconv.ParseFloat(value, 64)
		return f, err == nil
	case !signOrDigit(value):
		return 0, false
	}
	plain := strings.ReplaceAll(value, "_", "")
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return float64(i), true
	}
	if !yamlStyleFloat.MatchString(plain) {
		return 0, false
	}
	f, err := strconv.ParseFloat(plain, 64)
	return f, err == nil
}

// yamlStyleFloat is yaml.v3's (resolve.go) pattern of a float.
var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// signOrDigit reports whether value starts with a sign or a digit: the
// values resolve reads as numbers (and timestamps).
func signOrDigit(value string) bool {
	return value != "" && (value[0] == '+' || value[0] == '-' || '0' <= value[0] && value[0] <= '9')
}

// jsonRoundTrip is v marshalled to JSON and decoded again as unstructured
// objects are (utiljson: integers as int64).
func jsonRoundTrip(v any) (any, error) {
	v, err := stringKeys(v)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// stringKeys turns the map[any]any that gopkg.in/yaml.v3 makes for mappings
// with keys other than strings into map[string]any. Two keys that are one
// string in JSON ("0" and .0, 1.0 and "1": floats) are an error: a JSON
// object holds one of them, and which one the YAML readers of kubectl,
// Helm and Argo CD keep is the order they range over a Go map in, chance.
// Kept, the scan rendered the one or the other from one run to the next,
// and drift came and went with nothing changed.
func stringKeys(v any) (any, error) {
	var err error
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if v[k], err = stringKeys(e); err != nil {
				return nil, err
			}
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			ks := fmt.Sprint(k)
			if _, dup := m[ks]; dup {
				return nil, sameJSONKey(v, ks)
			}
			if m[ks], err = stringKeys(e); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any:
		for i, e := range v {
			if v[i], err = stringKeys(e); err != nil {
				return nil, err
			}
		}
		return v, nil
	default:
		return v, nil
	}
}

// sameJSONKey is the error for the keys of mapping that are all key in
// JSON, named in their sorted order: the same error whichever the map
// ranged over first.
func sameJSONKey(mapping map[any]any, key string) error {
	var keys []string
	for k := range mapping {
		if fmt.Sprint(k) == key {
			keys = append(keys, fmt.Sprintf("%#v", k))
		}
	}
	slices.Sort(keys)
	return fmt.Errorf("the keys %s of one mapping are both %q in JSON, which keeps one of them", strings.Join(keys, " and "), key)
}
