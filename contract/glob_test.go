package contract

import "testing"

func TestGlobsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"prod-*", "prod-a", true},
		{"prod-*", "prod-*-eu", true},
		{"prod-*", "staging-*", false},
		{"*-eu", "prod-*", true},
		{"prod-?", "prod-ab", false},
		{"prod-?", "prod-*", true},
		{"a*b", "*c", false},
		{"*", "anything", true},
		{"prod", "prod", true},
		{"prod", "prod-a", false},
	} {
		if got := globsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("globsOverlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := globsOverlap(tc.b, tc.a); got != tc.want {
			t.Errorf("globsOverlap(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestGlobsMatchNamesAsCELWould(t *testing.T) {
	for _, tc := range []struct {
		glob, s string
		want    bool
	}{
		{"prod-*", "prod-a", true},
		{"prod-*", "prod-", true},
		{"prod-*", "xprod-a", false},
		{"prod.?", "prod.a", true},
		{"prod.?", "prodxa", false}, // a dot is a dot, not a regular expression
		{"system:serviceaccount:ci:*", "system:serviceaccount:ci:deployer", true},
	} {
		if got := matchGlob(tc.glob, tc.s); got != tc.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v (regexp %s)", tc.glob, tc.s, got, tc.want, globRegexp(tc.glob))
		}
	}
}
