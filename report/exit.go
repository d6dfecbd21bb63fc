package report

import (
	"fmt"
	"strings"
)

// Exit codes shared by every command that reports drift.
const (
	ExitOK    = 0 // no drift that is not ignored (among the classes that fail)
	ExitDrift = 1 // drift, or a warning when FailOn.Warnings is set
	ExitError = 2 // an error kept part of the scan from finishing
)

// FailOn says what makes a run fail with ExitDrift (the --fail-on flag).
type FailOn struct {
	// Classes are the classes whose drift fails: nil means every class, an
	// empty list none (--fail-on none).
	Classes []Class
	// Warnings fails a scan that lost fidelity (Report.Warnings).
	Warnings bool
	// Violations fails on every finding whose contract verdict is
	// violation, whatever its class.
	Violations bool
}

// FailOnWarning is the --fail-on value that sets FailOn.Warnings.
const FailOnWarning = "warning"

// ParseFailOn reads --fail-on: a comma-separated list of classes and
// "warning", or "all" (every class) or "none" (no class). "warning" adds to
// the classes, so "all,warning" fails on every drift and on warnings, and
// "warning" alone on warnings only. "violation" adds the same way: it fails
// on findings whose contract verdict is violation.
func ParseFailOn(s string) (FailOn, error) {
	var f FailOn
	all := false
	for _, part := range strings.Split(s, ",") {
		switch c := Class(strings.TrimSpace(part)); {
		case c == "" || c == "all":
			all = true
		case c == "none":
			f.Classes = []Class{}
		case c == FailOnWarning:
			f.Warnings = true
		case string(c) == FailOnViolation:
			f.Violations = true
		case validClass(c):
			f.Classes = append(f.Classes, c)
		default:
			return FailOn{}, fmt.Errorf("--fail-on: unknown class %q (want %s, %s, %s, all or none)", c, classList(), FailOnViolation, FailOnWarning)
		}
	}
	switch {
	case all:
		f.Classes = nil
	case f.Classes == nil:
		// Only "warning" or "violation": no class fails.
		f.Classes = []Class{}
	}
	return f, nil
}

func validClass(c Class) bool {
	for _, k := range Classes {
		if k == c {
			return true
		}
	}
	return false
}

func classList() string {
	names := make([]string, len(Classes))
	for i, c := range Classes {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// ExitCode returns the process exit code for the report: ExitError when part
// of the scan failed, ExitDrift when a finding that is not ignored has one of
// the failOn classes (or an object is Missing or Extra and failOn is not
// empty), ExitOK otherwise. A nil failOn means every class; an empty one
// (--fail-on none) never fails on drift. Warnings never fail here; see
// ExitCodeFor.
func (r *Report) ExitCode(failOn []Class) int {
	return r.ExitCodeFor(FailOn{Classes: failOn})
}

// ExitCodeFor is ExitCode for a whole --fail-on: with f.Warnings, a report
// with warnings exits ExitDrift too; with f.Violations, a finding whose
// contract verdict is violation does.
func (r *Report) ExitCodeFor(f FailOn) int {
	if r.HasErrors() {
		return ExitError
	}
	if f.Warnings && len(r.Warnings) > 0 {
		return ExitDrift
	}
	failOn := f.Classes
	noClass := failOn != nil && len(failOn) == 0
	if noClass && !f.Violations {
		return ExitOK
	}
	fails := func(c Class) bool {
		if failOn == nil {
			return true
		}
		for _, f := range failOn {
			if f == c {
				return true
			}
		}
		return false
	}
	for _, app := range r.Apps {
		for _, o := range app.Objects {
			if (o.Status == StatusMissing || o.Status == StatusExtra) && !noClass {
				return ExitDrift
			}
			for _, fd := range o.ActiveFindings() {
				if fails(fd.Class) || (f.Violations && fd.Contract != nil && fd.Contract.Verdict == VerdictViolation) {
					return ExitDrift
				}
			}
		}
	}
	return ExitOK
}
