package report

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// ValueText is how the report shows a value (Finding.Git, Finding.Live):
// a string as it is, a map or list as compact JSON, a float in decimal
// without an exponent (0.000001, not 1e-06), anything else as Go prints it,
// and "" for null.
func ValueText(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case map[string]any, []any:
		data, err := json.Marshal(t)
		if err != nil {
			return fmt.Sprint(t)
		}
		return string(data)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(t), 'f', -1, 32)
	case int64: // as fmt.Sprint writes them, without its reflection
		return strconv.FormatInt(t, 10)
	case int:
		return strconv.Itoa(t)
	case bool:
		return strconv.FormatBool(t)
	}
	return fmt.Sprint(v)
}
