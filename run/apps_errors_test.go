package run

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
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

// A scan of some apps (--app) warns of what another reconciler object left
// unscanned only when it is one of theirs; a reconciler's settings it could
// not read concern every app. A scan of every app warns of them all.
func TestOnlyTheAskedAppsNotScannedWarningsAreTheScans(t *testing.T) {
	ws := []report.Warning{
		{Code: report.WarnNotScanned, Object: "Application/argocd/web", Message: "not scanned: source 1: config management plugin"},
		{Code: report.WarnNotScanned, Object: "Application/argocd/vault", Message: "not scanned: config management plugin"},
		{Code: report.WarnReconcilerSettingsUnreadable, Object: "ConfigMap/argocd/argocd-cm", Message: "forbidden"},
	}
	for _, tt := range []struct {
		onlyAsked bool
		want      []string
	}{
		{true, []string{"Application/argocd/web", "ConfigMap/argocd/argocd-cm"}},
		{false, []string{"Application/argocd/web", "Application/argocd/vault", "ConfigMap/argocd/argocd-cm"}},
	} {
		r := &report.Report{Apps: []report.App{{Name: "web", GitOps: &report.GitOps{Object: "Application/argocd/web"}}}}
		attachDiscoveryWarnings(r, ws, tt.onlyAsked)
		var got []string
		for _, w := range r.Warnings {
			got = append(got, w.Object)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("onlyAsked %v: warnings (-want +got):\n%s", tt.onlyAsked, d)
		}
	}
}

// `--app vault` of an Application discovery skipped says why, not that the
// config has no such app.
func TestAnAskedAppDiscoverySkippedSaysWhy(t *testing.T) {
	skipped := []discover.Skip{
		{Object: "Application/argocd/vault", Reason: `config management plugin "avp": driftscan runs no plugin, so nothing it renders is compared`},
		{Object: "Application/team-a/api", Reason: "destination server https://east is not the scanned cluster"},
	}
	for app, want := range map[string]string{
		"vault":        `app vault: discovery skipped Application/argocd/vault: config management plugin "avp": driftscan runs no plugin, so nothing it renders is compared`,
		"team-a/api":   "app team-a/api: discovery skipped Application/team-a/api: destination server https://east is not the scanned cluster",
		"nonesuch":     "app nonesuch: no such app in the config",
		"argocd/vault": `app argocd/vault: discovery skipped Application/argocd/vault: config management plugin "avp": driftscan runs no plugin, so nothing it renders is compared`,
	} {
		cfg := config.New()
		cfg.Apps = []config.App{{Name: "web"}}
		opts := DefaultOptions()
		opts.Apps = []string{app}
		_, err := selectApps(cfg, opts, skipped)
		if err == nil || err.Error() != want {
			t.Errorf("--app %s: error %v, want %q", app, err, want)
		}
	}
}
