package classify

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/report"
)

func jqRule(expr string) IgnoreRule {
	return IgnoreRule{Kind: "ConfigMap", JQPathExpressions: []string{expr}, Owner: "team-web", Reason: "test", Expires: "2027-01-01"}
}

// TestJQThatBuildsLoopsOrReadsTheProcessIsRefused: an ignore rule may come
// from a tenant's Application (--from argocd imports ignoreDifferences),
// so what would let it swamp memory in one step (no timeout interrupts a
// builtin), loop, or read the scan's environment is refused when it is
// loaded, naming the construct.
func TestJQThatBuildsLoopsOrReadsTheProcessIsRefused(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`.data | select("x" * 1000000000 | length > 0)`, "operator * is not allowed"},
		{`.data | select(. + . | length > 0)`, "operator + is not allowed"},
		{`.data | select(tojson | length > 0)`, "tojson/0 is not allowed"},
		{`.data | select(tostring | length > 0)`, "tostring/0 is not allowed"},
		{`.data | select([.[]] | join("xxxxxxxx") | length > 0)`, "join/1 is not allowed"},
		{`.data | select([.[]] | add | length > 0)`, "add/0 is not allowed"},
		{`.data | select("\(.)\(.)" | length > 0)`, "string interpolation is not allowed"},
		{`.data | select(@base64 | length > 0)`, "@base64 is not allowed"},
		{`.data | select($ENV.GIT_TOKEN | startswith("a"))`, "$ENV/0 is not allowed"},
		{`.data | select(env.GIT_TOKEN | startswith("a"))`, "env/0 is not allowed"},
		{`def f: f; f`, "def f is not allowed"},
		{`reduce range(30) as $i (.; .)`, "reduce and foreach are not allowed"},
		{`.data | select(foreach .[] as $i (0; 1) > 0)`, "reduce and foreach are not allowed"},
		{`.data | select([range(1000000000)] | length > 0)`, "range/1 is not allowed"},
		{`label $out | .data`, "label and break are not allowed"},
		{`[limit(1000000000; repeat(.))] | .[0]`, "limit/2 is not allowed"},
		{`.data | select(input)`, "input/0 is not allowed"},
		{`.data | select(debug)`, "debug/0 is not allowed"},
		{`.data | recurse(.[]; true)`, "recurse/2 is not allowed"},
		{`.data |= {}`, "operator |= is not allowed"},
	} {
		t.Run(c.expr, func(t *testing.T) {
			r := jqRule(c.expr)
			err := r.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "jqPathExpression") {
				t.Errorf("Validate: %v, want an error naming the jqPathExpression and saying %q", err, c.want)
			}
		})
	}
	// What path expressions are for still loads.
	for _, expr := range []string{
		`.spec.template.spec.containers[] | select(.name == "istio-proxy")`,
		`.spec.template.spec.initContainers[]? | select(.name | test("^istio-"))`,
		`.metadata.annotations["sidecar.istio.io/status"]`,
		`.webhooks[]?.clientConfig.caBundle`,
		`.spec.rules[] | select(.host // "" | endswith(".internal") and (.http != null))`,
		`.. | select(type == "object" and has("caBundle")) | .caBundle`,
		`.spec.containers[] as $c | $c | select($c.name == "app") | .image`,
	} {
		r := jqRule(expr)
		if err := r.Validate(); err != nil {
			t.Errorf("%s: %v, want it to load", expr, err)
		}
	}
}

// bigObject is a ConfigMap-like object with n keys.
func bigObject(n int) map[string]any {
	data := map[string]any{}
	for i := range n {
		data[fmt.Sprintf("k%05d", i)] = "v"
	}
	return map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "big"}, "data": data}
}

// TestAJQRulePastItsLimitsIsAnErrorOnThatRule: an expression that runs
// longer than JQLimits.Timeout, or selects more than MaxPaths paths, on a
// tenant's live object ignores nothing there, is an error that names the
// rule, the expression and the object, and is not run on later objects.
func TestAJQRulePastItsLimitsIsAnErrorOnThatRule(t *testing.T) {
	slow := `.data | select(isempty(.[] as $a | .[] as $b | .[] as $c | .[] as $d | select(false))) | .k00000`
	many := `.. | select(type == "string")`
	// Each limit is tried alone, the other out of reach, so that a loaded
	// machine cannot trip the timeout before the path cap.
	for _, tt := range []struct {
		name   string
		expr   string
		limits JQLimits
		want   string
	}{
		{"timeout", slow, JQLimits{Timeout: 100 * time.Millisecond, MaxPaths: 1 << 20}, "timed out after 100ms"},
		{"paths", many, JQLimits{Timeout: time.Minute, MaxPaths: 1000}, "selects more than 1000 paths"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rules := []IgnoreRule{jqRule(tt.expr), jqRule(`.data.k00001`)}
			ig, err := NewIgnorerWith(rules, IgnoreOptions{Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), JQ: tt.limits})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"big", "big-2"} {
				oi := ig.For(IgnoreObject{App: "web", Kind: "ConfigMap", Namespace: "shop", Name: name, Live: bigObject(2000)})
				f0, f1 := report.Finding{}, report.Finding{}
				oi.Apply("/data/k00000", &f0)
				oi.Apply("/data/k00001", &f1)
				if f0.Ignored {
					t.Errorf("%s: the rule past its limits ignored /data/k00000", name)
				}
				if !f1.Ignored || f1.IgnoreRule.JQPathExpressions[0] != `.data.k00001` {
					t.Errorf("%s: /data/k00001: ignored %v by %+v, want ignored by the rule within its limits", name, f1.Ignored, f1.IgnoreRule)
				}
			}
			errs := ig.Errors()
			want := fmt.Sprintf("ignore[0] for ConfigMap: jqPathExpression %q on ConfigMap/shop/big: %s (over the jq limits); it is not applied to this or any later object", tt.expr, tt.want)
			if len(errs) != 1 {
				t.Fatalf("errors %v, want 1", errs)
			}
			if errs[0].Error() != want || !errors.Is(errs[0], errJQLimit) {
				t.Errorf("error:\n got %v\nwant %s", errs[0], want)
			}
		})
	}
}
