package backport

import (
	"fmt"
	"strings"

	"github.com/calricon/driftscan/report"
)

// ObjectRef names an object of the report.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
}

// String is kind/namespace/name, as report.Object.Ref writes it.
func (o ObjectRef) String() string {
	return report.Object{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}.Ref()
}

// group is the API group of the object ("" for the core group).
func (o ObjectRef) group() string {
	if g, _, ok := strings.Cut(o.APIVersion, "/"); ok {
		return g
	}
	return ""
}

// Edit is one finding to carry back to Git: the live value of one field.
type Edit struct {
	Object ObjectRef
	// File and Line locate the object's manifest as the scan saw it,
	// relative to the app's source folder (report.Object.File and Line).
	File string
	Line int
	// Path is the finding's structured-merge-diff path, for people.
	Path string
	// At is where the field is, read from the finding's pathElements: list
	// items by key, so it finds the same item in Git's object.
	At   Path
	Type report.Type
	// Value is the finding's live value, typed as the cluster holds it
	// (string, int64, float64, bool, map[string]any, []any); nil for
	// Removed.
	Value any
	// Git and Live are the report's texts of the two values.
	Git, Live string
	// Class, Manager, Operation and Time say who made the change.
	Class     report.Class
	Manager   string
	Operation string
	Time      string
}

// Field names the edit for people: Kind/namespace/name .path.
func (e Edit) Field() string { return e.Object.String() + " " + e.Path }

// Skip is a finding backport did not write, and why.
type Skip struct {
	Edit
	Reason string
	// Suggestion is a file backport wrote instead for a person to finish
	// (a Helm chart's suggested patch), relative to the repository root.
	Suggestion string
}

// Backported reports whether a finding is one backport carries to Git:
// not ignored, and made by a pipeline or a human. Operators and webhooks
// own their fields; unknown drift needs a person to decide first.
func Backported(f report.Finding) bool {
	return f.Active() && f.Class.Deliberate()
}

// PlanOptions say which findings Plan may write.
type PlanOptions struct {
	// AllowSensitive writes Sensitive findings (an env var named like a
	// password, a SealedSecret's data) whose values the report has, which
	// it has only when the scan revealed them. Secret data and values a
	// redaction rule masks are never written.
	AllowSensitive bool
}

// Plan picks the findings of app that backport carries to Git (see
// Backported) and turns each into an Edit. A finding whose live value the
// report masks can never be written, and a Sensitive one is written only
// with AllowSensitive: either is skipped with the reason.
func Plan(app report.App, opts PlanOptions) (edits []Edit, skipped []Skip) {
	for _, o := range app.Objects {
		ref := ObjectRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
		for _, f := range o.Findings {
			if !Backported(f) {
				continue
			}
			e := Edit{
				Object: ref, File: o.File, Line: o.Line, Path: f.Path, Type: f.Type,
				Git: f.Git, Live: f.Live, Class: f.Class, Manager: f.Manager, Operation: f.Operation, Time: f.Time,
			}
			switch {
			case f.Sensitive && !opts.AllowSensitive:
				skipped = append(skipped, Skip{Edit: e, Reason: "the value looks like a credential (an environment variable named like a password or token, or a Secret-like kind's data), and driftscan writes it to Git only with --allow-sensitive: check that it belongs in Git, then run again with --allow-sensitive, or set it by hand"})
				continue
			case f.Masked:
				reason := "the value is masked in the report (a redaction rule matches it), and driftscan never writes masked values to Git: set it in Git by hand"
				if o.Kind == "Secret" && ref.group() == "" {
					reason = "Secret data is masked in the report and driftscan never writes secrets to Git: put the new value where the secret comes from (sealed secret, external secret store) by hand"
				}
				skipped = append(skipped, Skip{Edit: e, Reason: reason})
				continue
			case f.Sensitive:
				// Written with --allow-sensitive; the commit message and the
				// summary still show no value.
				e.Git, e.Live = maskText(f.Git, false), maskText(f.Live, f.Git != "")
			}
			at, err := PathOf(f.PathElements)
			if err != nil {
				skipped = append(skipped, Skip{Edit: e, Reason: fmt.Sprintf("the report does not say where the field is: %v", err)})
				continue
			}
			e.At = at
			if f.Type != report.TypeRemoved {
				if f.LiveValue == nil {
					skipped = append(skipped, Skip{Edit: e, Reason: "the report has no live value (liveValue) to write"})
					continue
				}
				e.Value = f.LiveValue
			}
			edits = append(edits, e)
		}
	}
	return edits, skipped
}

// maskText is the report's mask for a value: "***", or "*** (differs)" on
// the live side of a change; "" stays "".
func maskText(text string, differs bool) string {
	switch {
	case text == "":
		return ""
	case differs:
		return "*** (differs)"
	}
	return "***"
}
