package run

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
)

// Unbackported scans the apps of the suspended Application, found by the
// object discovery made them of: not web-api, whose name only starts with
// web-, and whose own hotfix resuming web does not revert.
func TestUnbackportedIsTheSuspendedApplicationsDrift(t *testing.T) {
	appNS, argoNS := argoApp(t)
	apiNS := env.Namespace(t, nil)
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: "../fixtures/apps/web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", apiNS, mf.Object)
	}
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, apiNS, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"trace"}}`)
	web := env.Get(t, applicationGVK, argoNS, "web")
	source, _, _ := unstructured.NestedString(web.Object, "spec", "source", "repoURL")
	env.Apply(t, "argocd-server", argoNS, cluster.Object(t, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web-api}
spec:
  project: default
  source: {repoURL: "%s", path: apps/web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, source, apiNS)))

	client, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultUnbackportedOptions()
	opts.Discover.Namespace = argoNS
	opts.Scan.RESTConfig, opts.Scan.GitCacheDir = env.Config, t.TempDir()
	got, err := Unbackported(t.Context(), client, breakglass.Target{Resource: breakglass.Application, Namespace: argoNS, Name: "web"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("no drift of web: the test expects its human's LOG_LEVEL")
	}
	for _, f := range got {
		if !strings.Contains(f, "/"+appNS+"/") {
			t.Errorf("resuming web would revert %q: not web's", f)
		}
	}
}
