package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// junitDoc is JUnit XML as a CI system reads it back.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Cases    []struct {
			ClassName string `xml:"classname,attr"`
			Name      string `xml:"name,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
				Body    string `xml:",chardata"`
			} `xml:"error"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitParsesBackWithTheRightCounts(t *testing.T) {
	var doc junitDoc
	if err := xml.NewDecoder(bytes.NewReader(render(t, FormatJUnit, DefaultWriteOptions()))).Decode(&doc); err != nil {
		t.Fatalf("JUnit output does not parse: %v", err)
	}

	type suite struct {
		Name                    string
		Tests, Failures, Errors int
	}
	var got []suite
	tests, failures, errs := 0, 0, 0
	for _, s := range doc.Suites {
		got = append(got, suite{s.Name, s.Tests, s.Failures, s.Errors})
		if s.Tests != len(s.Cases) {
			t.Errorf("suite %s says tests=%d but has %d testcases", s.Name, s.Tests, len(s.Cases))
		}
		f, e := 0, 0
		for _, c := range s.Cases {
			if c.ClassName != s.Name {
				t.Errorf("testcase %s has classname %q, want the app %q", c.Name, c.ClassName, s.Name)
			}
			if c.Failure != nil {
				f++
			}
			if c.Error != nil {
				e++
			}
		}
		if f != s.Failures || e != s.Errors {
			t.Errorf("suite %s says failures=%d errors=%d but has %d and %d", s.Name, s.Failures, s.Errors, f, e)
		}
		tests, failures, errs = tests+s.Tests, failures+f, errs+e
	}
	want := []suite{
		{"billing", 4, 3, 0},  // two drifted objects and an extra one fail
		{"payments", 1, 0, 1}, // the app error is an error testcase
		{"web", 5, 2, 1},      // drifted and missing fail, the PDB is an error
		{"(scan)", 1, 0, 1},   // the scan-wide listing error
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("suites (-want +got):\n%s", diff)
	}
	if doc.Tests != tests || doc.Failures != failures || doc.Errors != errs {
		t.Errorf("testsuites totals = %d/%d/%d, want %d/%d/%d", doc.Tests, doc.Failures, doc.Errors, tests, failures, errs)
	}

	web := doc.Suites[2]
	deploy := web.Cases[2]
	if deploy.Name != "Deployment/web/frontend" || deploy.Failure == nil {
		t.Fatalf("testcase %q failure = %v, want the drifted Deployment to fail", deploy.Name, deploy.Failure)
	}
	if deploy.Failure.Message != "4 findings" || deploy.Failure.Type != "drift" {
		t.Errorf("failure = %q/%q, want message %q type drift", deploy.Failure.Message, deploy.Failure.Type, "4 findings")
	}
	if lines := strings.Split(deploy.Failure.Body, "\n"); len(lines) != 4 {
		t.Errorf("failure body has %d lines, want one per finding that is not ignored:\n%s", len(lines), deploy.Failure.Body)
	}
	if strings.Contains(deploy.Failure.Body, "restartedAt") {
		t.Error("the ignored finding is listed as a failure")
	}
	if !strings.Contains(deploy.SystemOut, "restartedAt") || !strings.Contains(deploy.SystemOut, "ignored: rollout restarts are expected") {
		t.Errorf("system-out = %q, want the ignored finding with its reason", deploy.SystemOut)
	}
	if pay := doc.Suites[1].Cases[0]; pay.Name != "App/payments" || pay.Error == nil || !strings.Contains(pay.Error.Body, "render helm chart") {
		t.Errorf("payments testcase = %+v, want an App/payments error with the render error", pay)
	}
}

func TestJUnitObjectWithOnlyIgnoredFindingsPasses(t *testing.T) {
	r := New(loadFixture(t).ScannedAt, "c")
	r.Apps = []App{{Name: "web", Objects: []Object{{
		Kind: "Deployment", Namespace: "web", Name: "frontend",
		Findings: []Finding{{Path: ".spec.replicas", Type: TypeChanged, Class: ClassHuman, Git: "1", Live: "3", Ignored: true, IgnoreRule: &IgnoreRule{Reason: "scaled by hand on purpose"}}},
	}}}}
	r.Finalize()
	var doc junitDoc
	if err := xml.Unmarshal(mustWrite(t, FormatJUnit, r), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Failures != 0 || doc.Errors != 0 || doc.Suites[0].Cases[0].Failure != nil {
		t.Errorf("an object whose findings are all ignored failed: %+v", doc)
	}
}

func TestJUnitReplacesCharactersXMLCannotCarry(t *testing.T) {
	r := New(loadFixture(t).ScannedAt, "c")
	r.Apps = []App{{Name: "web", Objects: []Object{{
		Kind: "ConfigMap", Namespace: "web", Name: "cfg",
		Findings: []Finding{{Path: ".data.x", Type: TypeChanged, Class: ClassHuman, Git: "a\x00b", Live: "c\x1bd]]>e"}},
	}}}}
	r.Finalize()
	var doc junitDoc
	if err := xml.Unmarshal(mustWrite(t, FormatJUnit, r), &doc); err != nil {
		t.Fatalf("JUnit with control characters does not parse: %v", err)
	}
	if body := doc.Suites[0].Cases[0].Failure.Body; !strings.Contains(body, "]]>e") {
		t.Errorf("failure body = %q, want the CDATA terminator kept as text", body)
	}
}
