package classify

import (
	"fmt"
	"regexp"

	"github.com/calricon/driftscan/report"
)

// Rule is a user classification rule from the config. Rules are tried in
// order before the built-in ones; the first that matches decides the class.
type Rule struct {
	// Manager is a regular expression on the field manager.
	Manager string `yaml:"manager" json:"manager"`
	// Operation is Apply or Update; empty matches both.
	Operation string `yaml:"operation" json:"operation,omitempty"`
	// Subresource is matched exactly when set: scale, status, ...
	// A nil Subresource matches any; use "" in YAML to match none.
	Subresource *string      `yaml:"subresource" json:"subresource,omitempty"`
	Class       report.Class `yaml:"class" json:"class"`

	re *regexp.Regexp
}

// Validate checks the rule and compiles its expression.
func (r *Rule) Validate() error {
	re, err := regexp.Compile(r.Manager)
	if err != nil {
		return fmt.Errorf("manager %q: %w", r.Manager, err)
	}
	r.re = re
	switch r.Operation {
	case "", "Apply", "Update":
	default:
		return fmt.Errorf("operation %q: want Apply or Update", r.Operation)
	}
	if !validClass(r.Class) {
		return fmt.Errorf("class %q: want one of %v", r.Class, report.Classes)
	}
	return nil
}

func validClass(c report.Class) bool {
	for _, k := range report.Classes {
		if k == c {
			return true
		}
	}
	return false
}
