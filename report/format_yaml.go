package report

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// writeYAML writes the report contract as YAML, for whoever reads reports
// the way they read `kubectl get -o yaml`: the JSON report's fields in its
// order, every value typed as it is there (the string "80" stays quoted,
// the number 80 does not; an empty string is ""), a multi-line value as a
// literal block. It is the JSON report re-encoded, not a second contract:
// what JSON masks, YAML masks.
func writeYAML(w io.Writer, r *Report) error {
	var js bytes.Buffer
	if err := writeJSON(&js, r); err != nil {
		return err
	}
	// JSON is YAML: read as nodes, it keeps its key order, which a map
	// (sigs.k8s.io/yaml's JSONToYAML) would sort.
	var doc yaml.Node
	if err := yaml.Unmarshal(yamlSafe(js.Bytes()), &doc); err != nil {
		return err
	}
	js = bytes.Buffer{} // the nodes hold the report now
	blockStyle(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

// blockStyle drops the flow and quoting styles the JSON text gave every
// node: the encoder then writes mappings and sequences as blocks, and
// quotes a string only where a plain one would read as another type or
// break the document, by YAML 1.2's rules; a string that YAML 1.1 reads as
// another type (sigs.k8s.io/yaml, and so kubectl, Helm and Argo CD, read
// "on" as true and "<<" as a merge) is double-quoted here, as the encoder
// does for a Go string but not for a node.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && (yaml11Typed(n.Value) || !blockSafe(n.Value)) {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// yamlSafe escapes in JSON text the characters a YAML reader refuses
// (DEL, the C1 controls, U+FFFE and U+FFFF) or reads as a line break (NEL),
// which encoding/json writes as they are. They can only be inside strings,
// where \u escapes mean the same to both.
func yamlSafe(js []byte) []byte {
	if !bytes.ContainsFunc(js, yamlRefuses) {
		return js
	}
	out := make([]byte, 0, len(js)+64)
	for len(js) > 0 {
		r, size := utf8.DecodeRune(js)
		if yamlRefuses(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, js[:size]...)
		}
		js = js[size:]
	}
	return out
}

func yamlRefuses(r rune) bool {
	return r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0xfffe || r == 0xffff
}

// blockSafe reports whether s may be left to the encoder's choice of
// style: no character a plain, single-quoted or literal scalar would
// change or lose (a carriage return, a line break other than \n, a
// control character), which only a double-quoted one escapes.
func blockSafe(s string) bool {
	for _, r := range s {
		switch {
		case r == '\n', r == '\t':
		case r < 0x20, yamlRefuses(r), r == 0x2028, r == 0x2029, r == 0xfeff:
			return false
		}
	}
	return true
}

// base60 is YAML 1.1's sexagesimal number (12:30 is 750).
var base60 = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// yaml11Typed reports whether a plain scalar s is, in YAML 1.1 and not in
// 1.2, a boolean, a sexagesimal number, a merge key or a value key.
func yaml11Typed(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"on", "On", "ON", "off", "Off", "OFF", "<<", "=":
		return true
	}
	return len(s) > 2 && s[0] <= '9' && base60.MatchString(s)
}
