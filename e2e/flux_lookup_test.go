package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/chartrepo"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// A chart that looks the cluster up (Helm's lookup: a Secret's user, a
// ConfigMap among the namespace's), released by the real helm-controller,
// which installs with a client of the cluster and so renders what the
// lookups read. driftscan reads the same for a HelmRelease and scans clean;
// rendered as helm template renders, the release would be two differences.
func TestFluxHelmReleaseLookupScansClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	for _, obj := range chartrepo.LookupObjects() {
		env.Create(t, "kubectl-create", ns, obj)
	}
	files := map[string]string{}
	for name, text := range chartrepo.Lookup().Files {
		files["chart/"+name] = text
	}
	repo := gitServer.NewRepo(t, files)
	const name = "lookup"
	createHelmRelease(t, ns, name, repo, "chart")
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	data, _, _ := unstructured.NestedStringMap(env.Get(t, cluster.ConfigMap, ns, "client").Object, "data")
	if data["user"] != "alice-db-user" || data["seeded"] != "yes" {
		t.Fatalf("helm-controller released %v: the test expects its lookups to have read the Secret and the ConfigMaps", data)
	}
	checkClean(t, scan(t, "--from", "flux", "--app", name), 1)
}
