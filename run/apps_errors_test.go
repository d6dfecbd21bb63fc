package run

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/report"
)

// A scan of some apps (--app) reports the discovery errors of those apps and
// their reconciler objects, not another object's: in e2e, a HelmRelease of
// another test whose namespace was being deleted (its HelmRepository gone
// first) made every `--app` scan exit 2. A scan of every app reports them
// all.
func TestOnlyTheAskedAppsDiscoveryErrorsAreTheScans(t *testing.T) {
	errs := []*discover.Error{
		{Object: "HelmRelease/a/web", App: "web", Err: errors.New("postRenderers are not applied")},
		{Object: "HelmRelease/a/web", Err: errors.New("valuesFrom not found")},
		{Object: "HelmRelease/b/other", Err: errors.New("source HelmRepository/b/other not found")},
		{Object: "Application/argocd/api", App: "api", Err: errors.New("fileParameters")},
	}
	for _, tt := range []struct {
		onlyAsked bool
		app       string
		scan      []string
	}{
		{true, "HelmRelease/a/web: postRenderers are not applied", []string{"HelmRelease/a/web: valuesFrom not found"}},
		{false, "HelmRelease/a/web: postRenderers are not applied", []string{"HelmRelease/a/web: valuesFrom not found", "HelmRelease/b/other: source HelmRepository/b/other not found", "Application/argocd/api: fileParameters"}},
	} {
		r := &report.Report{Apps: []report.App{{Name: "web", GitOps: &report.GitOps{Object: "HelmRelease/a/web"}}}}
		attachDiscoveryErrors(r, errs, tt.onlyAsked)
		if r.Apps[0].Error != tt.app {
			t.Errorf("onlyAsked %v: app error %q, want %q", tt.onlyAsked, r.Apps[0].Error, tt.app)
		}
		if d := cmp.Diff(tt.scan, r.Errors); d != "" {
			t.Errorf("onlyAsked %v: scan errors (-want +got):\n%s", tt.onlyAsked, d)
		}
	}
}
