package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// A Flux Kustomization as fleet repositories write them: one folder of
// plain manifests (no kustomization.yaml: Flux generates one, a subfolder
// with its own kustomization, a CI file it must leave out) deployed into a
// target namespace with a name prefix, an image override, a patch, a
// component, common labels, and ${var}s filled from postBuild.substitute, a
// ConfigMap and a Secret (a default, an escaped $$, an object that opts
// out). The
// real kustomize-controller applies it; driftscan must build the same
// objects and see the sync clean. A person's edits are theirs, and the
// value that came from the Secret is masked in the finding.
func TestFluxKustomizationPostBuildAndOverridesScanClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, map[string]string{
		"apps/web/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: elsewhere
  labels: {cluster: "${cluster_name}"}
spec:
  replicas: ${replicas:=1}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        env:
        - {name: REGION, value: "${region}"}
        - {name: PORT, value: "port-${port}"}
`,
		"apps/web/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  region: ${region}
  zone: ${zone:=a}
  password: ${db_password}
  literal: $${not_a_var}
`,
		"apps/web/raw.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: raw
  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}
data: {text: "${region}"}
`,
		"apps/web/.gitlab-ci.yml":             "stages: [deploy]\n",
		"apps/web/more/kustomization.yaml":    "resources: [cm.yaml]\n",
		"apps/web/more/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: more}\ndata: {cluster: \"${cluster_name}\"}\n",
		"components/audit/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {audit: \"on\"}\n",
	})
	env.Create(t, "kubectl-create", ns, cluster.Object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars}\ndata: {replicas: \"2\", region: us, port: \"8080\"}\n"))
	env.Create(t, "kubectl-create", ns, cluster.Object(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: secret-vars}\nstringData: {db_password: s3cr3t-fleet-password}\n"))
	const name = "fleet"
	createFluxSource(t, ns, name, repo)
	createFluxObject(t, reconcilers.Kustomization, fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  path: ./apps/web
  prune: true
  targetNamespace: %s
  namePrefix: fx-
  sourceRef: {kind: GitRepository, name: %s}
  images: [{name: nginx, newTag: "1.27"}]
  patches:
  - target: {kind: Deployment}
    patch: |-
      - op: add
        path: /metadata/annotations
        value: {patched: "yes"}
  components: [../../components/audit]
  commonMetadata:
    labels: {owner: platform}
  postBuild:
    substitute: {cluster_name: prod, region: eu}
    substituteFrom:
    - {kind: ConfigMap, name: vars}
    - {kind: Secret, name: secret-vars}
    - {kind: ConfigMap, name: absent, optional: true}
`, name, ns, fluxInterval, ns, name))
	waitFluxReady(t, reconcilers.Kustomization, ns, name, repo.Head())
	settings := env.Get(t, cluster.ConfigMap, ns, "fx-settings")
	if d, _, _ := unstructured.NestedStringMap(settings.Object, "data"); d["region"] != "eu" || d["literal"] != "${not_a_var}" || d["zone"] != "a" {
		t.Fatalf("Flux applied %v: the test expects inline variables over the ConfigMap's, $$ escaped, a default", d)
	}

	r := scan(t, "--from", "flux", "--app", name)
	checkClean(t, r, 4)

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "fx-settings", types.MergePatchType, `{"data":{"region":"hotfix","password":"typed-by-hand"}}`)
	r = scan(t, "--from", "flux", "--app", name)
	if data, _ := json.Marshal(r); strings.Contains(string(data), "s3cr3t-fleet-password") {
		t.Errorf("the report holds the value of a Secret")
	}
	got := activeFindings(r)
	if len(got) != 2 {
		t.Fatalf("after a person's edit, want the two fields they changed; got:\n%s", describe(got))
	}
	for _, f := range got {
		if f.Object != "ConfigMap/fx-settings" || f.Class != report.ClassHuman || f.Manager != "kubectl-edit" {
			t.Errorf("finding %s %s: want a person's edit of fx-settings", f.Object, f.Path)
		}
		switch f.Path {
		case ".data.region":
			if f.Git != "eu" || f.Live != "hotfix" {
				t.Errorf("region: git %q live %q, want eu -> hotfix", f.Git, f.Live)
			}
		case ".data.password":
			if f.Git != "***" || f.Live != "*** (differs)" {
				t.Errorf("password: git %q live %q, want both masked: its Git value came from a Secret", f.Git, f.Live)
			}
		default:
			t.Errorf("unexpected finding %s", f.Path)
		}
	}
}
