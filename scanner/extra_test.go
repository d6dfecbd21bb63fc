package scanner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// With --extra, a live object an app's tracking names that Argo CD leaves
// out of the app's sync status is no Extra object: a sync hook (never
// pruned either), or one marked IgnoreExtraneous (a dismissal); Prune=false
// alone, or a hook: Skip alone (no hook for Argo CD), is extra. Of a Flux
// HelmRelease, Helm's hooks are no extra objects either; to a Flux
// Kustomization these marks mean nothing. Seen with the real Argo CD and
// helm-controller in e2e TestExtraObjectsArgoCDDoesNotCount and
// TestExtraObjectsOfAFluxHelmRelease.
func TestExtraLeavesOutWhatArgoCDDoesNotCount(t *testing.T) {
	ns := env.Namespace(t, nil)
	web, apps, rel := t.TempDir(), t.TempDir(), t.TempDir()
	for _, dir := range []string{web, apps, rel} {
		if err := os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-"+filepath.Base(dir)+"}\ndata: {k: v}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg-`+filepath.Base(web)+`"},"data":{"k":"v"}}`))
	env.Apply(t, "kustomize-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg-`+filepath.Base(apps)+`"},"data":{"k":"v"}}`))
	env.Apply(t, "helm-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg-`+filepath.Base(rel)+`"},"data":{"k":"v"}}`))
	webLabels := `"labels":{"argocd.argoproj.io/instance":"web"}`
	fluxLabels := `"labels":{"kustomize.toolkit.fluxcd.io/name":"apps","kustomize.toolkit.fluxcd.io/namespace":"flux-system"}`
	relLabels := `"labels":{"helm.toolkit.fluxcd.io/name":"rel","helm.toolkit.fluxcd.io/namespace":"flux-system"}`
	for name, meta := range map[string]string{
		"left":       webLabels,
		"hook":       webLabels + `,"annotations":{"argocd.argoproj.io/hook":"PostSync"}`,
		"helm-hook":  webLabels + `,"annotations":{"helm.sh/hook":"pre-install,pre-upgrade"}`,
		"crd-hook":   webLabels + `,"annotations":{"helm.sh/hook":"crd-install"}`,
		"skip":       webLabels + `,"annotations":{"argocd.argoproj.io/hook":"Skip"}`,
		"ignored":    webLabels + `,"annotations":{"argocd.argoproj.io/compare-options":"ServerSideDiff=true, IgnoreExtraneous"}`,
		"generated":  webLabels + `,"annotations":{"argocd.argoproj.io/compare-options":"IgnoreExtraneous","argocd.argoproj.io/sync-options":"Prune=false"}`,
		"kept":       webLabels + `,"annotations":{"argocd.argoproj.io/sync-options":"Prune=false"}`,
		"flux-hook":  fluxLabels + `,"annotations":{"helm.sh/hook":"post-install"}`,
		"flux-ignor": fluxLabels + `,"annotations":{"argocd.argoproj.io/compare-options":"IgnoreExtraneous"}`,
		"rel-left":   relLabels + `,"annotations":{"helm.sh/resource-policy":"keep"}`,
		"rel-hook":   relLabels + `,"annotations":{"helm.sh/hook":"post-install,post-upgrade"}`,
		"rel-ignor":  relLabels + `,"annotations":{"argocd.argoproj.io/compare-options":"IgnoreExtraneous"}`,
	} {
		env.Create(t, "kubectl-create", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`",`+meta+`}}`))
	}
	r := runScan(t, scanConfig(ns,
		config.App{Name: "web", Source: config.Source{Path: web}},
		config.App{Name: "apps", Source: config.Source{Path: apps}, GitOps: &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/apps"}},
		config.App{Name: "rel", Source: config.Source{Path: rel}, GitOps: &report.GitOps{Tool: "flux", Object: "HelmRelease/flux-system/rel"}},
	), func(o *Options) { o.Extra = true })
	want := map[string]report.Status{
		"ConfigMap/cfg-" + filepath.Base(web): report.StatusInSync, "ConfigMap/cfg-" + filepath.Base(apps): report.StatusInSync, "ConfigMap/cfg-" + filepath.Base(rel): report.StatusInSync,
		"ConfigMap/left": report.StatusExtra, "ConfigMap/crd-hook": report.StatusExtra, "ConfigMap/skip": report.StatusExtra, "ConfigMap/kept": report.StatusExtra,
		"ConfigMap/flux-hook": report.StatusExtra, "ConfigMap/flux-ignor": report.StatusExtra,
		"ConfigMap/rel-left": report.StatusExtra, "ConfigMap/rel-ignor": report.StatusExtra,
	}
	if d := cmp.Diff(want, statuses(r)); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
	if got := r.Stats.Dismissed[report.ExtraneousIgnored]; got != 2 {
		t.Errorf("%d objects dismissed as %s, want 2 (ignored, generated)", got, report.ExtraneousIgnored)
	}
}

// Argo CD with argocd-cm's installationID counts as an app's own only what
// carries its id next to the tracking id (e2e TestTwoArgoCDInstallations):
// another installation's app of the same name is not this one's extra.
// Without argocd-cm known, any id is this Argo CD's.
func TestExtraIsOfThisArgoCDInstallation(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {k: v}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"v"}}`))
	for name, id := range map[string]string{"east": `,"argocd.argoproj.io/installation-id":"east"`, "west": `,"argocd.argoproj.io/installation-id":"west"`, "none": ""} {
		env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","annotations":{"argocd.argoproj.io/tracking-id":"web:/ConfigMap:`+ns+`/`+name+`"`+id+`}}}`))
	}
	east := "east"
	for _, c := range []struct {
		name string
		id   *string
		want []string
	}{
		{"installationID east", &east, []string{"ConfigMap/east"}},
		{"argocd-cm unknown", nil, []string{"ConfigMap/east", "ConfigMap/none", "ConfigMap/west"}},
	} {
		app := config.App{Name: "web", Source: config.Source{Path: dir}, GitOps: &report.GitOps{Tool: "argocd", Object: "Application/argocd/web"}, ArgoInstallationID: c.id}
		r := runScan(t, scanConfig(ns, app), func(o *Options) { o.Extra = true })
		var got []string
		for ref, s := range statuses(r) {
			if s == report.StatusExtra {
				got = append(got, ref)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: extra %v, want %v", c.name, got, c.want)
		}
	}
}

// Argo CD tracks an Application outside its own namespace as
// <namespace>_<name> (e2e TestArgoCDApplicationsInAnyNamespace): with
// Applications web in argocd and in team, each app's extra objects are
// those its own instance name tracks, whichever the scan indexes last.
func TestExtraOfApplicationsOfOneNameInTwoNamespaces(t *testing.T) {
	ns := env.Namespace(t, nil)
	var apps []config.App
	for _, a := range []struct{ name, object, instance, suffix string }{
		{"argocd/web", "Application/argocd/web", "web", "web"},
		{"team/web", "Application/team/web", "team_web", "team-web"},
	} {
		dir := t.TempDir()
		cm := "cfg-" + a.suffix
		if err := os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+cm+"}\ndata: {k: v}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+cm+`"},"data":{"k":"v"}}`))
		env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"left-`+a.suffix+`","annotations":{"argocd.argoproj.io/tracking-id":"`+a.instance+`:/ConfigMap:`+ns+`/left-`+a.suffix+`"}}}`))
		apps = append(apps, config.App{Name: a.name, Source: config.Source{Path: dir}, GitOps: &report.GitOps{Tool: "argocd", Object: a.object}, ArgoInstance: a.instance})
	}
	for _, order := range [][]config.App{apps, {apps[1], apps[0]}} {
		r := runScan(t, scanConfig(ns, order...), func(o *Options) { o.Extra = true })
		got := map[string][]string{}
		for _, a := range r.Apps {
			for _, o := range a.Objects {
				if o.Status == report.StatusExtra {
					got[a.Name] = append(got[a.Name], o.Name)
				}
			}
		}
		want := map[string][]string{"argocd/web": {"left-web"}, "team/web": {"left-team-web"}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("apps %s, %s: extra objects (-want +got):\n%s", order[0].Name, order[1].Name, d)
		}
	}
}
