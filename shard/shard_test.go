package shard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fnv1a32 is FNV-1a written out from its definition
// (http://www.isthe.com/chongo/tech/comp/fnv/), so the test does not trust
// the implementation it checks.
func fnv1a32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func TestAnAppAlwaysLandsInTheSameShard(t *testing.T) {
	// Pinned: changing these moves apps between shards on upgrade, and with
	// them their notification state.
	pinned := map[string]int{"web": 1, "payments": 2, "checkout-api": 0, "team-a/ingress": 2, "": 1}
	for app, want := range pinned {
		if got := Of(app, 4); got != want {
			t.Errorf("Of(%q, 4) = %d, want %d", app, got, want)
		}
		if got := int(fnv1a32(app) % 4); got != Of(app, 4) {
			t.Errorf("Of(%q, 4) = %d, FNV-1a 32 mod 4 = %d", app, Of(app, 4), got)
		}
	}
}

// byApp is the apps Plan puts in shard i of n, by app name, in their
// given order.
func byApp(apps []string, i, n int) []string {
	units := make([]App, len(apps))
	for j, a := range apps {
		units[j] = App{Name: a}
	}
	var out []string
	for j, s := range Plan(units, n, ByApp) {
		if s == i {
			out = append(out, apps[j])
		}
	}
	return out
}

func TestOneShardOrFewerHoldsEverything(t *testing.T) {
	for _, n := range []int{-1, 0, 1} {
		if got := Of("web", n); got != 0 {
			t.Errorf("Of(web, %d) = %d, want 0", n, got)
		}
	}
	apps := []string{"a", "b", "c"}
	if diff := cmp.Diff(apps, byApp(apps, 0, 1)); diff != "" {
		t.Errorf("byApp(apps, 0, 1) (-want +got):\n%s", diff)
	}
}

func TestEveryAppIsInExactlyOneShard(t *testing.T) {
	var apps []string
	for i := 0; i < 1000; i++ {
		apps = append(apps, fmt.Sprintf("app-%03d", i))
	}
	for n := 1; n <= 8; n++ {
		seen := map[string]int{}
		for i := 0; i < n; i++ {
			got := byApp(apps, i, n)
			// A shard that gets far less than its share means a poor hash.
			if min := len(apps) / n * 3 / 4; len(got) < min {
				t.Errorf("shard %d/%d holds %d apps, want at least %d", i, n, len(got), min)
			}
			for _, a := range got {
				seen[a]++
				if Of(a, n) != i {
					t.Errorf("shard %d/%d holds %s, which Of puts in shard %d", i, n, a, Of(a, n))
				}
			}
		}
		for _, a := range apps {
			if seen[a] != 1 {
				t.Errorf("with %d shards, %s is in %d shards, want exactly 1", n, a, seen[a])
			}
		}
	}
}

func TestAShardKeepsTheGivenOrder(t *testing.T) {
	apps := []string{"zeta", "alpha", "mid", "beta", "omega", "gamma", "delta", "kappa"}
	pos := map[string]int{}
	for i, a := range apps {
		pos[a] = i
	}
	total := 0
	for i := 0; i < 2; i++ {
		got := byApp(apps, i, 2)
		total += len(got)
		for j := 1; j < len(got); j++ {
			if pos[got[j-1]] > pos[got[j]] {
				t.Errorf("shard %d/2 = %v, not in input order", i, got)
			}
		}
	}
	if total != len(apps) {
		t.Errorf("two shards hold %d apps together, want %d", total, len(apps))
	}
}

func TestParseSpec(t *testing.T) {
	good := map[string]Spec{
		"0/1":  {0, 1},
		"0/4":  {0, 4},
		"3/4":  {3, 4},
		"07/8": {7, 8},
	}
	for in, want := range good {
		got, err := ParseSpec(in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", in, err)
			continue
		}
		if got != want {
			t.Errorf("ParseSpec(%q) = %+v, want %+v", in, got, want)
		}
		if back, _ := ParseSpec(got.String()); back != got {
			t.Errorf("ParseSpec(%q.String()) = %+v, want %+v", in, back, got)
		}
	}
}

func TestParseSpecRejectsBadSpecs(t *testing.T) {
	bad := map[string]string{
		"":                       "want INDEX/COUNT",
		"4":                      "want INDEX/COUNT",
		"/4":                     "index: empty",
		"1/":                     "count: empty",
		"4/4":                    "index must be below the count (0 to 3)",
		"5/4":                    "index must be below the count",
		"0/0":                    "count must be at least 1",
		"-1/4":                   `index: "-1" is not a number`,
		"+1/4":                   `index: "+1" is not a number`,
		"1/2/3":                  `count: "2/3" is not a number`,
		" 1/2":                   "is not a number",
		"a/b":                    "is not a number",
		"1/99999999999999999999": "value out of range",
	}
	for in, want := range bad {
		_, err := ParseSpec(in)
		if err == nil {
			t.Errorf("ParseSpec(%q) = nil error, want one containing %q", in, want)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("ParseSpec(%q) = %q, want it to name the spec and say %q", in, err, want)
		}
	}
}
