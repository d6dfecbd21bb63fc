package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// An Application that overrides its kustomization, as Argo CD Image
// Updater and per-environment Applications do: a name prefix, an image
// tag, a replica count, labels, annotations and a patch in
// spec.source.kustomize. The real Argo CD runs `kustomize edit` and
// `kustomize build`; driftscan applies the same overrides and must see the
// sync clean, and a person's edit as theirs.
func TestArgoCDKustomizeOverridesScanClean(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		"app/kustomization.yaml": "resources: [deploy.yaml, cm.yaml]\nimages:\n- {name: nginx, newTag: \"1.25\"}\n",
		"app/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`,
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: normal}\n",
	})
	const name = "kustomize-overrides"
	createGitApp(t, name, ns, repo.URL, "app", `kustomize:
  namePrefix: ov-
  images: ["nginx:1.27"]
  replicas: [{name: web, count: 2}]
  commonLabels: {env: prod}
  commonAnnotations: {owner: platform}
  patches:
  - target: {kind: ConfigMap}
    patch: |-
      - op: replace
        path: /data/mode
        value: overridden
`)
	waitArgoSynced(t, name, "")
	deploy := env.Get(t, cluster.Deployment, ns, "ov-web")
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 || containers[0].(map[string]any)["image"] != "nginx:1.27" {
		t.Fatalf("Argo CD synced containers %v, want the Application's image", containers)
	}

	r := scan(t, "--from", "argocd", "--app", name)
	checkClean(t, r, 2)

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "ov-settings", types.MergePatchType, `{"data":{"mode":"hotfix"}}`)
	r = scan(t, "--from", "argocd", "--app", name)
	got := activeFindings(r)
	if len(got) != 1 || got[0].Object != "ConfigMap/ov-settings" || got[0].Path != ".data.mode" || got[0].Class != report.ClassHuman ||
		got[0].Git != "overridden" || got[0].Live != "hotfix" {
		t.Errorf("after a person's edit, want exactly mode overridden -> hotfix, a person's; got:\n%s", describe(got))
	}
}
