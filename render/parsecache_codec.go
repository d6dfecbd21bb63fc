package render

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/internal/kubekeys"
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
	return encodeWith(func(s *jsoniter.Stream) bool {
		s.WriteArrayStart()
		for i, m := range ms {
			if i > 0 {
				s.WriteMore()
			}
			s.WriteArrayStart()
			s.WriteInt(m.Line)
			s.WriteMore()
			if !encodeValue(s, m.Object.Object, 0) {
				return false
			}
			s.WriteArrayEnd()
		}
		s.WriteArrayEnd()
		return true
	})
}

// encodeWith returns what write writes to a stream of the codec; false
// when write says so or the stream fails.
func encodeWith(write func(s *jsoniter.Stream) bool) ([]byte, bool) {
	s := cacheJSONAPI.BorrowStream(nil)
	defer cacheJSONAPI.ReturnStream(s)
	if !write(s) || s.Error != nil {
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
// each as the parser checked it (toManifest) and refusing a Secret. When
// lazy, it reads only what names each object (Manifest.Ident) and checks
// the rest as it skips it; Manifest.Load decodes the object.
func decodeObjects(data []byte, file string, lazy bool) ([]Manifest, error) {
	d := cacheDecoder{data: data, lazy: lazy}
	ms, err := d.objects(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCacheEntry, err)
	}
	return ms, nil
}

// cacheDecoder reads an entry's bytes in one pass, building each value as
// it goes. It reads JSON, but only the JSON encodeValue writes is sure to
// be read, and back as the value that was written; the rest is refused or
// read as JSON reads it. (It replaced jsoniter's callback reader, which
// allocated more and took twice as long: an entry is read on every warm
// scan, 5,000 of them on the bench's.)
type cacheDecoder struct {
	data []byte
	i    int // the next byte to read
	lazy bool
}

// next skips whitespace and returns the next byte, 0 at the end.
func (d *cacheDecoder) next() byte {
	for ; d.i < len(d.data); d.i++ {
		switch c := d.data[d.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// take reads c, the next byte after whitespace; false when it is another.
func (d *cacheDecoder) take(c byte) bool {
	if d.next() != c {
		return false
	}
	d.i++
	return true
}

// objects reads the whole entry: [[line,{object}],...] and nothing after.
func (d *cacheDecoder) objects(file string) ([]Manifest, error) {
	if !d.take('[') {
		return nil, errCacheEntry
	}
	var ms []Manifest
	for first := true; !d.take(']'); first = false {
		if !first && !d.take(',') {
			return nil, errCacheEntry
		}
		if !d.take('[') {
			return nil, errCacheEntry
		}
		line, err := d.value(0)
		if n, ok := line.(int64); err != nil || !ok || n < 0 || n > math.MaxInt32 {
			return nil, errCacheEntry
		}
		if !d.take(',') || d.next() != '{' {
			return nil, errCacheEntry
		}
		start := d.i
		var m Manifest
		if d.lazy {
			id, err := d.ident()
			if err != nil {
				return nil, err
			}
			m.lazy = &undecoded{data: d.data[start:d.i], ident: id}
		} else {
			v, err := d.value(0)
			if err != nil {
				return nil, err
			}
			if m.Object, _, err = toManifest(v.(map[string]any), true); err != nil {
				return nil, err
			}
			if m.Object.GetKind() == "Secret" {
				return nil, errCacheEntry
			}
		}
		if !d.take(']') {
			return nil, errCacheEntry
		}
		m.File, m.Line = file, int(line.(int64))
		ms = append(ms, m)
	}
	if d.next() != 0 || d.i != len(d.data) {
		return nil, errCacheEntry // text after the array
	}
	return ms, nil
}

// value reads one value as encodeValue wrote it, at depth as it counts.
func (d *cacheDecoder) value(depth int) (any, error) {
	switch c := d.next(); c {
	case '"':
		b, escaped, err := d.stringBytes()
		if err != nil {
			return nil, err
		}
		return cacheString(b, escaped)
	case '{':
		return d.object(depth, true)
	case '[':
		if depth >= maxCacheDepth {
			return nil, errCacheEntry
		}
		d.i++
		s := []any{}
		for first := true; !d.take(']'); first = false {
			if !first && !d.take(',') {
				return nil, errCacheEntry
			}
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return d.number()
	}
	return nil, errCacheEntry
}

// object reads the object at d.i, at depth as value counts it, into a map
// (never nil) when build, or checking it as value would read it and
// building nothing else. A key twice is refused.
func (d *cacheDecoder) object(depth int, build bool) (map[string]any, error) {
	if err := d.open(depth); err != nil {
		return nil, err
	}
	var m map[string]any
	var skipped objectKeys // the keys seen when nothing is built
	if build {
		m = map[string]any{}
	}
	for first := true; ; first = false {
		k, end, err := d.key(first)
		if err != nil || end {
			return m, err
		}
		if !build {
			if skipped.seen(k) {
				return nil, errCacheEntry
			}
			if err := d.skip(depth + 1); err != nil {
				return nil, err
			}
			continue
		}
		key := kubekeys.Intern(k)
		if _, twice := m[key]; twice {
			return nil, errCacheEntry
		}
		if m[key], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
}

// open reads the '{' at d.i of an object at depth, as value counts it.
func (d *cacheDecoder) open(depth int) error {
	if depth >= maxCacheDepth {
		return errCacheEntry
	}
	d.i++
	return nil
}

// key reads the key of an object's next member, and the ':' after it;
// end at the object's '}'. first says it is the object's first member.
func (d *cacheDecoder) key(first bool) (k []byte, end bool, err error) {
	if d.take('}') {
		return nil, true, nil
	}
	if !first && !d.take(',') || d.next() != '"' {
		return nil, false, errCacheEntry
	}
	if k, err = d.skipString(); err != nil {
		return nil, false, err
	}
	if !d.take(':') {
		return nil, false, errCacheEntry
	}
	return k, false, nil
}

// ident reads the object at d.i, which the cache wrote as a whole object
// (toManifest's checks hold, and it is no Secret), giving what names it
// (Manifest.Ident) and checking the rest as value would read it, building
// nothing else: Manifest.Load decodes that.
func (d *cacheDecoder) ident() (Ident, error) {
	var id Ident
	var hasAPIVersion, hasKind, metadataNotAMap bool
	var keys objectKeys
	d.i++ // the '{' of an object at depth 0
	for first := true; ; first = false {
		k, end, err := d.key(first)
		if err != nil {
			return Ident{}, err
		}
		if end {
			break
		}
		if keys.seen(k) {
			return Ident{}, errCacheEntry
		}
		switch string(k) {
		case "apiVersion":
			id.APIVersion, err = d.identString(1)
			hasAPIVersion = true
		case "kind":
			id.Kind, err = d.identString(1)
			hasKind = true
		case "metadata":
			if d.next() == '{' {
				err = d.metadata(1, &id)
				break
			}
			var v any
			v, err = d.value(1)
			metadataNotAMap = v != nil // null is no metadata
		default:
			err = d.skip(1)
		}
		if err != nil {
			return Ident{}, err
		}
	}
	// What toManifest checks of the whole object, and no Secret.
	if !hasAPIVersion || !hasKind || id.APIVersion == "" || id.Kind == "" || metadataNotAMap ||
		id.Name == "" && id.GenerateName == "" || id.Kind == "Secret" {
		return Ident{}, errCacheEntry
	}
	return id, nil
}

// metadata reads the object at d.i, an object's metadata at depth, into id
// as the object's getters read it, and checks the rest.
func (d *cacheDecoder) metadata(depth int, id *Ident) error {
	return d.fields(depth, func(k []byte) error {
		var to *string
		switch string(k) {
		case "name":
			to = &id.Name
		case "namespace":
			to = &id.Namespace
		case "generateName":
			to = &id.GenerateName
		case "annotations":
			v, err := d.value(depth + 1)
			id.Annotations = stringMap(v)
			return err
		case "labels":
			return d.fluxLabels(depth+1, id)
		default:
			return d.skip(depth + 1)
		}
		var err error
		*to, err = d.identString(depth + 1)
		return err
	})
}

// fields reads the object at d.i, at depth as value counts it, handing
// each key to field with d.i at its value, which field reads; a key
// repeated is an error, as value finds it.
func (d *cacheDecoder) fields(depth int, field func(k []byte) error) error {
	if err := d.open(depth); err != nil {
		return err
	}
	var keys objectKeys
	for first := true; ; first = false {
		k, end, err := d.key(first)
		if err != nil || end {
			return err
		}
		if keys.seen(k) {
			return errCacheEntry
		}
		if err := field(k); err != nil {
			return err
		}
	}
}

// fluxLabels reads the labels at d.i, at depth as value counts it, into
// id.FluxLabels as fluxLabels reads them: of an object, the string values
// of the keys under FluxMarkPrefix, each other value only checked (skip),
// so the labels most objects have cost no map.
func (d *cacheDecoder) fluxLabels(depth int, id *Ident) error {
	if d.next() != '{' {
		return d.skip(depth)
	}
	return d.fields(depth, func(k []byte) error {
		if !bytes.HasPrefix(k, []byte(FluxMarkPrefix)) || d.next() != '"' {
			return d.skip(depth + 1)
		}
		name := string(k)
		v, err := d.identString(depth + 1)
		if err != nil {
			return err
		}
		if id.FluxLabels == nil {
			id.FluxLabels = map[string]string{}
		}
		id.FluxLabels[name] = v
		return nil
	})
}

// identString reads the value at d.i, at depth as value counts it, as
// ident reads a name: the string it is, "" when it is another value. It
// is value without the value boxed (an allocation for each of the four
// names of every object a warm scan reads from the cache), and a string
// Kubernetes objects repeat (an apiVersion, a kind) is the one kept copy.
func (d *cacheDecoder) identString(depth int) (string, error) {
	if d.next() != '"' {
		v, err := d.value(depth)
		s, _ := v.(string)
		return s, err
	}
	b, escaped, err := d.stringBytes()
	if err != nil {
		return "", err
	}
	if !escaped {
		if v, ok := kubekeys.Value(b); ok {
			return v.(string), nil
		}
	}
	return cacheString(b, escaped)
}

// stringMap is v as unstructured.NestedStringMap reads it: nil unless v is
// a map whose every value is a string.
func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		out[k] = s
	}
	return out
}

// skip reads the value at d.i, at depth as value counts it, and checks it
// as value would, building nothing but the list of an object's keys.
func (d *cacheDecoder) skip(depth int) error {
	switch c := d.next(); c {
	case '"':
		_, err := d.skipString()
		return err
	case '{':
		_, err := d.object(depth, false)
		return err
	case '[':
		if depth >= maxCacheDepth {
			return errCacheEntry
		}
		d.i++
		for first := true; !d.take(']'); first = false {
			if !first && !d.take(',') {
				return errCacheEntry
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		_, _, _, err := d.numberValue()
		return err
	}
	return errCacheEntry
}

// skipString reads the string at d.i and checks it as cacheString does;
// it returns the string's bytes (allocated only when it has escapes).
func (d *cacheDecoder) skipString() ([]byte, error) {
	b, escaped, err := d.stringBytes()
	if err != nil {
		return nil, err
	}
	if escaped || !utf8.Valid(b) {
		s, err := cacheString(b, escaped)
		return []byte(s), err
	}
	return b, nil
}

// objectKeys are the keys of one object read so far: the first few
// compared one by one (most objects have few keys), any more in a map, so
// an object of a million keys costs no more than a million lookups.
type objectKeys struct {
	few  [16][]byte
	n    int
	many map[string]bool
}

// seen adds k and says whether it was there already.
func (o *objectKeys) seen(k []byte) bool {
	if o.n < len(o.few) {
		for _, f := range o.few[:o.n] {
			if bytes.Equal(f, k) {
				return true
			}
		}
		o.few[o.n] = k
		o.n++
		return false
	}
	if o.many == nil {
		o.many = map[string]bool{}
		// Over a slice, not the array: ranging over the array copies it,
		// and with seen inlined that copy doubled the frame of every
		// level of the decoder's recursion (936 bytes an object).
		for _, f := range o.few[:] {
			o.many[string(f)] = true
		}
	}
	if o.many[string(k)] {
		return true
	}
	o.many[string(k)] = true
	return false
}

// undecoded is an object the parse cache gave undecoded
// (Options.Lazy): its bytes in the cache entry and what names it, and,
// once Manifest.Load has decoded it, the object.
type undecoded struct {
	ident Ident
	once  sync.Once
	data  []byte
	obj   *unstructured.Unstructured
	err   error
}

// decode decodes the object.
func (u *undecoded) decode() (*unstructured.Unstructured, error) {
	d := cacheDecoder{data: u.data}
	if d.next() != '{' {
		return nil, errCacheEntry
	}
	v, err := d.value(0)
	if err == nil && (d.next() != 0 || d.i != len(d.data)) {
		err = errCacheEntry
	}
	if err != nil {
		return nil, err
	}
	obj, _, err := toManifest(v.(map[string]any), true)
	if err != nil {
		return nil, err
	}
	u.data = nil
	return obj, nil
}

// literal reads the literal lit at d.i.
func (d *cacheDecoder) literal(lit string) error {
	if !bytes.HasPrefix(d.data[d.i:], []byte(lit)) {
		return errCacheEntry
	}
	d.i += len(lit)
	return nil
}

// stringBytes reads the string at d.i (its opening quote) and returns
// what is between the quotes, and whether that holds an escape.
func (d *cacheDecoder) stringBytes() (b []byte, escaped bool, err error) {
	start := d.i + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			return d.data[start:i], escaped, nil
		case c == '\\':
			escaped = true
			i++ // the escaped byte; cacheString checks the escape
		case c < 0x20:
			return nil, false, errCacheEntry // JSON has no raw control characters
		}
	}
	return nil, false, errCacheEntry
}

// cacheString is the string whose JSON text, between the quotes, is b.
func cacheString(b []byte, escaped bool) (string, error) {
	if !utf8.Valid(b) {
		return "", errCacheEntry
	}
	if !escaped {
		return string(b), nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			out = append(out, b[i])
			continue
		}
		if i++; i == len(b) {
			return "", errCacheEntry
		}
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b[i+1:])
			if !ok {
				return "", errCacheEntry
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// Only a pair of them is a character.
				if len(b) < i+7 || b[i+1] != '\\' || b[i+2] != 'u' {
					return "", errCacheEntry
				}
				low, ok := hex4(b[i+3:])
				if r = utf16.DecodeRune(r, low); !ok || r == utf8.RuneError {
					return "", errCacheEntry
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", errCacheEntry
		}
	}
	return string(out), nil
}

// hex4 reads the four hex digits of a \u escape at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads an int64 or a float64 at d.i, each only in the form the
// encoder writes it.
func (d *cacheDecoder) number() (any, error) {
	i, f, isFloat, err := d.numberValue()
	switch {
	case err != nil:
		return nil, err
	case isFloat:
		return f, nil
	}
	return i, nil
}

// numberValue is number, unboxed.
func (d *cacheDecoder) numberValue() (i int64, f float64, isFloat bool, err error) {
	start := d.i
	float := false
	for ; d.i < len(d.data); d.i++ {
		c := d.data[d.i]
		if c == '.' || c == 'e' || c == 'E' || c == '+' {
			float = true
		} else if c != '-' && (c < '0' || c > '9') {
			break
		}
	}
	text := d.data[start:d.i]
	if !float {
		if n, ok := plainInt(text); ok {
			return n, 0, false, nil
		}
		i, err := strconv.ParseInt(string(text), 10, 64)
		var buf [24]byte
		if err != nil || !bytes.Equal(strconv.AppendInt(buf[:0], i, 10), text) {
			return 0, 0, false, errCacheEntry
		}
		return i, 0, false, nil
	}
	f, err = strconv.ParseFloat(string(text), 64)
	if err != nil {
		return 0, 0, false, errCacheEntry
	}
	if again, ok := floatText(f); !ok || again != string(text) {
		return 0, 0, false, errCacheEntry
	}
	return 0, f, true, nil
}

// plainInt reads text, when it is an integer of up to 18 digits in the
// form strconv.FormatInt writes; false for anything else, which
// ParseInt's round trip then decides.
func plainInt(text []byte) (int64, bool) {
	digits := text
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(text) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(text) {
		n = -n
	}
	return n, true
}
