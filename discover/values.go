package discover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// helmSet adds Helm values to set, the scanner's --set entries: nested maps
// become dotted keys (a key's own dots, brackets, commas, equals signs and
// backslashes escaped, as Helm's strvals reads them) and scalars their text.
// What --set cannot carry as it is, is left out and returned, as
// "key (why)" sorted by key, never with the value (values may come from a
// Secret):
//   - lists;
//   - strings that --set reads as a bool, as null or as a list ({a,b}), and
//     strings with a backslash, which --set drops.
//
// Strings that --set reads as an integer ("8080") are carried: templates
// print both the same.
func helmSet(values map[string]any, set map[string]string) []string {
	var left []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				key := escapeKey(k)
				if prefix != "" {
					key = prefix + "." + key
				}
				walk(key, t[k])
			}
		case []any:
			left = append(left, prefix+" (a list)")
		case string:
			if why := setRetypes(t); why != "" {
				left = append(left, prefix+" ("+why+")")
				return
			}
			set[prefix] = t
		case nil:
			set[prefix] = "null"
		case bool:
			set[prefix] = strconv.FormatBool(t)
		case json.Number:
			set[prefix] = t.String()
		case float64:
			set[prefix] = strconv.FormatFloat(t, 'f', -1, 64)
		default:
			set[prefix] = fmt.Sprint(t)
		}
	}
	if len(values) > 0 {
		walk("", values)
	}
	sort.Strings(left)
	return left
}

// setRetypes says why --set would not give back the string s, or "".
func setRetypes(s string) string {
	switch {
	case strings.EqualFold(s, "true"), strings.EqualFold(s, "false"):
		return "a string --set reads as a bool"
	case strings.EqualFold(s, "null"):
		return "a string --set reads as null"
	case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
		return "a string --set reads as a list"
	case strings.Contains(s, `\`):
		return "a string with a backslash, which --set drops"
	}
	return ""
}

// escapeKey escapes a values key for a strvals path.
func escapeKey(k string) string {
	var b strings.Builder
	for _, r := range k {
		switch r {
		case '\\', '.', '[', ']', '=', ',':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// errNotMap is returned for a values document that is not a map.
var errNotMap = errors.New("the values are not a YAML map")

// yamlMap reads a YAML values document; numbers keep their text.
func yamlMap(data []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch m := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return m, nil
	}
	return nil, errNotMap
}

// mergeValues merges src into dst, as Helm and Flux merge values: maps are
// merged key by key, anything else in src replaces what dst holds.
func mergeValues(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}
