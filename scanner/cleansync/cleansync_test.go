package cleansync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// cleanCase is one fixture: what must have been dismissed on the clean
// sync (by which mechanism), one real edit, and the finding it must give.
type cleanCase struct {
	fixture string
	// settle waits for what the controllers do to the synced objects.
	settle func(t *testing.T, ns string)
	// dismissed are "Kind/name path: reason" that the clean scan must
	// have dismissed, in both apply modes.
	dismissed []string
	// edit changes one thing as a real actor would; want is the finding.
	edit func(t *testing.T, ns string)
	want []row
}

var (
	deployment  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	statefulSet = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	daemonSet   = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	netpol      = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}
	mwc         = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"}
	roleBinding = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}
	pvc         = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	job         = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	secretGVK   = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	clusterRole = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	hpa         = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
)

var cases = []cleanCase{
	{
		fixture: "deployment",
		settle:  revision("api", "1"),
		dismissed: []string{
			`.env[name="POD_NAME"].valueFrom.fieldRef: defaulted`,
			`.env[name="CPU_LIMIT"].valueFrom.resourceFieldRef: defaulted`,
			`Deployment/api .spec.minReadySeconds: zeroValue`,
			`Deployment/api .spec.template.spec.hostNetwork: zeroValue`,
			`Deployment/api .spec.template.spec.hostIPC: zeroValue`,
			`.readinessProbe.initialDelaySeconds: zeroValue`,
			`.volumeMounts[mountPath="/etc/api"].subPath: zeroValue`,
			`Deployment/api .metadata.annotations.deployment.kubernetes.io/revision: builtin`,
		},
		edit: func(t *testing.T, ns string) {
			// Someone points POD_NAME at the uid, inside the atomic fieldRef.
			env.Update(t, "kubectl-edit", deployment, ns, "api", func(u *unstructured.Unstructured) {
				containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				c := containers[0].(map[string]any)
				c["env"].([]any)[0].(map[string]any)["valueFrom"] = map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.uid"}}
				_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
			})
			// A pipeline sets a zero value Git writes to something else.
			env.Patch(t, "deploy-pipeline", deployment, ns, "api", types.MergePatchType, `{"spec":{"minReadySeconds":5}}`)
			revision("api", "2")(t, ns)
		},
		want: []row{
			{Object: "Deployment/api", Path: ".spec.minReadySeconds", Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "deploy-pipeline"},
			{Object: "Deployment/api", Path: `.spec.template.spec.containers[name="api"].env[name="POD_NAME"].valueFrom.fieldRef`, Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"},
		},
	},
	{
		fixture: "generated",
		settle:  revision("web", "1"),
		dismissed: []string{
			"Deployment/web .spec.strategy.type: defaulted",
			"Deployment/web .spec.strategy.rollingUpdate: defaulted",
			"StatefulSet/cache .spec.updateStrategy.type: defaulted",
			"StatefulSet/cache .spec.updateStrategy.rollingUpdate: defaulted",
		},
		edit: func(t *testing.T, ns string) {
			// During an incident someone stops rolling updates; the
			// defaulted rollingUpdate goes with them.
			env.Update(t, "kubectl-edit", deployment, ns, "web", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedMap(u.Object, map[string]any{"type": "Recreate"}, "spec", "strategy")
			})
		},
		want: []row{{Object: "Deployment/web", Path: ".spec.strategy.type", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-edit"}},
	},
	{
		fixture:   "networkpolicy",
		dismissed: []string{"NetworkPolicy/api-ingress .spec.ingress: defaulted"},
		edit: func(t *testing.T, ns string) {
			env.Update(t, "kubectl-edit", netpol, ns, "api-ingress", func(u *unstructured.Unstructured) {
				ingress, _, _ := unstructured.NestedSlice(u.Object, "spec", "ingress")
				ingress[0].(map[string]any)["ports"].([]any)[1].(map[string]any)["port"] = int64(9091)
				_ = unstructured.SetNestedSlice(u.Object, ingress, "spec", "ingress")
			})
		},
		want: []row{{Object: "NetworkPolicy/api-ingress", Path: ".spec.ingress", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}},
	},
	{
		fixture: "webhook",
		dismissed: []string{
			`.webhooks[name="widgets.example.com"].rules: defaulted`,
			`.webhooks[name="widgets.example.com"].clientConfig.caBundle: zeroValue`,
		},
		edit: func(t *testing.T, ns string) {
			name := "widgets-defaulter-" + ns
			env.Update(t, "kubectl-edit", mwc, "", name, func(u *unstructured.Unstructured) {
				hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
				rule := hooks[0].(map[string]any)["rules"].([]any)[0].(map[string]any)
				rule["operations"] = []any{"CREATE"}
				_ = unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
			})
		},
		want: []row{{Object: "MutatingWebhookConfiguration/widgets-defaulter-NS", Path: `.webhooks[name="widgets.example.com"].rules`, Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}},
	},
	{
		fixture:   "statefulset",
		dismissed: []string{"StatefulSet/db .spec.volumeClaimTemplates: defaulted"},
		edit: func(t *testing.T, ns string) {
			env.Patch(t, "kubectl-set", statefulSet, ns, "db", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"db","image":"postgres:17.2"}]}}}}`)
		},
		want: []row{{Object: "StatefulSet/db", Path: `.spec.template.spec.containers[name="db"].image`, Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "kubectl-set"}},
	},
	{
		fixture:   "rbac",
		dismissed: []string{"RoleBinding/config-readers .subjects: defaulted"},
		edit: func(t *testing.T, ns string) {
			env.Update(t, "kubectl-edit", roleBinding, ns, "config-readers", func(u *unstructured.Unstructured) {
				subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
				subjects = append(subjects, map[string]any{"kind": "User", "name": "mallory@example.com", "apiGroup": "rbac.authorization.k8s.io"})
				_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
			})
		},
		want: []row{{Object: "RoleBinding/config-readers", Path: ".subjects", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}},
	},
	{
		fixture:   "aggregated",
		settle:    aggregated("platform-view"),
		dismissed: []string{"ClusterRole/platform-view-NS .rules: operatorOwned"},
		edit: func(t *testing.T, ns string) {
			// Someone widens what the aggregated role collects.
			env.Update(t, "kubectl-edit", clusterRole, "", "platform-view-"+ns, func(u *unstructured.Unstructured) {
				sel := []any{
					map[string]any{"matchLabels": map[string]any{"example.com/aggregate-to-platform-view": "true"}},
					map[string]any{"matchLabels": map[string]any{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
				}
				_ = unstructured.SetNestedSlice(u.Object, sel, "aggregationRule", "clusterRoleSelectors")
			})
			aggregated("platform-view")(t, ns)
		},
		want: []row{{Object: "ClusterRole/platform-view-NS", Path: ".aggregationRule.clusterRoleSelectors", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}},
	},
	{
		fixture: "autoscaled",
		dismissed: []string{
			"HorizontalPodAutoscaler/api .spec.behavior.scaleDown.policies: defaulted",
			"HorizontalPodAutoscaler/api .spec.behavior.scaleUp: defaulted",
			"CronJob/cleanup .spec.concurrencyPolicy: defaulted",
			"CronJob/cleanup .spec.jobTemplate.spec.template.spec.dnsPolicy: defaulted",
		},
		edit: func(t *testing.T, ns string) {
			// During an incident someone raises the HPA's ceiling.
			env.Patch(t, "kubectl-patch", hpa, ns, "api", types.MergePatchType, `{"spec":{"maxReplicas":30}}`)
		},
		want: []row{{Object: "HorizontalPodAutoscaler/api", Path: ".spec.maxReplicas", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-patch"}},
	},
	{
		fixture: "chart-random",
		settle:  revision("chart-random", "1"),
		dismissed: []string{
			"Secret/chart-random-db .data.password: unstableRender",
			"Deployment/chart-random .spec.template.metadata.annotations.checksum/secret: unstableRender",
		},
		edit: func(t *testing.T, ns string) {
			env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "chart-random-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
		},
		want: []row{{Object: "ConfigMap/chart-random-config", Path: ".data.LOG_LEVEL", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit"}},
	},
	{
		fixture:   "pvc",
		dismissed: []string{`PersistentVolumeClaim/uploads .metadata.finalizers[="kubernetes.io/pvc-protection"]: builtin`},
		edit: func(t *testing.T, ns string) {
			env.Patch(t, "kubectl-label", pvc, ns, "uploads", types.MergePatchType, `{"metadata":{"labels":{"backup":"skip"}}}`)
		},
		want: []row{{Object: "PersistentVolumeClaim/uploads", Path: ".metadata.labels.backup", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label"}},
	},
	{
		fixture: "daemonset",
		dismissed: []string{
			"DaemonSet/log-agent .metadata.annotations.deprecated.daemonset.template.generation: builtin",
			"DaemonSet/log-agent .spec.updateStrategy.rollingUpdate: defaulted",
		},
		edit: func(t *testing.T, ns string) {
			env.Patch(t, "kubectl-set", daemonSet, ns, "log-agent", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"agent","image":"fluent/fluent-bit:3.3"}]}}}}`)
		},
		want: []row{{Object: "DaemonSet/log-agent", Path: `.spec.template.spec.containers[name="agent"].image`, Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "kubectl-set"}},
	},
	{
		fixture: "service",
		dismissed: []string{
			"Service/api .spec.clusterIP: builtin",
			`Service/api .spec.ports[port=80,protocol="TCP"].nodePort: builtin`,
		},
		edit: func(t *testing.T, ns string) {
			env.Patch(t, "kubectl-patch", cluster.Service, ns, "api", types.StrategicMergePatchType, `{"spec":{"ports":[{"port":80,"targetPort":9090}]}}`)
		},
		want: []row{{Object: "Service/api", Path: `.spec.ports[port=80,protocol="TCP"].targetPort`, Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-patch"}},
	},
	{
		fixture:   "job",
		dismissed: []string{"Job/migrate .spec.selector: builtin", "Job/migrate .metadata.labels.controller-uid: builtin"},
		edit: func(t *testing.T, ns string) {
			env.Patch(t, "kubectl-annotate", job, ns, "migrate", types.MergePatchType, `{"metadata":{"annotations":{"reason":"rerun"}}}`)
		},
		want: []row{{Object: "Job/migrate", Path: ".metadata.annotations.reason", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-annotate"}},
	},
	{
		fixture:   "namespace",
		dismissed: []string{"Namespace/payments-NS .metadata.labels.kubernetes.io/metadata.name: builtin"},
		edit: func(t *testing.T, ns string) {
			env.Patch(t, "kubectl-label", cluster.Namespace, "", "payments-"+ns, types.MergePatchType, `{"metadata":{"labels":{"team":"billing"}}}`)
		},
		want: []row{{Object: "Namespace/payments-NS", Path: ".metadata.labels.team", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-label"}},
	},
}

// TestACleanSyncScansClean applies each fixture both ways, scans it clean
// with the mechanism the fixture is about doing the dismissing, then makes
// one real edit and finds exactly it.
func TestACleanSyncScansClean(t *testing.T) {
	for _, c := range cases {
		for _, m := range modes {
			t.Run(c.fixture+"/"+m.name, func(t *testing.T) {
				ns := env.Namespace(t, nil)
				a := prepare(t, c.fixture, ns)
				a.sync(t, m, ns)
				if c.settle != nil {
					c.settle(t, ns)
				}
				r := a.scan(t, m, ns)
				clean(t, r)
				wantDismissed(t, r, withNS(c.dismissed, ns)...)

				c.edit(t, ns)
				r = a.scan(t, m, ns)
				want := make([]row, len(c.want))
				for i, w := range c.want {
					w.Object = replaceNS(w.Object, ns)
					want[i] = w
				}
				if diff := cmp.Diff(want, rows(r)); diff != "" {
					t.Errorf("findings after the edit (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// revision waits until the Deployment controller has written revision rev
// on Deployment name.
func revision(name, rev string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			return env.Get(t, deployment, ns, name).GetAnnotations()["deployment.kubernetes.io/revision"] == rev, nil
		})
		if err != nil {
			t.Fatalf("kube-controller-manager never wrote revision %s on Deployment %s (log %s): %v", rev, name, env.ControllerManagerLog(), err)
		}
	}
}

// aggregated waits until kube-controller-manager's clusterrole-aggregation
// controller has filled in the rules of each aggregating ClusterRole name.
func aggregated(names ...string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		t.Helper()
		for _, name := range names {
			err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
				rules, _, _ := unstructured.NestedSlice(env.Get(t, clusterRole, "", name+"-"+ns).Object, "rules")
				return len(rules) > 0, nil
			})
			if err != nil {
				t.Fatalf("kube-controller-manager never aggregated ClusterRole %s (log %s): %v", name, env.ControllerManagerLog(), err)
			}
		}
	}
}

func withNS(in []string, ns string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = replaceNS(s, ns)
	}
	return out
}

// replaceNS puts the test's namespace where a case writes NS (the names of
// cluster-scoped objects carry it).
func replaceNS(s, ns string) string {
	return strings.ReplaceAll(s, "-NS", "-"+ns)
}
