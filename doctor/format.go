package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Format is how a Report is written.
type Format string

const (
	FormatText Format = "text"
	FormatJSON Format = "json"
)

// Write writes r as text or JSON.
func (r Report) Write(w io.Writer, f Format) error {
	switch f {
	case FormatText:
		return writeText(w, r.Result)
	case FormatJSON:
		return writeJSON(w, r)
	}
	return fmt.Errorf("format %q: want %s or %s", f, FormatText, FormatJSON)
}

// writeJSON writes the report indented, with empty lists rather than null.
func writeJSON(w io.Writer, r Report) error {
	if r.Missing == nil {
		r.Missing = []Need{}
	}
	if r.Excess == nil {
		r.Excess = []Grant{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeText writes who the identity is, every permission the scan
// needs and whether it is granted, then an error line per missing need, a
// warning line per write the scan does not need, and a verdict.
func writeText(w io.Writer, res Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "identity: %s\n", res.Identity)
	if len(res.Groups) > 0 {
		fmt.Fprintf(&b, "groups:   %s\n", strings.Join(res.Groups, ", "))
	}
	missing := map[string]bool{}
	for _, n := range res.Missing {
		missing[n.String()] = true
	}
	fmt.Fprintf(&b, "\nthe scan needs %d permissions, %d missing:\n", len(res.Needed), len(res.Missing))
	for _, n := range res.Needed {
		mark := "ok"
		if missing[n.String()] {
			mark = "MISSING"
		}
		opt := ""
		if n.Optional {
			opt = " (optional)"
		}
		fmt.Fprintf(&b, "  %-8s %s%s\n", mark, n, opt)
	}
	for _, n := range res.Missing {
		if n.Verb == "get" && n.Resource == "namespaces" && n.Name != "" {
			// Asked only because list was refused: not in Needed above.
			fmt.Fprintf(&b, "  %-8s %s (optional)\n", "MISSING", n)
		}
	}
	if len(res.Missing)+len(res.Excess)+len(res.Notes) > 0 {
		b.WriteString("\n")
	}
	for _, n := range res.Missing {
		if n.Optional {
			fmt.Fprintf(&b, "warning: cannot %s: %s (the scan runs without it)\n", n, n.Why)
		} else {
			fmt.Fprintf(&b, "error: cannot %s: %s\n", n, n.Why)
		}
	}
	for _, g := range res.Excess {
		fmt.Fprintf(&b, "warning: not needed: %s; fix: %s\n", g, g.Fix)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	b.WriteString("\n")
	switch req := len(res.MissingRequired()); {
	case req > 0:
		fmt.Fprintf(&b, "%d %s the scan needs %s missing: grant %s to %s.\n", req, plural(req, "permission", "permissions"), plural(req, "is", "are"), plural(req, "it", "them"), res.Identity)
	case len(res.Excess) > 0:
		fmt.Fprintf(&b, "the scan can run as %s; %d write %s it does not need can be taken away.\n", res.Identity, len(res.Excess), plural(len(res.Excess), "permission", "permissions"))
	default:
		fmt.Fprintf(&b, "the scan can run as %s, which holds no write permission the scan does not need.\n", res.Identity)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
