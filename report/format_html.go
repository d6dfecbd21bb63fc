package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The HTML report is one self-contained page for the people who receive
// drift: an owning team opening a CI artifact, an incident channel following
// --report-url. Everything it needs is inline (its style, its chart as SVG,
// its one script), a Content-Security-Policy forbids loading anything else,
// and it works from file://. html/template escapes every value; values are
// the report's Git and Live text, masked as in every other format.

var (
	//go:embed format_html.tmpl
	htmlTemplateText string
	//go:embed format_html.css
	htmlCSS string
	//go:embed format_html.js
	htmlJS string

	// The template is parsed when a page is first written: every run
	// of the command would otherwise parse it at start-up (4 ms).
	htmlTemplate = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("report").Parse(htmlTemplateText))
	})
)

// htmlValueMax is where the page cuts a Git or live value (in the middle);
// the JSON report always has it whole. It keeps a page of injected sidecars
// small.
const htmlValueMax = 600

// htmlView is what the template renders.
type htmlView struct {
	Cluster    string
	ScannedAt  string
	Summary    Summary
	Violations int
	Debts      []htmlDebt
	Errors     []string
	Warnings   []string
	ByClass    []htmlClassCount
	ByOwner    []htmlOwner
	Chart      htmlChart
	Apps       []htmlApp
	QuietApps  []string
	Classes    []Class
	Owners     []htmlOption
	Namespaces []htmlOption
	Statuses   []Status
	Stats      string
	CSS        template.CSS
	JS         template.JS
	CSP        string
}

type htmlClassCount struct {
	Class Class
	N     int
}

type htmlOwner struct {
	Name                              string
	Objects, Drifted, Findings, Debts int
}

// htmlOption is a filter choice: the value the rows carry and its label.
type htmlOption struct{ Value, Label string }

type htmlApp struct {
	Name, Owner, OwnerValue string
	Source                  string
	Error                   string
	Notes                   []string
	Summary                 string
	Objects                 []htmlObject
	InSync                  int
}

type htmlObject struct {
	Ref, Status, StatusText, Location string
	Namespace, Owner                  string // filter values
	Findings                          []htmlFinding
}

type htmlFinding struct {
	Class             Class
	Type              Type
	Path, Git, Live   string
	Masked, Ignored   bool
	Who, Operation    string
	Person            string // from the audit log
	Time, Age         string
	Hint, IgnoredNote string
	Contract          string // a contract's verdict that needs a reader
}

func writeHTML(w io.Writer, r *Report, opts WriteOptions) error {
	v := newHTMLView(r, opts.now(r))
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
	}
	v.CSS, v.JS = template.CSS(htmlCSS), template.JS(htmlJS)
	// Only this page's own style and script may run; nothing may be fetched.
	v.CSP = "default-src 'none'; style-src " + sum(htmlCSS) + "; script-src " + sum(htmlJS) + "; img-src data:; form-action 'none'; base-uri 'none'"
	return htmlTemplate().Execute(w, v)
}

// ownerValue is the filter value of an owner: "-" for none.
func ownerValue(owner string) string {
	if owner == "" {
		return "-"
	}
	return owner
}

// namespaceValue is the filter value of a namespace: "-" for a
// cluster-scoped object.
func namespaceValue(ns string) string {
	if ns == "" {
		return "-"
	}
	return ns
}

func newHTMLView(r *Report, now time.Time) htmlView {
	v := htmlView{
		Cluster:    r.Cluster,
		ScannedAt:  r.ScannedAt.UTC().Format("2006-01-02 15:04:05 MST"),
		Summary:    r.Summary,
		Violations: r.Summary.ByVerdict[VerdictViolation],
		Errors:     r.Errors,
		Classes:    Classes,
	}
	for _, c := range Classes {
		v.ByClass = append(v.ByClass, htmlClassCount{Class: c, N: r.Summary.ByClass[c]})
	}
	for _, w := range r.Warnings {
		v.Warnings = append(v.Warnings, warningText(w))
	}
	if r.Stats != nil {
		v.Stats = fmt.Sprintf("%d API requests (%d throttled), %.1f s", r.Stats.APIRequests, r.Stats.Throttled, r.Stats.DurationSeconds)
		if c := r.Stats.Cache; c != nil {
			v.Stats += fmt.Sprintf(", %d objects in sync since the last scan (not compared again)", c.InSync)
		}
	}

	owners := map[string]*htmlOwner{}
	owner := func(name string) *htmlOwner {
		o, ok := owners[name]
		if !ok {
			o = &htmlOwner{Name: name}
			owners[name] = o
		}
		return o
	}
	namespaces := map[string]bool{}
	statuses := map[Status]bool{}
	for _, app := range r.Apps {
		for _, o := range app.Objects {
			own := owner(objectOwner(app, o))
			own.Objects++
			if o.Status == StatusDrifted {
				own.Drifted++
			}
			own.Findings += len(o.ActiveFindings())
		}
		if app.Quiet() {
			v.QuietApps = append(v.QuietApps, app.Name)
			continue
		}
		owner(app.Owner)
		v.Apps = append(v.Apps, newHTMLApp(app, now, namespaces, statuses))
	}
	for _, d := range r.Debts {
		owner(d.Owner).Debts++
		v.Debts = append(v.Debts, newHTMLDebt(d))
	}
	for _, o := range owners {
		v.ByOwner = append(v.ByOwner, *o)
	}
	sort.Slice(v.ByOwner, func(i, j int) bool {
		a, b := v.ByOwner[i], v.ByOwner[j]
		if a.Findings != b.Findings {
			return a.Findings > b.Findings
		}
		return a.Name < b.Name
	})
	for _, o := range v.ByOwner {
		label := o.Name
		if label == "" {
			label = "(no owner)"
		}
		v.Owners = append(v.Owners, htmlOption{Value: ownerValue(o.Name), Label: label})
	}
	sort.Slice(v.Owners, func(i, j int) bool { return v.Owners[i].Value < v.Owners[j].Value })
	for ns := range namespaces {
		label := ns
		if ns == "-" {
			label = "(cluster-scoped)"
		}
		v.Namespaces = append(v.Namespaces, htmlOption{Value: ns, Label: label})
	}
	sort.Slice(v.Namespaces, func(i, j int) bool { return v.Namespaces[i].Value < v.Namespaces[j].Value })
	for _, s := range []Status{StatusDrifted, StatusMissing, StatusError, StatusExtra} {
		if statuses[s] {
			v.Statuses = append(v.Statuses, s)
		}
	}
	v.Chart = newHTMLChart(r)
	return v
}

// objectOwner is who owns an object: its own owner label, else its app's.
func objectOwner(app App, o Object) string {
	if o.Owner != "" {
		return o.Owner
	}
	return app.Owner
}

func newHTMLApp(app App, now time.Time, namespaces map[string]bool, statuses map[Status]bool) htmlApp {
	a := htmlApp{
		Name: app.Name, Owner: app.Owner, OwnerValue: ownerValue(app.Owner),
		Source: sourceText(app.Source), Error: app.Error,
		Summary: summaryText(app.Summary()),
	}
	if app.OverIgnoreCap {
		a.Notes = append(a.Notes, "this app has more ignore rules than --max-ignores-per-app allows")
	}
	if g := app.GitOps; g != nil {
		a.Notes = append(a.Notes, gitOpsText(*g))
	}
	if b := app.Breakglass; b != nil {
		a.Notes = append(a.Notes, breakglassText(*b))
	}
	for _, o := range app.Objects {
		if o.Status == StatusInSync {
			a.InSync++
			continue
		}
		ho := htmlObject{
			Ref: o.Ref(), Status: string(o.Status), StatusText: statusText(o),
			Namespace: namespaceValue(o.Namespace), Owner: ownerValue(objectOwner(app, o)),
		}
		namespaces[ho.Namespace] = true
		statuses[o.Status] = true
		if p := app.ManifestPath(o); p != "" {
			ho.Location = location(p, o.Line)
		}
		for _, f := range o.Findings {
			hf := htmlFinding{
				Class: f.Class, Type: f.Type, Path: f.Path,
				Git: htmlValue(f.Git), Live: htmlValue(f.Live),
				Masked: f.Masked, Ignored: f.Ignored,
				Who: f.manager(), Person: f.Attribution.Who(), Operation: f.Operation,
				Time: f.Time, Hint: f.Hint,
			}
			if f.Time != "" {
				hf.Age = f.Age(now) + " ago"
			}
			if f.Ignored {
				hf.IgnoredNote = ignoredText(f)
			} else {
				hf.Contract = contractText(f)
			}
			ho.Findings = append(ho.Findings, hf)
		}
		a.Objects = append(a.Objects, ho)
	}
	return a
}

// htmlValue is a value as the page shows it: whole up to htmlValueMax
// characters, cut in the middle beyond; "" stays "" (the template says
// "none").
func htmlValue(v string) string {
	if n := utf8.RuneCountInString(v); n > htmlValueMax {
		return cut(v, htmlValueMax) + fmt.Sprintf(" (%d characters, cut; -o json has it whole)", n)
	}
	return v
}

func gitOpsText(g GitOps) string {
	tool := map[string]string{"argocd": "Argo CD", "flux": "Flux"}[g.Tool]
	if tool == "" {
		tool = g.Tool
	}
	on := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	s := fmt.Sprintf("%s %s: self-heal %s, prune %s", tool, g.Object, on(g.SelfHeal), on(g.Prune))
	if g.Suspended {
		s += ", suspended"
	}
	if g.SyncBlocked != "" {
		s += "; " + g.SyncBlocked
	}
	return s
}

func breakglassText(b Breakglass) string {
	s := fmt.Sprintf("break-glass suspension by %s since %s until %s", orDash(b.By), orDash(b.Since), orDash(b.Until))
	if b.Reason != "" {
		s += " (reason: " + b.Reason + ")"
	}
	switch {
	case b.Resumed:
		s += ": expired, resumed in this run"
	case b.Expired:
		s += ": expired"
	}
	return s
}

type htmlDebt struct {
	Kind, Owner, OwnerValue, Target, Expires, Reason string
	Matched                                          int
	Expired                                          bool
}

func newHTMLDebt(d Debt) htmlDebt {
	return htmlDebt{
		Kind: string(d.Kind), Owner: orDash(d.Owner), OwnerValue: ownerValue(d.Owner),
		Target: d.Rule.Target(), Expires: orDash(d.Rule.Expires), Reason: d.Rule.Reason,
		Matched: d.Matched, Expired: d.Kind == DebtExpired,
	}
}

// pageTitle is the page's title: the cluster and what needs attention.
func (v htmlView) Title() string {
	return fmt.Sprintf("drift in %s: %s", v.Cluster, strings.TrimSpace(plural(v.Summary.Findings, "finding")))
}
