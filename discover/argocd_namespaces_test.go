package discover

import (
	"strings"
	"testing"
	"time"
)

// argoMatchAny matches as Argo CD's glob.MatchStringInList in its regexp
// mode: /regexp/ (.NET syntax, as regexp2 compiles it) anywhere in the
// value, else a glob over the whole value; a pattern that does not compile
// matches nothing.
func TestArgoMatchAny(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		value    string
		want     bool
	}{
		{[]string{"team-*"}, "team-a", true},
		{[]string{"team-*"}, "my-team-a", false},
		{[]string{"team-?"}, "team-ab", false},
		{[]string{"{team,squad}-*"}, "squad-b", true},
		{[]string{"/team-[0-9]+/"}, "my-team-42-prod", true}, // unanchored, as regexp2's MatchString
		{[]string{"/^team-[0-9]+$/"}, "team-42-prod", false},
		{[]string{"//"}, "anything", false},            // too short to be a regexp: a glob of "//"
		{[]string{"/^team-(?!prod)/"}, "team-a", true}, // .NET lookahead, which Go's regexp lacks
		{[]string{"/^team-(?!prod)/"}, "team-prod", false},
		{[]string{"/(?<=x)y/"}, "xy", true},
		{[]string{"/team-(/"}, "team-(", false}, // does not compile: nothing, as in Argo CD
		{[]string{"team-[a"}, "team-[a", false}, // a glob that does not compile
		{[]string{"/team-a/", "team-*"}, "team-b", true},
		{nil, "team-a", false},
		{[]string{"other", "team-a"}, "team-a", true},
	} {
		if got := argoMatchAny(c.patterns, c.value); got != c.want {
			t.Errorf("argoMatchAny(%q, %q) = %v, want %v", c.patterns, c.value, got, c.want)
		}
	}
}

// ArgoApplication reads back the instance name ArgoInstance gives, in Argo
// CD's namespace and outside it.
func TestArgoInstanceReadsBack(t *testing.T) {
	for _, c := range []struct{ ns, name, instance string }{
		{"argocd", "web", "web"},
		{"team-a", "web", "team-a_web"},
	} {
		if got := ArgoInstance(c.ns, c.name, "argocd"); got != c.instance {
			t.Errorf("ArgoInstance(%s, %s) = %q, want %q", c.ns, c.name, got, c.instance)
		}
		if ns, name := ArgoApplication(c.instance, "argocd"); ns != c.ns || name != c.name {
			t.Errorf("ArgoApplication(%q) = %s/%s, want %s/%s", c.instance, ns, name, c.ns, c.name)
		}
	}
}

// A regular expression that backtracks for ever (one an AppProject's
// author could write) gives up after argoMatchTimeout and matches
// nothing, where Argo CD would wait: the scan goes on.
func TestArgoMatchAnyGivesUpOnARunawayRegexp(t *testing.T) {
	done := make(chan bool, 1)
	go func() { done <- argoMatchAny([]string{"/^(a+)+$/"}, strings.Repeat("a", 40)+"!") }()
	select {
	case got := <-done:
		if got {
			t.Error("a runaway regular expression matched")
		}
	case <-time.After(20 * argoMatchTimeout):
		t.Fatalf("argoMatchAny still matching after %v", 20*argoMatchTimeout)
	}
}
