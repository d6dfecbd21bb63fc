package scanner

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
)

// asJSON is v through JSON, so numbers are float64 on both sides.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// What kustomize-controller sends for each object, as pinned against the
// real controller by e2e TestFluxKustomizationSyncsScanClean: the scan must
// compare this, not Git's text, or a clean Flux sync shows drift.
func TestAnObjectIsComparedAsFluxAppliesIt(t *testing.T) {
	for _, tc := range []struct {
		name, git, sent string
	}{
		{"a Deployment gets an empty strategy and TCP on its containers' ports, not on its init containers'", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers: [{name: init, image: busybox, ports: [{containerPort: 81}]}]
      containers: [{name: web, image: nginx, ports: [{containerPort: 80}, {containerPort: 53, protocol: UDP}]}]
`, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  strategy: {}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers: [{name: init, image: busybox, ports: [{containerPort: 81}], resources: {}}]
      containers: [{name: web, image: nginx, ports: [{containerPort: 80, protocol: TCP}, {containerPort: 53, protocol: UDP}], resources: {}}]
`},
		{"a Service's ports get TCP", `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
`, `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80, protocol: TCP, targetPort: 80}]}
`},
		{"a Secret's stringData moves into data and wins", `
apiVersion: v1
kind: Secret
metadata: {name: db}
data: {user: b2xk, pass: eA==}
stringData: {user: new}
`, `
apiVersion: v1
kind: Secret
metadata: {name: db}
data: {user: bmV3, pass: eA==}
`},
		{"a field the Go type does not have is dropped, and status with it", `
apiVersion: v1
kind: ConfigMap
metadata: {name: web}
data: {A: b}
dta: {typo: x}
status: {x: y}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: web}
data: {A: b}
`},
		{"a custom resource keeps its fields, and loses its status", `
apiVersion: example.com/v1
kind: Route
metadata: {name: web}
spec: {anything: [1]}
status: {ready: true}
`, `
apiVersion: example.com/v1
kind: Route
metadata: {name: web}
spec: {anything: [1]}
`},
		{"a Role is sent as Git writes it", `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
status: {x: y}
`, `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
status: {x: y}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := cluster.Object(t, tc.git)
			if err := appliedAs(config.AppliedAsFlux, obj); err != nil {
				t.Fatal(err)
			}
			want := cluster.Object(t, tc.sent).Object
			// The typed round trip writes creationTimestamp: null into a
			// Pod template (a null is no value for the compare), and
			// numbers as int64 where YAML gives float64.
			if diff := cmp.Diff(asJSON(t, prunedNulls(want)), asJSON(t, prunedNulls(obj.Object))); diff != "" {
				got, _ := yaml.Marshal(obj.Object)
				t.Errorf("sent (-want +got):\n%s\n%s", diff, got)
			}
		})
	}
}

// prunedNulls is v with its nulls removed.
func prunedNulls(v any) any {
	v, _ = pruneNulls(v)
	return v
}
