package breakglass

import (
	"fmt"
	"time"

	"github.com/calricon/driftscan/report"
)

// Annotate records in the report which apps are suspended, by their
// reconciler object (App.GitOps.Object). An expired suspension becomes a
// human finding on the reconciler object, so that it shows, fails CI and is
// notified like any unsanctioned drift until someone resumes it. It returns
// the expired suspensions by app name. The caller finalizes the report
// (report.Report.Finalize) once it has made all its changes.
func Annotate(r *report.Report, suspensions []Suspension, now time.Time) map[string]Suspension {
	byObject := map[string]Suspension{}
	for _, s := range suspensions {
		byObject[s.Target.String()] = s
	}
	expired := map[string]Suspension{}
	for i := range r.Apps {
		app := &r.Apps[i]
		if app.GitOps == nil {
			continue
		}
		s, ok := byObject[app.GitOps.Object]
		if !ok {
			continue
		}
		app.Breakglass = &report.Breakglass{By: s.By, Reason: s.Reason, Since: s.Since.UTC().Format(time.RFC3339), Until: s.Until.UTC().Format(time.RFC3339), Expired: s.Expired(now), BackportPR: s.BackportPR}
		if !app.Breakglass.Expired {
			continue
		}
		expired[app.Name] = s
		app.Objects = append(app.Objects, report.Object{
			APIVersion: s.Target.Resource.GroupVersion().String(), Kind: s.Target.Kind(), Namespace: s.Target.Namespace, Name: s.Target.Name,
			Status: report.StatusDrifted,
			Findings: []report.Finding{{
				Path: ".metadata.annotations." + AnnotationUntil, Type: report.TypeChanged, Class: report.ClassHuman,
				Manager: FieldManager, Operation: "Update", Time: s.Since.UTC().Format(time.RFC3339),
				Live: s.Until.UTC().Format(time.RFC3339),
				Hint: fmt.Sprintf("breakglass suspension by %s (%s) expired %s ago: carry the hotfix back to Git and run `driftscan breakglass resume %s`",
					s.By, s.Reason, now.Sub(s.Until).Round(time.Minute), s.Target.Name),
			}},
		})
	}
	return expired
}

// MarkResumed records in app that its expired suspension s was resumed, and
// takes out the reconciler object Annotate added for the expiry: it is no
// longer drift.
func MarkResumed(app *report.App, s Suspension) {
	if app.Breakglass != nil {
		app.Breakglass.Resumed = true
	}
	kept := app.Objects[:0]
	for _, o := range app.Objects {
		if !isExpiry(o, s) {
			kept = append(kept, o)
		}
	}
	app.Objects = kept
}

// isExpiry reports whether o is the object Annotate added for s.
func isExpiry(o report.Object, s Suspension) bool {
	return o.Status == report.StatusDrifted && o.APIVersion == s.Target.Resource.GroupVersion().String() &&
		o.Kind == s.Target.Kind() && o.Namespace == s.Target.Namespace && o.Name == s.Target.Name
}

// Blocking lists an app's findings that the next sync would revert: pipeline
// and human drift that is not ignored, other than the suspension itself.
func Blocking(app report.App) []string {
	var out []string
	for _, o := range app.Objects {
		for _, f := range o.ActiveFindings() {
			if f.Class.Deliberate() && f.Manager != FieldManager {
				out = append(out, fmt.Sprintf("%s %s: %s %s by %s", o.Ref(), f.Path, f.Class, f.Type, f.Manager))
			}
		}
	}
	return out
}
