package cleansync_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/report"
)

// TestAChartThatRendersDifferentlyEachTimeIsWarnedOnce: the fields a chart
// generates at render time (a randAlphaNum password, the checksum/secret
// of it, a generated token) are named once in one warning for the app, are
// not compared, and the generated credentials never reach the report.
func TestAChartThatRendersDifferentlyEachTimeIsWarnedOnce(t *testing.T) {
	m := modes[0]
	ns := env.Namespace(t, nil)
	a := prepare(t, "chart-random", ns)
	a.sync(t, m, ns)
	r := a.scan(t, m, ns)
	clean(t, r)

	var warnings []report.Warning
	for _, w := range r.Warnings {
		if w.Code == report.WarnUnstableRender {
			warnings = append(warnings, w)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("%d UnstableRender warnings, want one for the app: %+v", len(warnings), r.Warnings)
	}
	w := warnings[0]
	if w.App != "shop" {
		t.Errorf("warning for app %q, want shop", w.App)
	}
	for _, want := range []string{
		"Secret/chart-random-db .data.password",
		"Deployment/chart-random .spec.template.metadata.annotations.checksum/secret",
		"renders differently each time",
	} {
		if !strings.Contains(w.Message, want) {
			t.Errorf("warning does not name %q:\n%s", want, w.Message)
		}
	}
	for _, stable := range []string{"checksum/config", ".data.username", "LOG_LEVEL"} {
		if strings.Contains(w.Message, stable) {
			t.Errorf("warning names %q, which both renders agree on:\n%s", stable, w.Message)
		}
	}
	if r.Stats.Dismissed[report.UnstableRender] != 3 {
		t.Errorf("unstable-render dismissals = %d, want 3 (the password, its checksum, the token)", r.Stats.Dismissed[report.UnstableRender])
	}
	// Generated credentials stay masked in --explain-dismissed as in findings.
	secret := env.Get(t, secretGVK, ns, "chart-random-db")
	password, _ := secret.Object["data"].(map[string]any)["password"].(string)
	deploy := env.Get(t, deployment, ns, "chart-random")
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	token, _ := containers[0].(map[string]any)["env"].([]any)[0].(map[string]any)["value"].(string)
	if password == "" || token == "" {
		t.Fatalf("no generated password (%q) or token (%q) live", password, token)
	}
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, d := range o.Dismissed {
				for _, generated := range []string{password, token} {
					if strings.Contains(d.Live, generated) || strings.Contains(d.Git, generated) {
						t.Errorf("a generated credential reached the report in %s %s: %q", o.Ref(), d.Path, d.Live)
					}
				}
			}
		}
	}
}
