package cleansync_test

import (
	"strings"
	"testing"

	"github.com/calricon/driftscan/report"
)

// TestAChartThatRendersDifferentlyEachTimeIsWarnedOnce: the fields a chart
// generates at render time (a randAlphaNum password, the checksum/secret
// of it) are named once in one warning for the app, are not compared, and
// the password never reaches the report.
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
	if r.Stats.Dismissed[report.UnstableRender] != 2 {
		t.Errorf("unstable-render dismissals = %d, want 2 (the password, its checksum)", r.Stats.Dismissed[report.UnstableRender])
	}
	live := env.Get(t, secretGVK, ns, "chart-random-db")
	password, _ := live.Object["data"].(map[string]any)["password"].(string)
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, d := range o.Dismissed {
				if password != "" && (strings.Contains(d.Live, password) || strings.Contains(d.Git, password)) {
					t.Errorf("the generated password reached the report in %s %s", o.Ref(), d.Path)
				}
			}
		}
	}
}
