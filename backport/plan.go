package backport

import (
	"encoding/json"
	"strconv"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"

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
	// Path is the finding's structured-merge-diff path.
	Path string
	Type report.Type
	// Value is the live value in JSON types (string, int64, float64, bool,
	// map[string]any, []any); nil for Removed. Plan reads it from the
	// report's text; where Git has the field, backport types it like Git's
	// value (a Git string stays a string).
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
	return f.Active() && (f.Class == report.ClassPipeline || f.Class == report.ClassHuman)
}

// masked reports whether the report hid a value: Secret data and whatever
// a redaction rule matched (see scanner's masker).
func masked(text string) bool { return text == "***" || text == "*** (differs)" }

// Plan picks the findings of app that backport carries to Git (see
// Backported) and turns each into an Edit. A finding whose live value the
// report masks can never be written: it is skipped with the reason.
func Plan(app report.App) (edits []Edit, skipped []Skip) {
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
			if masked(f.Live) || masked(f.Git) {
				reason := "the value is masked in the report (a redaction rule matches it), and driftscan never writes masked values to Git: set it in Git by hand"
				if o.Kind == "Secret" && ref.group() == "" {
					reason = "Secret data is masked in the report and driftscan never writes secrets to Git: put the new value where the secret comes from (sealed secret, external secret store) by hand"
				}
				skipped = append(skipped, Skip{Edit: e, Reason: reason})
				continue
			}
			if f.Type != report.Removed {
				e.Value = textValue(f.Live, nil, false, o.Kind, f.Path)
			}
			edits = append(edits, e)
		}
	}
	return edits, skipped
}

// textValue turns the report's text of a value into a JSON value. When
// Git has a value there (hasLike), the text is read as a value of the same
// type: a Git string stays a string, a number stays a number. Otherwise
// free-form string maps (annotations, labels, ConfigMap data) hold strings,
// structures are compact JSON, and true, false and numbers are read as
// such.
func textValue(text string, like any, hasLike bool, kind string, path string) any {
	if hasLike {
		switch like.(type) {
		case string:
			return text
		case bool:
			if b, err := strconv.ParseBool(text); err == nil {
				return b
			}
			return text
		case int64, float64, int, json.Number:
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				return n
			}
			if f, err := strconv.ParseFloat(text, 64); err == nil {
				return f
			}
			return text
		case map[string]any, []any:
			if v, ok := jsonText(text); ok {
				return v
			}
			return text
		}
	}
	if freeKeysPath(path, kind) {
		return text
	}
	if v, ok := jsonText(text); ok {
		return v
	}
	switch text {
	case "true":
		return true
	case "false":
		return false
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(text, 64); err == nil && !strings.ContainsAny(text, "xXoObB_") {
		return f
	}
	return text
}

// jsonText decodes a JSON object or array.
func jsonText(text string) (any, bool) {
	if !strings.HasPrefix(text, "{") && !strings.HasPrefix(text, "[") {
		return nil, false
	}
	var v any
	if err := utiljson.Unmarshal([]byte(text), &v); err != nil {
		return nil, false
	}
	return v, true
}

// freeKeysPath reports whether the value at path sits directly in a
// free-form string map (annotations, labels, ConfigMap data): it is a
// string whatever it looks like.
func freeKeysPath(path, kind string) bool {
	p, err := ParsePath(path)
	if err != nil || len(p) < 2 {
		return false
	}
	r := Resolve(p, nil, kind)
	return len(r) >= 2 && isField(r[len(r)-1]) && freeKeys(r[:len(r)-1], kind)
}
