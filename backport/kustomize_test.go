package backport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/golden"
)

func TestKustomizeOverlayGetsAPatchAndTheBaseStays(t *testing.T) {
	ns := env.Namespace(t, nil)
	root := worktree(t, "../fixtures/backport/kustomize", "deploy/web")
	overlay := filepath.Join(root, "deploy", "web", "overlays", "prod")
	app := config.App{Name: "web", Namespace: ns, Source: config.Source{Path: overlay}}
	sync(t, app)
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "prod-web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Patch(t, "kubectl-patch", cluster.Deployment, ns, "prod-web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"MODE","$patch":"delete"}]}]}}}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "prod-web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)

	res, err := Run(t.Context(), scanApp(t, app), options(root, app, "INC-4211 payment certs"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`ConfigMap/prod-web-config .data.LOG_LEVEL`,
		`Deployment/prod-web .spec.template.spec.containers[name="app"].env[name="MODE"]`,
		`Deployment/prod-web .spec.template.spec.containers[name="app"].image`,
	}
	if diff := cmp.Diff(want, fields(res.Changes, ns)); diff != "" || len(res.Skipped) > 0 {
		t.Fatalf("changes (-want +got):\n%s\nskipped: %+v", diff, res.Skipped)
	}
	for _, c := range res.Changes {
		if c.Via != "kustomize patch" {
			t.Errorf("%s via %s", c.Field(), c.Via)
		}
	}
	committed(t, root, res,
		"deploy/web/overlays/prod/driftscan-hotfix-configmap-prod-web-config.yaml",
		"deploy/web/overlays/prod/driftscan-hotfix-deployment-prod-web.yaml",
		"deploy/web/overlays/prod/kustomization.yaml")
	golden.Check(t, "kustomize-kustomization.yaml", readFile(t, filepath.Join(overlay, "kustomization.yaml")))
	golden.Check(t, "kustomize-patch-deployment.yaml", readFile(t, filepath.Join(overlay, "driftscan-hotfix-deployment-prod-web.yaml")))
	golden.Check(t, "kustomize-patch-configmap.yaml", readFile(t, filepath.Join(overlay, "driftscan-hotfix-configmap-prod-web-config.yaml")))
	for _, f := range []string{"kustomization.yaml", "deployment.yaml", "configmap.yaml"} {
		if got, want := readFile(t, filepath.Join(root, "deploy", "web", "base", f)), readFile(t, filepath.Join("../fixtures/backport/kustomize/base", f)); string(got) != string(want) {
			t.Errorf("base/%s changed:\n%s", f, got)
		}
	}
	if got := unbackported(scanApp(t, app)); len(got) > 0 {
		t.Errorf("drift after the backport: %v", got)
	}

	// A second hotfix extends the same patch; the overlay lists it once.
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "prod-web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"metrics","image":"prom/statsd-exporter:v0.27.0"}]}}}}`)
	opts := options(root, app, "INC-4212")
	opts.Branch = "hotfix/web-second"
	res, err = Run(t.Context(), scanApp(t, app), opts)
	if err != nil {
		t.Fatal(err)
	}
	committed(t, root, res, "deploy/web/overlays/prod/driftscan-hotfix-deployment-prod-web.yaml")
	golden.Check(t, "kustomize-patch-deployment-extended.yaml", readFile(t, filepath.Join(overlay, "driftscan-hotfix-deployment-prod-web.yaml")))
	if got := unbackported(scanApp(t, app)); len(got) > 0 {
		t.Errorf("drift after the second backport: %v", got)
	}
	k := string(readFile(t, filepath.Join(overlay, "kustomization.yaml")))
	if strings.Count(k, "driftscan-hotfix-deployment-prod-web.yaml") != 1 {
		t.Errorf("the patch is listed %d times:\n%s", strings.Count(k, "driftscan-hotfix-deployment-prod-web.yaml"), k)
	}
	if _, err := os.Stat(filepath.Join(root, "deploy", "web", "base", "driftscan-hotfix-deployment-prod-web.yaml")); err == nil {
		t.Error("a patch was written into the base")
	}
}

func TestKustomizeWritesWholeListsWhenItCannotMergeByKey(t *testing.T) {
	env.InstallCRDs(t, "crd-installer", "../fixtures/backport/crds/frontends.backport.example.com.yaml")
	ns := env.Namespace(t, nil)
	root := worktree(t, "../fixtures/backport/kustomize-crd", "frontend")
	app := config.App{Name: "frontend", Namespace: ns, Source: config.Source{Path: filepath.Join(root, "frontend")}}
	sync(t, app)
	frontend := schema.GroupVersionKind{Group: "backport.example.com", Version: "v1", Kind: "Frontend"}
	env.Patch(t, "kubectl-edit", frontend, ns, "shop", types.MergePatchType,
		`{"spec":{"routes":[{"host":"shop.example.com","backend":"web-v2"},{"host":"api.example.com","backend":"api"}]}}`)

	res, err := Run(t.Context(), scanApp(t, app), options(root, app, "INC-7"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`Frontend/shop .spec.routes[host="shop.example.com"].backend`}, fields(res.Changes, ns)); diff != "" || len(res.Skipped) > 0 {
		t.Fatalf("changes (-want +got):\n%s\nskipped: %+v", diff, res.Skipped)
	}
	// A patch by key would have replaced the list with its one item; the
	// check by rendering caught that, and the list is written whole.
	golden.Check(t, "kustomize-patch-crd.yaml", readFile(t, filepath.Join(root, "frontend", "driftscan-hotfix-frontend-shop.yaml")))
	if got := unbackported(scanApp(t, app)); len(got) > 0 {
		t.Errorf("drift after the backport: %v", got)
	}
}
