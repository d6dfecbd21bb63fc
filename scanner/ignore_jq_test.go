package scanner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// TestAJQRuleThatRunsTooLongIsAnErrorAndTheScanFinishes: a tenant grows
// the live ConfigMap to 300 keys, on which an ignore rule's jq expression
// would run for longer than any scan lasts (it pairs every key with every
// other, four deep: 300^4 steps). Before jq rules were bounded the scan never finished, holding the
// lock every other object's ignore rules waited on. Now the expression
// stops at Options.JQ.Timeout, is an error on its rule, hides nothing, and
// every other object and rule is scanned as usual.
func TestAJQRuleThatRunsTooLongIsAnErrorAndTheScanFinishes(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	var keys []string
	for i := range 300 {
		keys = append(keys, fmt.Sprintf(`"K%03d":"v"`, i))
	}
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{`+strings.Join(keys, ",")+`}}`)
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)

	slow := `.data | select(isempty(.[] as $a | .[] as $b | .[] as $c | .[] as $d | select(false))) | .K000`
	cfg := webApp(ns)
	cfg.Ignore = []classify.IgnoreRule{
		{Kind: "ConfigMap", JQPathExpressions: []string{slow}, Owner: "team-web", Reason: "tenant keys", Expires: "2027-03-01"},
		{Kind: "Deployment", JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "app") | .image`}, Owner: "team-release", Reason: "canary", Expires: "2027-03-01"},
	}
	start := time.Now()
	r := runScan(t, cfg, func(o *Options) { o.JQ = classify.JQLimits{Timeout: 200 * time.Millisecond, MaxPaths: 10000} })
	t.Logf("scan took %s", time.Since(start).Round(time.Millisecond))

	want := []string{fmt.Sprintf("ignore[0] for ConfigMap: jqPathExpression %q on ConfigMap/%s/web-config: timed out after 200ms (over the jq limits); it is not applied to this or any later object", slow, ns)}
	if diff := cmp.Diff(want, r.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if r.ExitCode(nil) != report.ExitError {
		t.Errorf("exit %d, want %d: a rule that could not be applied is an error", r.ExitCode(nil), report.ExitError)
	}
	var ignored, shown int
	for _, row := range rows(r) {
		switch {
		case row.Object == "ConfigMap/web-config" && row.Ignored:
			t.Errorf("%s is ignored by the rule that timed out", row.Path)
		case row.Object == "ConfigMap/web-config":
			shown++
		case row.Object == "Deployment/web" && row.Ignored:
			ignored++
		}
	}
	if shown != 300 || ignored != 1 {
		t.Errorf("%d ConfigMap findings shown (want 300), %d Deployment findings ignored (want 1, by the rule within its limits)", shown, ignored)
	}
}
