package report

import (
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// By names who made the finding: the managedFields manager, with the
// subresource it wrote through ("kube-controller-manager/scale"); when no
// manager owns the field, the likely actor in parentheses
// ("(istio-sidecar-injector)"); then the person from the audit log
// ("kubectl-edit by alice@example.com"); "" when none is known.
func (f Finding) By() string {
	by := f.manager()
	who := f.Attribution.Who()
	switch {
	case who == "":
		return by
	case by == "":
		return who
	}
	return by + " " + who
}

// manager is By without the person.
func (f Finding) manager() string {
	var by string
	switch {
	case f.Manager != "" && f.Subresource != "":
		by = f.Manager + "/" + f.Subresource
	case f.Manager != "":
		by = f.Manager
	case f.Actor != "":
		by = "(" + f.Actor + ")"
	}
	return by
}

// Age says how long before now the finding's manager last wrote the field,
// the way kubectl prints an AGE column (90s, 3h, 30d); "-" when the time is
// unknown or unreadable. A managedFields entry written through a
// subresource (the HPA's scale) has no time: the audit event that made the
// change gives it, when the attribution is exact.
func (f Finding) Age(now time.Time) string {
	at := f.Time
	if at == "" && f.Attribution != nil && f.Attribution.Confidence == ConfidenceExact {
		at = f.Attribution.Time
	}
	if at == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0 // clock skew between the API server and this machine
	}
	return duration.HumanDuration(d)
}

// Target describes what an ignore rule selects, for example
// "Deployment billing/billing-api /spec/replicas".
func (r IgnoreRule) Target() string {
	var b strings.Builder
	kind := r.Kind
	if kind == "" {
		kind = "*"
	}
	if r.Group != "" {
		kind += "." + r.Group
	}
	b.WriteString(kind)
	switch {
	case r.Namespace != "" && r.Name != "":
		b.WriteString(" " + r.Namespace + "/" + r.Name)
	case r.Namespace != "":
		b.WriteString(" " + r.Namespace + "/*")
	case r.Name != "":
		b.WriteString(" " + r.Name)
	}
	if r.App != "" {
		b.WriteString(" (app " + r.App + ")")
	}
	var what []string
	what = append(what, r.JSONPointers...)
	what = append(what, r.JQPathExpressions...)
	for _, m := range r.ManagedFieldsManagers {
		what = append(what, "manager="+m)
	}
	if len(what) > 0 {
		b.WriteString(" " + strings.Join(what, " "))
	}
	return b.String()
}

// Summary counts one app the way Report.Summary counts the scan, from the
// statuses Finalize set (Apps is 1; Errors counts the app's own error and its
// objects in Error).
func (a App) Summary() Summary {
	s := Summary{Apps: 1, ByClass: map[Class]int{}}
	if a.Error != "" {
		s.Errors++
	}
	for _, o := range a.Objects {
		s.Objects++
		switch o.Status {
		case StatusDrifted:
			s.Drifted++
		case StatusMissing:
			s.Missing++
		case StatusExtra:
			s.Extra++
		case StatusError:
			s.Errors++
		}
		for _, f := range o.Findings {
			if f.Ignored {
				s.Ignored++
				continue
			}
			s.Findings++
			s.ByClass[f.Class]++
			if f.Contract != nil {
				if s.ByVerdict == nil {
					s.ByVerdict = map[Verdict]int{}
				}
				s.ByVerdict[f.Contract.Verdict]++
			}
		}
	}
	return s
}

// Quiet reports whether the app has nothing for a reader to act on: no
// error, no cap exceeded and every object InSync.
func (a App) Quiet() bool {
	if a.Error != "" || a.OverIgnoreCap || a.Pending.Notable() {
		return false
	}
	for _, o := range a.Objects {
		if o.Status != StatusInSync {
			return false
		}
	}
	return true
}

// ManifestPath is where in the app's Git source the object is declared:
// Source.Path joined with Object.File, slash-separated and relative ("." is
// the source folder itself, as for rendered Helm and Kustomize output). It is
// "" when the object has no file (an Extra object).
func (a App) ManifestPath(o Object) string {
	if o.File == "" {
		return ""
	}
	p := path.Join(strings.ReplaceAll(a.Source.Path, `\`, "/"), strings.ReplaceAll(o.File, `\`, "/"))
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "."
	}
	return p
}
