package scanner

import (
	"os"
	"path/filepath"
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
