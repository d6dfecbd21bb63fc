package discover

import (
	"bytes"
	"encoding/json"
	"errors"

	"sigs.k8s.io/yaml"
)

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
