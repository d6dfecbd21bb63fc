package discover

import (
	"strings"
	"testing"
)

// Argo CD drops an object of a kind its resource filter excludes from an
// Application's Git (controller/state.go, util/settings ResourcesFilter):
// the kinds it always excludes, argocd-cm's resource.exclusions, and,
// when resource.inclusions name the destination cluster, every kind they
// do not name. Groups are globs, clusters globs of the destination's
// server, kinds exact or "*"; an exclusion wins over an inclusion.
func TestArgoResourceFilter(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, nil)
	allowProjects(t, ns, "default")
	applyAll(t, "argocd-server", ns, strings.ReplaceAll(`apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm}
data:
  resource.exclusions: |
    - apiGroups: ['', discovery.k8s.io]
      kinds: [Endpoints, EndpointSlice]
    - apiGroups: ['*.cilium.io', cilium.io]
    - apiGroups: [batch]
      kinds: ['*']
      clusters: ['https://*.example.com']
    - apiGroups: ['[']
  resource.inclusions: |
    - apiGroups: ['*']
      kinds: ['*']
      clusters: [https://kubernetes.default.svc]
    - apiGroups: ['', apps]
      kinds: [ConfigMap, Deployment, Endpoints]
      clusters: [SERVER_URL]
`, "SERVER_URL", env.Config.Host))
	app := func(name, destination string) string {
		return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ` + name + `}
spec:
  project: default
  destination: {` + destination + `, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`
	}
	applyAll(t, "argocd-server", ns, app("in-cluster", "server: https://kubernetes.default.svc"))
	applyAll(t, "argocd-server", ns, app("named", "name: in-cluster"))
	applyAll(t, "argocd-server", ns, strings.ReplaceAll(app("by-url", "server: SERVER_URL"), "SERVER_URL", env.Config.Host))
	opts := options(FromArgoCD, ns)
	opts.ServerURL = env.Config.Host
	res := discover(t, opts)
	const (
		always   = "Argo CD always excludes it"
		excluded = "argocd-cm's resource.exclusions excludes it"
		notIn    = "argocd-cm's resource.inclusions does not include it"
	)
	inCluster := map[string]string{
		"/ConfigMap": "", "apps/Deployment": "", "batch/Job": "", "example.com/Widget": "",
		"/Endpoints": excluded, "discovery.k8s.io/EndpointSlice": excluded, "/Service": "",
		"cilium.io/CiliumIdentity": excluded, "x.cilium.io/Anything": excluded, "cilium.io.evil/Policy": "",
		"/Event": always, "events.k8s.io/Event": always, "coordination.k8s.io/Lease": always, "metrics.k8s.io/PodMetrics": always,
	}
	byURL := map[string]string{
		"/ConfigMap": "", "apps/Deployment": "", "/Endpoints": excluded, "/Service": notIn, "batch/Job": notIn,
		"coordination.k8s.io/Lease": always,
	}
	want := map[string]map[string]string{"in-cluster": inCluster, "named": inCluster, "by-url": byURL}
	if len(res.Apps) != len(want) {
		t.Fatalf("want %d apps, got %+v (errors %v)", len(want), res.Apps, res.Errors)
	}
	for _, a := range res.Apps {
		for gk, why := range want[a.Name] {
			group, kind, _ := strings.Cut(gk, "/")
			if got := a.ExcludedKinds.Excludes(group, kind); got != why {
				t.Errorf("app %s, %s: excluded %q, want %q", a.Name, gk, got, why)
			}
		}
	}
	if len(res.Errors) != 0 {
		t.Errorf("errors %v: a glob that does not compile matches nothing, as in Argo CD", res.Errors)
	}
}
