package scanner

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// BenchmarkDiffPerObject types and compares one Deployment pair the way a
// scan does for each object: normalize both sides, type them with the
// server's OpenAPI v3 schema (loaded once, as a scan loads it once per
// group/version) and compare. The pair is Git's Deployment and the live one
// the test API server returns after a sync, then after a pipeline's
// `kubectl set image` and an HPA's scale.
func BenchmarkDiffPerObject(b *testing.B) {
	ns := env.Namespace(b, nil)
	desired := cluster.Object(b, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        ports: [{containerPort: 8080}]
        env: [{name: LOG_LEVEL, value: info}]
        resources: {requests: {cpu: "0.1", memory: 64Mi}}
`)
	desired.SetNamespace(ns)
	gv := schema.GroupVersion{Group: "apps", Version: "v1"}
	typer := newTyper(env.Client.Discovery().OpenAPIV3())
	if err := typer.load([]schema.GroupVersionKind{gv.WithKind("Deployment")}); err != nil {
		b.Fatal(err)
	}
	inSync := env.Apply(b, "argocd-controller", "", desired)
	env.Patch(b, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Scale(b, "kube-controller-manager", cluster.Deployment, ns, "web", 5)
	drifted := env.Get(b, cluster.Deployment, ns, "web")

	for _, tc := range []struct {
		name    string
		live    *unstructured.Unstructured
		changes int
	}{{"in sync", inSync, 0}, {"drifted", drifted, 2}} {
		b.Run(tc.name, func(b *testing.B) {
			var changes []change
			for b.Loop() {
				var err error
				changes, err = diff(typer, gv.WithKind("Deployment"), normalize(desired), normalize(tc.live))
				if err != nil {
					b.Fatal(err)
				}
			}
			n := 0
			for _, c := range changes {
				if c.Type != report.TypeAdded {
					n++
				}
			}
			if n != tc.changes {
				b.Fatalf("%d Changed/Removed changes, want %d: %+v", n, tc.changes, changes)
			}
		})
	}
}
