package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// writeDiff writes a unified-diff-style block per object that drifted, is
// missing or is extra: the header names the object on the Git and live side,
// and each finding that is not ignored is one hunk headed by its path, class,
// type and manager, with the Git value as "-" lines and the live value as "+"
// lines. Structured values are indented JSON. An absent value has no lines.
// Objects in Error and ignored findings are left out: they are not drift.
func writeDiff(w io.Writer, r *Report) error {
	var b strings.Builder
	for _, app := range r.Apps {
		for _, o := range app.Objects {
			ref := o.Kind + "/" + o.Name
			if o.Namespace != "" {
				ref = o.Kind + "/" + o.Namespace + "/" + o.Name
			}
			gitName, liveName := "git/"+ref, "live/"+ref
			switch o.Status {
			case StatusDrifted:
				active := o.ActiveFindings()
				if len(active) == 0 {
					continue
				}
				diffHeader(&b, gitName, liveName)
				for _, f := range active {
					b.WriteString("@@ " + oneLine(f.Path) + " @@ " + string(f.Class) + " " + string(f.Type) + " by " + diffBy(f) + "\n")
					diffLines(&b, "-", f.Git)
					diffLines(&b, "+", f.Live)
				}
			case StatusMissing:
				diffHeader(&b, gitName, "/dev/null")
				b.WriteString("@@ " + o.Ref() + " @@ Missing: " + statusText(o) + objectWhere(app, o) + "\n")
			case StatusExtra:
				diffHeader(&b, "/dev/null", liveName)
				b.WriteString("@@ " + o.Ref() + " @@ Extra: " + statusText(o) + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func diffHeader(b *strings.Builder, from, to string) {
	b.WriteString("--- " + from + "\n")
	b.WriteString("+++ " + to + "\n")
}

// diffBy names the manager for a hunk header: "kubectl-set",
// "no manager (likely istio-sidecar-injector)", "no manager", then the
// person from the audit log when known ("kubectl-set, alice@example.com").
func diffBy(f Finding) string {
	by := f.manager()
	switch {
	case f.Manager != "":
	case f.Actor != "":
		by = "no manager (likely " + f.Actor + ")"
	default:
		by = "no manager"
	}
	if p := f.Attribution.Person(); p != "" {
		by += ", " + p
	}
	return by
}

// objectWhere is " (apps/web/ingress.yaml:12)" when the manifest is known.
func objectWhere(app App, o Object) string {
	if p := app.ManifestPath(o); p != "" {
		return " (" + location(p, o.Line) + ")"
	}
	return ""
}

// diffLines writes v as diff lines with prefix, a JSON object or array
// indented over several lines.
func diffLines(b *strings.Builder, prefix, v string) {
	if v == "" {
		return
	}
	for _, line := range strings.Split(indentJSON(v), "\n") {
		b.WriteString(prefix + line + "\n")
	}
}

// indentJSON indents v when it is a JSON object or array, and otherwise
// returns it without a trailing newline.
func indentJSON(v string) string {
	t := strings.TrimSpace(v)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(t), "", "  "); err == nil {
			return buf.String()
		}
	}
	return strings.TrimSuffix(v, "\n")
}
