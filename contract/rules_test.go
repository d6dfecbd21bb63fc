package contract

import (
	"testing"

	"github.com/calricon/driftscan/classify"
)

// ClassRules converts the classifier's rules (classify.Ordered) for the
// admission policies, as the CLI does. Tests of both packages use it.
func ClassRules(rules []classify.Rule) []ClassRule {
	out := make([]ClassRule, len(rules))
	for i, r := range rules {
		out[i] = ClassRule{Manager: r.Manager, Subresource: r.Subresource, Users: r.Users, Groups: r.Groups, Class: r.Class}
	}
	return out
}

func TestClassRulesKeepTheClassifiersOrder(t *testing.T) {
	rules := ClassRules(classify.Ordered(nil))
	if len(rules) == 0 || rules[0].Class != "human" {
		t.Fatalf("the built-in rules start with the human ones: %+v", rules)
	}
}
