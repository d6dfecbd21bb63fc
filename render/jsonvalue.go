package render

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// jsonValue converts what gopkg.in/yaml.v3 decodes into the value
// jsonRoundTrip would give, in place and without encoding anything: maps
// with string keys, integers as int64 (also a float with an integral value
// that JSON would print without a fraction or exponent), other floats as
// float64, strings, booleans and nil. It reports false, with v possibly
// half converted, for anything whose JSON form is not that plain; the
// caller then decodes the node again and takes the round trip.
func jsonValue(v any) (any, bool) {
	switch t := v.(type) {
	case nil, bool:
		return t, true
	case string:
		return t, utf8.ValidString(t)
	case int:
		return int64(t), true
	case int64:
		return t, true
	case float64:
		return jsonFloat(t)
	case map[string]any:
		for k, e := range t {
			if !utf8.ValidString(k) {
				return nil, false
			}
			c, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			t[k] = c
		}
		return t, true
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			ks := fmt.Sprint(k)
			if _, dup := m[ks]; dup || !plainKey(k) || !utf8.ValidString(ks) {
				return nil, false
			}
			c, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			m[ks] = c
		}
		return m, true
	case []any:
		for i, e := range t {
			c, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			t[i] = c
		}
		return t, true
	}
	return nil, false
}

// plainKey: a mapping key whose fmt.Sprint is what stringKeys makes of it
// and JSON keeps as it is.
func plainKey(k any) bool {
	switch k.(type) {
	case string, int, int64, bool:
		return true
	}
	return false
}

// jsonFloat is f as utiljson decodes json.Marshal's text of it: an int64
// when that text is an integer (json.Marshal prints floats from 1e-6 to
// 1e21 without an exponent), else the same float64.
func jsonFloat(f float64) (any, bool) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return nil, false // json.Marshal refuses them: the round trip says so
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		if f >= -(1<<63) && f < 1<<63 {
			return int64(f), true
		}
		return nil, false // an integer text beyond int64: let the decoder decide
	}
	return f, true
}
