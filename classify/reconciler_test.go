package classify

import (
	"slices"
	"testing"
)

// Tracks tells the tracking a reconciler writes on what it applies (what
// it would prune once Git drops the object) from labels a chart or an
// operator copied: seen with the real Argo CD and Flux, e2e
// TestExtraObjectsAreWhatArgoCDWouldPrune and
// TestExtraObjectsOfAFluxKustomization.
func TestTracks(t *testing.T) {
	cfg := Object{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}
	argo := Tracking{ArgoApps: []string{"web", "apps_web"}}
	label := Tracking{ArgoApps: []string{"web"}, ArgoLabel: true}
	keyed := Tracking{ArgoApps: []string{"web"}, ArgoLabel: true, ArgoLabelKey: "argocd.argoproj.io/instance"}
	east, none := "east", ""
	installed := Tracking{ArgoApps: []string{"web"}, ArgoInstallationID: &east}
	uninstalled := Tracking{ArgoApps: []string{"web"}, ArgoInstallationID: &none}
	installedLabel := Tracking{ArgoApps: []string{"web"}, ArgoLabel: true, ArgoInstallationID: &east}
	id := func(installation string) map[string]string {
		return map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:shop/cfg", "argocd.argoproj.io/installation-id": installation}
	}
	ks := Tracking{FluxKind: "Kustomization", FluxName: "web", FluxNamespace: "flux-system"}
	hr := Tracking{FluxKind: "HelmRelease", FluxName: "web", FluxNamespace: "shop"}
	instance := map[string]string{"app.kubernetes.io/instance": "web"}
	for _, c := range []struct {
		name                string
		t                   Tracking
		labels, annotations map[string]string
		want                bool
	}{
		{"Argo CD's tracking id naming the object", argo, nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:shop/cfg"}, true},
		{"the id of an app outside Argo CD's namespace", argo, nil, map[string]string{"argocd.argoproj.io/tracking-id": "apps_web:/ConfigMap:shop/cfg"}, true},
		{"an id copied from another object", argo, nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:apps/Deployment:shop/web"}, false},
		{"another app's id", argo, nil, map[string]string{"argocd.argoproj.io/tracking-id": "api:/ConfigMap:shop/cfg"}, false},
		{"a chart's instance label under annotation tracking", argo, instance, nil, false},
		{"the instance label under label tracking", label, instance, nil, true},
		{"the instance label under argocd-cm's instanceLabelKey", keyed, map[string]string{"argocd.argoproj.io/instance": "web"}, nil, true},
		{"a chart's app.kubernetes.io/instance under another instanceLabelKey", keyed, instance, nil, false},
		{"the tracking id under label tracking", label, nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:shop/cfg"}, false},
		{"the tracking id with argocd-cm's installationID", installed, nil, id("east"), true},
		{"the tracking id of another Argo CD installation", installed, nil, id("west"), false},
		{"the tracking id without the installation id argocd-cm sets", installed, nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:shop/cfg"}, false},
		{"an installation id where this Argo CD has none", uninstalled, nil, id("west"), false},
		{"no installation id where this Argo CD has none", uninstalled, nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:shop/cfg"}, true},
		{"any installation id when argocd-cm is unknown", argo, nil, id("west"), true},
		{"label tracking reads no installation id", installedLabel, instance, id("west"), true},
		{"the Kustomization's labels", ks, map[string]string{"kustomize.toolkit.fluxcd.io/name": "web", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil, true},
		{"another namespace's Kustomization", ks, map[string]string{"kustomize.toolkit.fluxcd.io/name": "web", "kustomize.toolkit.fluxcd.io/namespace": "team"}, nil, false},
		{"a HelmRelease's labels on a Kustomization's app", ks, map[string]string{"helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": "flux-system"}, nil, false},
		{"the HelmRelease's labels", hr, map[string]string{"helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": "shop"}, nil, true},
		{"an instance label on a Flux app", hr, instance, nil, false},
	} {
		if got := c.t.Tracks(cfg, c.labels, c.annotations); got != c.want {
			t.Errorf("%s: Tracks = %v, want %v", c.name, got, c.want)
		}
		// An index by Keys finds by ClaimKeys every app that tracks it.
		claims := ClaimKeys(c.labels, c.annotations, []string{c.t.ArgoInstanceLabel()})
		if found := slices.ContainsFunc(claims, func(k string) bool { return slices.Contains(c.t.Keys(), k) }); c.want && !found {
			t.Errorf("%s: ClaimKeys %v name none of the app's Keys %v", c.name, claims, c.t.Keys())
		}
	}
}

// ArgoInstallationOf gives the id on an object and whether it is the app's
// Argo CD's: any when that is not known, none only when it has none.
func TestArgoInstallationOf(t *testing.T) {
	east, none := "east", ""
	onObject := func(id string) map[string]string {
		if id == "" {
			return nil
		}
		return map[string]string{"argocd.argoproj.io/installation-id": id}
	}
	for _, c := range []struct {
		installation *string
		onObject     string
		ours         bool
	}{
		{&east, "east", true},
		{&east, "west", false},
		{&east, "", false},
		{&none, "west", false},
		{&none, "", true},
		{nil, "west", true},
	} {
		id, ours := Tracking{ArgoInstallationID: c.installation}.ArgoInstallationOf(onObject(c.onObject))
		if id != c.onObject || ours != c.ours {
			t.Errorf("installation %v, %q on the object: got %q %v, want %q %v", c.installation, c.onObject, id, ours, c.onObject, c.ours)
		}
	}
}
