package scanner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/calricon/driftscan/report"
)

// decodeVerdictFile reads verdicts.json as json.Unmarshal into a
// verdictFile would (keys matched as it matches them, unknown keys
// skipped), at a fraction of
// its cost: the file's syntax is checked in one pass (scanJSON), and then
// every string without an escape is taken as a piece of one copy of the
// file instead of a string of its own. jsoniter took 0.045 of a warm
// 5,000-object scan's 0.7 CPU s to read the 4,750 verdicts.
func decodeVerdictFile(data []byte) (verdictFile, error) {
	var file verdictFile
	end, err := scanJSON(data, 0, 0, true, nil)
	if err != nil {
		return file, err
	}
	if skipSpace(data, end) != len(data) {
		return file, errors.New("text after the cache's object")
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return file, errors.New("the cache is no JSON object")
	}
	d := verdictDecoder{raw: data, text: string(data)}
	ok := true
	// Each read returns the index after its value, so no value is
	// stepped over twice (the verdicts are most of the file).
	eachField(data, i, func(key []byte, v int) (int, bool) {
		var end int
		switch d.key(key) {
		case "format":
			var n int64
			n, end, d.err = d.int(v)
			file.Format = int(n)
		case "build":
			file.Build, end, d.err = d.str(v)
		case "server":
			file.Server, end, d.err = d.str(v)
		case "verdicts":
			file.Verdicts, end, d.err = d.verdicts(v)
		default:
			end = skipValue(data, v)
		}
		return end, d.err == nil
	}, &ok)
	return file, d.err
}

// verdictDecoder reads values of raw, a checked JSON document, and text,
// a copy of it as one string.
type verdictDecoder struct {
	raw  []byte
	text string
	err  error
}

// verdictStringKeys are the keys of a verdict's strings, in the order
// verdicts reads them into.
var verdictStringKeys = [...]string{"g", "k", "ns", "n", "git", "uid", "rv", "owner", "ctx"}

// verdictKeys are the keys of the file's objects, as verdictFile and
// verdict name them.
var verdictKeys = append([]string{"format", "build", "server", "verdicts", "at", "dismissed"}, verdictStringKeys[:]...)

// key is the field of verdictKeys that key (its bytes between the quotes)
// names, as encoding/json matches keys to fields: unescaped, and in any
// case (bytes.EqualFold); "" for none.
func (d *verdictDecoder) key(key []byte) string {
	// First the keys as the scan writes them; any other is unescaped
	// and matched in any case.
	for _, k := range verdictKeys {
		if string(key) == k {
			return k
		}
	}
	text, err := d.keyText(key)
	if err != nil {
		return ""
	}
	for _, k := range verdictKeys {
		if strings.EqualFold(text, k) {
			return k
		}
	}
	return ""
}

// keyText is the text of key, the bytes eachField gives between a key's
// quotes (a slice of raw), unescaped.
func (d *verdictDecoder) keyText(key []byte) (string, error) {
	s, _, err := d.str(cap(d.raw) - cap(key) - 1) // its opening quote
	return s, err
}

// container says whether the value at v is null, when it is not one that
// opens with delim (an array or an object); any other value is an error
// naming what it should have been.
func (d *verdictDecoder) container(v int, delim byte, what string) (null bool, err error) {
	switch d.raw[v] {
	case 'n':
		return true, nil
	case delim:
		return false, nil
	}
	return false, errors.New(what)
}

// str reads the string (or null) at v, and returns the index after it.
func (d *verdictDecoder) str(v int) (string, int, error) {
	if d.raw[v] != '"' {
		end := skipValue(d.raw, v)
		if d.raw[v] == 'n' {
			return "", end, nil
		}
		return "", end, fmt.Errorf("%.20s is no string", d.raw[v:end])
	}
	// One pass to the closing quote (the file was checked: there is one).
	// A string with an escape, or with a byte that is not UTF-8 (which
	// encoding/json reads as U+FFFD), is left to encoding/json.
	escaped, wide, end := false, false, v+1
	for ; d.raw[end] != '"'; end++ {
		switch c := d.raw[end]; {
		case c == '\\':
			escaped = true
			end++
		case c >= utf8.RuneSelf:
			wide = true
		}
	}
	end++
	if escaped || wide && !utf8.Valid(d.raw[v+1:end-1]) {
		var s string
		err := json.Unmarshal(d.raw[v:end], &s)
		return s, end, err
	}
	return d.text[v+1 : end-1], end, nil
}

// int reads the integer (or null) at v, and returns the index after it.
func (d *verdictDecoder) int(v int) (int64, int, error) {
	end := skipValue(d.raw, v)
	if d.raw[v] == 'n' {
		return 0, end, nil
	}
	n, err := strconv.ParseInt(d.text[v:end], 10, 64)
	if err != nil {
		return 0, end, fmt.Errorf("%.20s is no integer", d.raw[v:end])
	}
	return n, end, nil
}

// verdicts reads the array (or null) of verdicts at v, and returns the
// index after it.
func (d *verdictDecoder) verdicts(v int) ([]verdict, int, error) {
	if null, err := d.container(v, '[', "verdicts is no array"); null || err != nil {
		return nil, skipValue(d.raw, v), err
	}
	// As many as the file has "at" keys, one a verdict as save writes
	// them: grown from nothing, the slice of 20,000 verdicts was half the
	// time of reading them (BenchmarkVerdicts).
	out := make([]verdict, 0, min(bytes.Count(d.raw[v:], []byte(`"at":`)), len(d.raw)/16))
	i := skipSpace(d.raw, v+1)
	for d.raw[i] != ']' {
		if d.raw[i] == ',' {
			i = skipSpace(d.raw, i+1)
		}
		if d.raw[i] != '{' {
			return nil, 0, errors.New("a verdict is no object")
		}
		var e verdict
		var err error
		ok := true
		strs := [...]*string{&e.Group, &e.Kind, &e.Namespace, &e.Name, &e.Git, &e.UID, &e.ResourceVersion, &e.Owner, &e.Context}
		end := eachField(d.raw, i, func(key []byte, v int) (int, bool) {
			var end int
			switch k := d.key(key); k {
			case "at":
				e.At, end, err = d.int(v)
			case "dismissed":
				e.Dismissed, end, err = d.dismissed(v)
			default:
				if j := slices.Index(verdictStringKeys[:], k); j >= 0 {
					*strs[j], end, err = d.str(v)
				} else {
					end = skipValue(d.raw, v)
				}
			}
			return end, err == nil
		}, &ok)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, e)
		i = skipSpace(d.raw, end)
	}
	return out, i + 1, nil
}

// dismissed reads the counts by reason (or null) at v, and returns the
// index after them.
func (d *verdictDecoder) dismissed(v int) (report.Dismissed, int, error) {
	if null, err := d.container(v, '{', "dismissed is no object"); null || err != nil {
		return nil, skipValue(d.raw, v), err
	}
	out := report.Dismissed{}
	var err error
	ok := true
	end := eachField(d.raw, v, func(key []byte, v int) (int, bool) {
		var reason string
		if reason, err = d.keyText(key); err != nil {
			return 0, false
		}
		var n int64
		var end int
		n, end, err = d.int(v)
		out[report.Reason(reason)] = int(n)
		return end, err == nil
	}, &ok)
	return out, end, err
}

// encodeVerdictFile writes file as json.Marshal does, byte for byte
// (TestTheVerdictFileIsWrittenAsJSONWritesIt), into one buffer sized for
// it. A scan rewrites the file whenever one verdict changed, which in a
// live cluster is every scan (a resourceVersion moves somewhere), and
// jsoniter's reflection, its escaping of every string and the doubling of
// its buffer took 0.08 of a warm 20,000-object scan's 0.7 CPU s.
func encodeVerdictFile(file verdictFile) []byte {
	b := make([]byte, 0, 64+len(file.Build)+len(file.Server)+verdictBytes*len(file.Verdicts))
	b = append(b, `{"format":`...)
	b = strconv.AppendInt(b, int64(file.Format), 10)
	b = appendJSONField(b, `,"build":`, file.Build)
	b = appendJSONField(b, `,"server":`, file.Server)
	b = append(b, `,"verdicts":`...)
	if file.Verdicts == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, e := range file.Verdicts {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendVerdict(b, e)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// verdictBytes is about what a verdict takes in the file (250 bytes in
// the bench's 20k estate, a quarter of them with dismissals).
const verdictBytes = 288

// appendVerdict appends e as json.Marshal writes a verdict: its fields in
// the struct's order, the omitempty ones left out when empty, the
// dismissals' reasons sorted.
func appendVerdict(b []byte, e verdict) []byte {
	b = append(b, '{')
	if e.Group != "" {
		b = append(appendJSONField(b, `"g":`, e.Group), ',')
	}
	b = appendJSONField(b, `"k":`, e.Kind)
	if e.Namespace != "" {
		b = appendJSONField(b, `,"ns":`, e.Namespace)
	}
	b = appendJSONField(b, `,"n":`, e.Name)
	b = appendJSONField(b, `,"git":`, e.Git)
	b = appendJSONField(b, `,"uid":`, e.UID)
	b = appendJSONField(b, `,"rv":`, e.ResourceVersion)
	if e.Owner != "" {
		b = appendJSONField(b, `,"owner":`, e.Owner)
	}
	if len(e.Dismissed) > 0 {
		b = append(b, `,"dismissed":{`...)
		var few [8]report.Reason // the reasons there are: no allocation
		reasons := few[:0]
		for r := range e.Dismissed {
			reasons = append(reasons, r)
		}
		slices.Sort(reasons)
		for i, r := range reasons {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, string(r))
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(e.Dismissed[r]), 10)
		}
		b = append(b, '}')
	}
	if e.Context != "" {
		b = appendJSONField(b, `,"ctx":`, e.Context)
	}
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, e.At, 10)
	return append(b, '}')
}

// appendJSONField appends key (with its comma and colon) and s quoted.
func appendJSONField(b []byte, key, s string) []byte {
	return appendJSONString(append(b, key...), s)
}

// appendJSONString appends s quoted as json.Marshal quotes it. What the
// API server names objects with, and the hashes, are printable ASCII with
// nothing to escape and are appended as they are; any other string is
// left to encoding/json (its escapes of control and HTML characters, of
// U+2028 and U+2029, and its U+FFFD for bytes that are not UTF-8).
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
