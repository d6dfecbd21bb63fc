package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// JUnit XML as CI systems read it (the Ant/Surefire dialect): one testsuite
// per app and one testcase per object. Drifted (with a finding that is not
// ignored), Missing and Extra objects fail; an object in Error, and an app
// that could not be scanned, is an error. Ignored findings never fail: they
// are listed in the testcase's system-out.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Timestamp  string           `xml:"timestamp,attr"`
	Properties *junitProperties `xml:"properties"`
	Cases      []junitCase      `xml:"testcase"`
	// SystemOut lists the warnings that concern the suite's app (or, in
	// the "(scan)" suite, the whole scan): they fail nothing.
	SystemOut *junitCDATA `xml:"system-out"`
}

type junitProperties struct {
	Items []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	SystemOut *junitCDATA   `xml:"system-out"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",cdata"`
}

type junitCDATA struct {
	Body string `xml:",cdata"`
}

func writeJUnit(w io.Writer, r *Report, opts WriteOptions) error {
	width := opts.valueWidth()
	stamp := r.ScannedAt.UTC().Format("2006-01-02T15:04:05")
	doc := junitSuites{Name: "driftscan " + r.Cluster}
	for _, app := range r.Apps {
		s := junitSuite{
			Name:      app.Name,
			Timestamp: stamp,
			Properties: &junitProperties{Items: []junitProperty{
				{Name: "cluster", Value: r.Cluster},
				{Name: "owner", Value: app.Owner},
				{Name: "source", Value: sourceText(app.Source)},
			}},
		}
		if app.Error != "" {
			s.Cases = append(s.Cases, junitCase{
				ClassName: app.Name,
				Name:      "App/" + app.Name,
				Error:     &junitProblem{Message: xmlSafe(firstLine(app.Error)), Type: "app", Body: xmlSafe(app.Error)},
			})
		}
		for _, o := range app.Objects {
			c := junitCase{ClassName: app.Name, Name: o.Ref(), Line: o.Line}
			if p := app.ManifestPath(o); p != "" {
				c.File = p
			}
			active := o.ActiveFindings()
			switch o.Status {
			case StatusError:
				c.Error = &junitProblem{Message: xmlSafe(firstLine(o.Error)), Type: "error", Body: xmlSafe(o.Error)}
			case StatusMissing, StatusExtra:
				c.Failure = &junitProblem{Message: statusText(o), Type: strings.ToLower(string(o.Status)), Body: xmlSafe(o.Ref() + ": " + statusText(o))}
			default:
				if len(active) > 0 {
					lines := make([]string, len(active))
					for i, f := range active {
						lines[i] = junitFindingLine(f, width)
					}
					c.Failure = &junitProblem{Message: plural(len(active), "finding"), Type: "drift", Body: xmlSafe(strings.Join(lines, "\n"))}
				}
			}
			var out []string
			for _, f := range o.Findings {
				if f.Ignored {
					out = append(out, junitFindingLine(f, width)+" ("+ignoredText(f)+")")
				}
			}
			if len(out) > 0 {
				c.SystemOut = &junitCDATA{Body: xmlSafe(strings.Join(out, "\n"))}
			}
			s.Cases = append(s.Cases, c)
		}
		s.SystemOut = junitWarnings(r.Warnings, app.Name)
		doc.Suites = append(doc.Suites, s)
	}
	scanWarnings := junitWarnings(r.Warnings, "")
	if len(r.Errors) > 0 || scanWarnings != nil {
		s := junitSuite{Name: "(scan)", Timestamp: stamp, SystemOut: scanWarnings}
		for i, e := range r.Errors {
			s.Cases = append(s.Cases, junitCase{
				ClassName: "(scan)",
				Name:      fmt.Sprintf("error %d", i+1),
				Error:     &junitProblem{Message: xmlSafe(firstLine(e)), Type: "scan", Body: xmlSafe(e)},
			})
		}
		doc.Suites = append(doc.Suites, s)
	}
	for i := range doc.Suites {
		s := &doc.Suites[i]
		s.Tests = len(s.Cases)
		for _, c := range s.Cases {
			if c.Failure != nil {
				s.Failures++
			}
			if c.Error != nil {
				s.Errors++
			}
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}

	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitWarnings lists the warnings of app ("" for the scan's own), one a
// line; nil when there are none.
func junitWarnings(ws []Warning, app string) *junitCDATA {
	var lines []string
	for _, w := range ws {
		if w.App == app {
			w.App = ""
			lines = append(lines, "warning: "+warningText(w))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return &junitCDATA{Body: xmlSafe(strings.Join(lines, "\n"))}
}

// junitFindingLine is one finding on one line:
// `human Changed .spec.x by kubectl-edit: "a" → "b"`.
func junitFindingLine(f Finding, width int) string {
	return fmt.Sprintf("%s %s %s by %s: %s → %s", f.Class, f.Type, oneLine(f.Path), diffBy(f), sarifValue(f.Git, width), sarifValue(f.Live, width))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// xmlSafe replaces characters XML 1.0 cannot carry (most control characters,
// invalid UTF-8) with U+FFFD; encoding/xml escapes the rest but passes CDATA
// through as is.
func xmlSafe(s string) string {
	ok := true
	for _, r := range s {
		if !xmlChar(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !xmlChar(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// xmlChar reports whether r is a Char in the XML 1.0 grammar.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
