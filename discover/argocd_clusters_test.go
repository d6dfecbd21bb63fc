package discover

import (
	"strings"
	"testing"
)

// clusterApp is an Application of project to destination (YAML flow).
func clusterApp(name, project, destination string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ` + name + `}
spec:
  project: ` + project + `
  destination: ` + destination + `
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/web}
`
}

// TestArgoClusterNames: the scanned cluster is in-cluster, its server URL,
// and the names and URLs Options.ArgoClusters gives (its cluster secrets'
// name and server, which discovery does not read); an Application to any
// other is skipped with the names it is known by. With argocd-cm's
// cluster.inClusterEnabled "false", Argo CD refuses in-cluster, by server
// or by name, and the app is an error; a name of the cluster's own still
// deploys. A project's destinations are checked on a name the Application
// gives when they name no server.
func TestArgoClusterNames(t *testing.T) {
	installCRDs(t)
	for _, inClusterEnabled := range []bool{true, false} {
		ns := env.Namespace(t, nil)
		allowProjects(t, ns, "default")
		applyAll(t, "argocd-server", ns, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: hub-shop}
spec:
  sourceRepos: ['*']
  destinations: [{name: hub, namespace: shop}]
`)
		if !inClusterEnabled {
			applyAll(t, "argocd-server", ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\ndata: {cluster.inClusterEnabled: \"false\"}\n")
		}
		applyAll(t, "argocd-server", ns,
			clusterApp("by-server", "default", "{server: https://kubernetes.default.svc, namespace: shop}"),
			clusterApp("in-cluster", "default", "{name: in-cluster, namespace: shop}"),
			clusterApp("hub", "default", "{name: hub, namespace: shop}"),
			clusterApp("own-url", "default", "{server: 'https://hub.example.com:6443/', namespace: shop}"),
			clusterApp("scanned-url", "default", "{server: '"+env.Config.Host+"', namespace: shop}"),
			clusterApp("prod-eu", "default", "{name: prod-eu, namespace: shop}"),
			clusterApp("prod", "default", "{server: 'https://prod.example.com:6443', namespace: shop}"),
			clusterApp("hub-shop", "hub-shop", "{name: hub, namespace: shop}"),
			clusterApp("hub-web", "hub-shop", "{name: hub, namespace: web}"),
		)
		opts := options(FromArgoCD, ns)
		opts.ArgoClusters = []string{"hub", "https://hub.example.com:6443"}
		res := discover(t, opts)

		known := "in-cluster, https://kubernetes.default.svc, " + strings.TrimRight(env.Config.Host, "/") + ", hub, https://hub.example.com:6443; name it with --argocd-cluster if it is"
		wantSkipped := []string{
			`Application/NS/prod: destination server https://prod.example.com:6443 is not the scanned cluster (driftscan knows it as ` + known + `)`,
			`Application/NS/prod-eu: destination cluster "prod-eu" is not the scanned cluster (driftscan knows it as ` + known + `)`,
		}
		if d := diff(wantSkipped, skippedTexts(res.Skipped, ns)); d != "" {
			t.Errorf("inClusterEnabled %v: skipped (-want +got):\n%s", inClusterEnabled, d)
		}
		got := map[string]string{}
		for _, app := range res.Apps {
			got[app.Name] = strings.ReplaceAll(app.Error, ns, "NS")
		}
		disabled := ""
		if !inClusterEnabled {
			disabled = `argocd-cm's cluster.inClusterEnabled is "false": Argo CD refuses the destination in-cluster (https://kubernetes.default.svc) and neither compares nor syncs this Application (InvalidSpecError), so driftscan does not fetch its source`
		}
		want := map[string]string{
			"by-server": disabled, "in-cluster": disabled, "hub": "", "own-url": "", "scanned-url": "", "hub-shop": "",
			"hub-web": `AppProject NS/hub-shop does not permit the Application's destination, namespace "web" on cluster hub: Argo CD does not sync this Application (InvalidSpecError) and driftscan does not fetch its source`,
		}
		if d := diff(want, got); d != "" {
			t.Errorf("inClusterEnabled %v: apps and their errors (-want +got):\n%s", inClusterEnabled, d)
		}
	}
}
