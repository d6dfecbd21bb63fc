package doctor

import (
	"slices"
	"strings"
	"testing"

	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/fixtures/cluster"
)

// What discovery warns of is a note of the plan naming the object: an
// Application rendered by a config management plugin gives no app, so
// nothing of it is checked.
func TestPlanNotesWhatDiscoveryCannotScan(t *testing.T) {
	env.Need(t)
	env.InstallCRDs(t, "crd-installer", "../fixtures/crds/applications.argoproj.io.yaml", "../fixtures/crds/appprojects.argoproj.io.yaml")
	argoNS := env.Namespace(t, nil)
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: default}\nspec: {sourceRepos: ['*'], destinations: [{server: '*', namespace: '*'}]}\n"))
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: vault}
spec:
  project: default
  source: {repoURL: "https://git.example.com/shop/deploy.git", path: apps/vault, plugin: {name: argocd-vault-plugin}}
  destination: {server: https://kubernetes.default.svc, namespace: shop}
`))
	opts := DefaultPlanOptions()
	dopts := discover.DefaultOptions()
	dopts.Namespace = argoNS
	opts.Discover = &dopts
	p, err := MakePlan(t.Context(), env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := "discovery: Application/" + argoNS + `/vault: not scanned: config management plugin "argocd-vault-plugin"`
	if !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
		t.Errorf("notes %q, want one beginning %q", p.Notes, want)
	}
}
