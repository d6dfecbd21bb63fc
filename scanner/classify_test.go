package scanner

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// These tests make each actor's drift the way it happens in a real cluster
// and check the class the scan gives it.

func webApp(ns string) *config.Config {
	return scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: fixture("apps", "web")}})
}

func TestAWebhooksSidecarAndAnnotationAreWebhookDrift(t *testing.T) {
	env.ServeWebhook(t, cluster.DefaultWebhook("istio-sidecar-injector-"+strings.ToLower(t.Name()[len(t.Name())-8:])))
	injected := env.Namespace(t, map[string]string{"istio-injection": "enabled"})
	plain := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), injected)
	applyDir(t, fixture("apps", "web"), plain)

	r := runScan(t, webApp(injected))
	want := []row{
		{Object: "Deployment/web", Path: ".metadata.annotations.sidecar.istio.io/status", Type: report.TypeAdded, Class: report.ClassWebhook, Live: `{"containers":["istio-proxy"]}`},
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="istio-proxy"]`, Type: report.TypeAdded, Class: report.ClassWebhook, Live: `{"args":["proxy","sidecar"],"image":"docker.io/istio/proxyv2:1.24.0","imagePullPolicy":"IfNotPresent","name":"istio-proxy","terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}`},
	}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	for _, f := range r.Apps[0].Objects[1].Findings {
		if !strings.HasPrefix(f.Actor, "istio-sidecar-injector-") || !strings.Contains(f.Hint, "MutatingWebhookConfiguration istio-sidecar-injector-") {
			t.Errorf("%s: actor %q hint %q do not name the webhook", f.Path, f.Actor, f.Hint)
		}
	}
	if got := rows(runScan(t, webApp(plain))); len(got) != 0 {
		t.Errorf("the webhook's namespaceSelector does not match, yet:\n%s", dump(got))
	}
}

func TestTheReplicaWarGetsAnOperatorFindingWithTheFix(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	applyWebHPA(t, ns)
	env.Scale(t, "kube-controller-manager", cluster.Deployment, ns, "web", 45)

	r := runScan(t, webApp(ns))
	want := []row{{Object: "Deployment/web", Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassOperator, Manager: "kube-controller-manager", Git: "3", Live: "45"}}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := r.Apps[0].Objects[1].Findings[0]
	if !strings.Contains(f.Hint, "HorizontalPodAutoscaler web-hpa owns spec.replicas: remove replicas from Git") {
		t.Errorf("hint = %q", f.Hint)
	}
	if f.Subresource != "scale" {
		t.Errorf("subresource = %q, want scale", f.Subresource)
	}
}

func TestEachManagerGetsItsClass(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	// An operator rewrites a ConfigMap value Git declares; a release tool, a
	// CI bot with a user rule and someone with kubectl scale touch the Deployment.
	env.Update(t, "config-operator", cluster.ConfigMap, ns, "web-config", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "warn", "data", "LOG_LEVEL")
	})
	env.Patch(t, "helm", cluster.Deployment, ns, "web", types.MergePatchType, `{"metadata":{"annotations":{"meta.helm.sh/release-name":"web"}}}`)
	env.Patch(t, "ci-bot", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.25-canary"}]}}}}`)
	env.Scale(t, "kubectl", cluster.Deployment, ns, "web", 1)
	env.Patch(t, "Mozilla", cluster.Deployment, ns, "web", types.MergePatchType, `{"metadata":{"labels":{"debug":"true"}}}`)

	cfg := webApp(ns)
	cfg.Rules = []classify.Rule{{Manager: "^ci-bot$", Class: report.ClassPipeline}}
	r := runScan(t, cfg)
	want := []row{
		{Object: "ConfigMap/web-config", Path: ".data.LOG_LEVEL", Type: report.TypeChanged, Class: report.ClassOperator, Manager: "config-operator", Git: "info", Live: "warn"},
		{Object: "Deployment/web", Path: ".metadata.annotations.meta.helm.sh/release-name", Type: report.TypeAdded, Class: report.ClassPipeline, Manager: "helm", Live: "web"},
		{Object: "Deployment/web", Path: ".metadata.labels.debug", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "Mozilla", Live: "true"},
		{Object: "Deployment/web", Path: ".spec.replicas", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl", Git: "3", Live: "1"},
		{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].image`, Type: report.TypeChanged, Class: report.ClassPipeline, Manager: "ci-bot", Git: "nginx:1.25", Live: "nginx:1.25-canary"},
	}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if h := r.Apps[0].Objects[0].Findings[0].Hint; !strings.Contains(h, "config-operator owns this field live") {
		t.Errorf("operator hint = %q", h)
	}
}

func TestAnOperatorsOwnFieldThatGitLeavesOutIsNotDrift(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	env.Patch(t, "cert-manager-cainjector", cluster.Deployment, ns, "web", types.MergePatchType,
		`{"metadata":{"annotations":{"cert-manager.io/inject-ca-from":"shop/web-tls"}}}`)
	if got := rows(runScan(t, webApp(ns))); len(got) != 0 {
		t.Errorf("an operator's own field is drift:\n%s", dump(got))
	}
}

func TestIgnoreRulesAreDebtsWithOwners(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	env.Scale(t, "kube-controller-manager", cluster.Deployment, ns, "web", 45)
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug","FEATURE_CHECKOUT":"off"}}`)

	cfg := webApp(ns)
	cfg.Ignore = []classify.IgnoreRule{
		{Group: "apps", Kind: "Deployment", Name: "web", JSONPointers: []string{"/spec/replicas"}, Owner: "team-web", Reason: "HPA owns replicas", Expires: "2027-03-01"},
		{Kind: "Deployment", JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "app") | .image`}, Owner: "team-release", Reason: "canary rollout", Expires: "2027-01-15"},
		{Kind: "ConfigMap", ManagedFieldsManagers: []string{"kubectl-edit"}, Owner: "team-web", Reason: "tuning during the migration", Expires: "2026-10-01"},
		{Kind: "Service", JSONPointers: []string{"/spec/sessionAffinity"}, Owner: "team-net", Reason: "old workaround", Expires: "2027-06-01"},
	}
	r := runScan(t, cfg)
	ignored := map[string]bool{}
	for _, row := range rows(r) {
		ignored[row.Path] = row.Ignored
	}
	want := map[string]bool{
		".spec.replicas": true, `.spec.template.spec.containers[name="app"].image`: true,
		".data.LOG_LEVEL": false, ".data.FEATURE_CHECKOUT": false, // the rule expired: it hides nothing
	}
	if diff := cmp.Diff(want, ignored); diff != "" {
		t.Errorf("ignored by path (-want +got):\n%s", diff)
	}
	var debts []string
	for _, d := range r.Debts {
		debts = append(debts, string(d.Kind)+" "+d.Owner+" "+d.Rule.Kind)
	}
	if diff := cmp.Diff([]string{"expired team-web ConfigMap", "unused team-net Service"}, debts); diff != "" {
		t.Errorf("debts (-want +got):\n%s", diff)
	}
	if r.Debts[0].Matched != 2 {
		t.Errorf("the expired rule would hide %d findings, want 2", r.Debts[0].Matched)
	}
	if r.Summary.Ignored != 2 || r.Summary.Findings != 2 {
		t.Errorf("summary = %+v", r.Summary)
	}
	capped := runScan(t, cfg, func(o *Options) { o.MaxIgnoresPerApp = 3 })
	if !capped.Apps[0].OverIgnoreCap {
		t.Errorf("4 rules over a cap of 3 is not flagged")
	}
}

// `kubectl scale` of a Deployment whose replicas Git leaves out (and no
// manager owns) goes through the scale subresource, and the real API
// server records it under no manager: the Scale it updates has no
// managedFields, and the field manager does not track an update of an
// object without them. Live 5 is not the default 1: it is drift, though
// nobody's; once an HPA targets the Deployment it is the HPA's; scaled
// back to 1 it is the default again.
func TestAScaleOfReplicasGitLeavesOutIsNobodys(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	obj := cluster.ObjectFile(t, fixture("apps", "web", "deployment.yaml"))
	unstructured.RemoveNestedField(obj.Object, "spec", "replicas")
	writeManifest(t, filepath.Join(dir, "deployment.yaml"), obj)
	applyDir(t, dir, ns)
	app := scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: dir}})
	replicas := func() (row, *report.Dismissal) {
		t.Helper()
		r := runScan(t, app, func(o *Options) { o.ExplainDismissed = true })
		var d *report.Dismissal
		for _, o := range r.Apps[0].Objects {
			for i := range o.Dismissed {
				if o.Dismissed[i].Path == ".spec.replicas" {
					d = &o.Dismissed[i]
				}
			}
		}
		got := rows(r)
		if len(got) > 1 {
			t.Fatalf("want at most the replicas finding, got:\n%s", dump(got))
		}
		if len(got) == 1 {
			return got[0], d
		}
		return row{}, d
	}

	env.Scale(t, "kubectl-scale", cluster.Deployment, ns, "web", 5)
	for _, e := range env.Get(t, cluster.Deployment, ns, "web").GetManagedFields() {
		if e.Manager != "argocd-controller" {
			t.Fatalf("the scale is recorded under %s (%s): the test expects the API server to record it under no manager", e.Manager, e.FieldsV1.GetRawString())
		}
	}
	if f, d := replicas(); f != (row{Object: "Deployment/web", Path: ".spec.replicas", Type: report.TypeAdded, Class: report.ClassUnknown, Live: "5"}) || d != nil {
		t.Errorf("replicas 5 that Git leaves out: want an Added finding of no known author, got %+v (dismissed: %+v)", f, d)
	}

	applyWebHPA(t, ns)
	if f, d := replicas(); f != (row{}) || d == nil || d.Reason != report.OperatorOwned || !strings.Contains(d.Detail, "HorizontalPodAutoscaler web-hpa scales it") {
		t.Errorf("with web-hpa targeting the Deployment: want replicas dismissed as the HPA's, got %+v (dismissed: %+v)", f, d)
	}

	env.Scale(t, "kubectl-scale", cluster.Deployment, ns, "web", 1)
	env.Delete(t, schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}, ns, "web-hpa")
	if f, d := replicas(); f != (row{}) || d == nil || d.Reason != report.Defaulted {
		t.Errorf("replicas 1, the default: want it dismissed as defaulted, got %+v (dismissed: %+v)", f, d)
	}
}

// applyWebHPA installs an HPA that scales Deployment web of ns (3 to 60).
func applyWebHPA(t *testing.T, ns string) {
	t.Helper()
	env.Apply(t, "hpa-installer", ns, cluster.Object(t, `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-hpa}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 60`))
}

// A policy engine's mutation (Kyverno's add-default-securitycontext) sets
// fields inside a container's security context: an empty one a chart
// renders from empty values, or one Git fills in part. The applier owns the
// empty map, not what the webhook put in it, and the API server never fills
// a security context in: each field the webhook set is a webhook finding
// naming it, not the whole map as the applier's with a hint that Git no
// longer declares it (what the scan said before), nor a dismissed default
// (what it said of the part-filled one). The server's own defaults in the
// same containers stay dismissed, their explanation naming the webhook too.
func TestAWebhooksFieldInsideAStructureGitDeclaresIsTheWebhooks(t *testing.T) {
	name := "securitycontext-defaulter-" + strings.ToLower(t.Name()[len(t.Name())-8:])
	env.ServeWebhook(t, cluster.Webhook{
		Name:              name,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy": "restricted"}},
		SecurityContext:   map[string]any{"runAsNonRoot": true},
	})
	ns := env.Namespace(t, map[string]string{"policy": "restricted"})
	dir := t.TempDir()
	writeManifest(t, filepath.Join(dir, "deployment.yaml"), cluster.Object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api"},
		"spec":{"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[
		{"name":"api","image":"nginx:1.27","securityContext":{}},
		{"name":"worker","image":"nginx:1.27","securityContext":{"runAsUser":1000}}]}}}}`))
	applyDir(t, dir, ns)
	if sc, _, _ := unstructured.NestedSlice(env.Get(t, cluster.Deployment, ns, "api").Object, "spec", "template", "spec", "containers"); !strings.Contains(fmt.Sprint(sc), "runAsNonRoot:true") {
		t.Fatalf("the webhook did not mutate the Deployment: %v", sc)
	}

	r := runScan(t, scanConfig(ns, config.App{Name: "api", Source: config.Source{Path: dir}}), func(o *Options) { o.ExplainDismissed = true })
	want := []row{
		{Object: "Deployment/api", Path: `.spec.template.spec.containers[name="api"].securityContext.runAsNonRoot`, Type: report.TypeAdded, Class: report.ClassWebhook, Live: "true"},
		{Object: "Deployment/api", Path: `.spec.template.spec.containers[name="worker"].securityContext.runAsNonRoot`, Type: report.TypeAdded, Class: report.ClassWebhook, Live: "true"},
	}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	for _, f := range r.Apps[0].Objects[0].Findings {
		if f.Actor != name || !strings.Contains(f.Hint, "MutatingWebhookConfiguration "+name) {
			t.Errorf("%s: actor %q, hint %q; want the webhook %s named", f.Path, f.Actor, f.Hint, name)
		}
	}
	var pullPolicy string
	for _, d := range r.Apps[0].Objects[0].Dismissed {
		if d.Path == `.spec.template.spec.containers[name="api"].imagePullPolicy` {
			pullPolicy = string(d.Reason) + ": " + d.Detail
		}
	}
	if !strings.HasPrefix(pullPolicy, "defaulted: ") || !strings.Contains(pullPolicy, "MutatingWebhookConfiguration "+name) {
		t.Errorf("imagePullPolicy dismissed as %q; want defaulted, naming the webhook that could have set it", pullPolicy)
	}
}

// kubectl rollout restart patches the pod template with the time, as
// kubectl-rollout (the strategic merge patch below is the one kubectl
// sends). The pods were rolled; nothing was configured: no finding, and
// the explanation names who restarted.
func TestARolloutRestartIsNoDrift(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	env.Patch(t, "kubectl-rollout", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-12-05T03:12:00Z"}}}}}`)

	r := runScan(t, webApp(ns), func(o *Options) { o.ExplainDismissed = true })
	if got := rows(r); len(got) != 0 {
		t.Errorf("a rollout restart is drift:\n%s", dump(got))
	}
	var found bool
	for _, o := range r.Apps[0].Objects {
		for _, d := range o.Dismissed {
			if strings.HasSuffix(d.Path, "kubectl.kubernetes.io/restartedAt") {
				found = d.Reason == report.Restart && d.Manager == "kubectl-rollout" && strings.Contains(d.Detail, "kubectl-rollout restarted the pods at 2026-12-05T03:12:00Z")
				if !found {
					t.Errorf("dismissed as %+v", d)
				}
			}
		}
	}
	if !found {
		t.Error("the restart is not among the dismissals")
	}
	if n := r.Stats.Dismissed[report.Restart]; n != 1 {
		t.Errorf("stats count %d restarts, want 1", n)
	}
}

// What the classifier takes for a server default, pinned on the real API
// server: a Deployment applied with a minimal pod template comes back with
// exactly these defaults (imagePullPolicy by the image's tag), and none of
// the fields classify's neverAddedWhole and neverAddedToContainer name.
func TestTheServerDefaultsClassifyReliesOn(t *testing.T) {
	ns := env.Namespace(t, nil)
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bare"},
		"spec":{"selector":{"matchLabels":{"app":"bare"}},"template":{"metadata":{"labels":{"app":"bare"}},"spec":{
		"initContainers":[{"name":"init","image":"busybox"}],
		"containers":[{"name":"latest","image":"nginx:latest"},{"name":"untagged","image":"registry.example.com:5000/nginx"},
		{"name":"tagged","image":"nginx:1.27"},{"name":"digest","image":"nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000"}]}}}}`))
	spec, _, _ := unstructured.NestedMap(env.Get(t, cluster.Deployment, ns, "bare").Object, "spec", "template", "spec")
	for field, want := range map[string]any{"terminationGracePeriodSeconds": int64(30), "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler", "restartPolicy": "Always"} {
		if spec[field] != want {
			t.Errorf("pod template %s = %v, want the default %v", field, spec[field], want)
		}
	}
	for _, field := range []string{"nodeSelector", "tolerations", "topologySpreadConstraints", "imagePullSecrets", "dnsConfig", "hostAliases",
		"priorityClassName", "runtimeClassName", "serviceAccountName", "automountServiceAccountToken", "readinessGates", "affinity"} {
		if v, ok := spec[field]; ok {
			t.Errorf("the API server filled in the pod template's %s: %v", field, v)
		}
	}
	pull := map[string]string{"init": "Always", "latest": "Always", "untagged": "Always", "tagged": "IfNotPresent", "digest": "IfNotPresent"}
	for _, list := range []string{"initContainers", "containers"} {
		items, _ := spec[list].([]any)
		for _, c := range items {
			c := c.(map[string]any)
			name := c["name"].(string)
			if c["imagePullPolicy"] != pull[name] || c["terminationMessagePath"] != "/dev/termination-log" || c["terminationMessagePolicy"] != "File" {
				t.Errorf("container %s: imagePullPolicy %v (want %s), terminationMessagePath %v, terminationMessagePolicy %v",
					name, c["imagePullPolicy"], pull[name], c["terminationMessagePath"], c["terminationMessagePolicy"])
			}
			for _, field := range []string{"livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "env", "envFrom", "command", "args", "workingDir", "volumeMounts", "resources", "securityContext"} {
				if v, ok := c[field]; ok && fmt.Sprint(v) != "map[]" {
					t.Errorf("the API server filled in container %s's %s: %v", name, field, v)
				}
			}
		}
	}
}

// A policy webhook that sets a field the API server also defaults
// (Kyverno's always-pull-images: imagePullPolicy Always) or adds a probe:
// where live holds another value than the server's default, or a field the
// server never adds, the finding is the webhook's; where the webhook's value
// is the default itself (an image tagged latest), nothing tells it from the
// server's, and it stays a dismissed default naming the webhook.
func TestAWebhookSettingAFieldTheServerDefaultsIsTheWebhooks(t *testing.T) {
	name := "always-pull-" + strings.ToLower(t.Name()[len(t.Name())-8:])
	env.ServeWebhook(t, cluster.Webhook{
		Name:              name,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy": "always-pull"}},
		Container: map[string]any{"imagePullPolicy": "Always",
			"readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": int64(8080)}}},
	})
	ns := env.Namespace(t, map[string]string{"policy": "always-pull"})
	dir := t.TempDir()
	writeManifest(t, filepath.Join(dir, "deployment.yaml"), cluster.Object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api"},
		"spec":{"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[
		{"name":"api","image":"nginx:1.27"},{"name":"edge","image":"nginx:latest"}]}}}}`))
	applyDir(t, dir, ns)
	r := runScan(t, scanConfig(ns, config.App{Name: "api", Source: config.Source{Path: dir}}), func(o *Options) { o.ExplainDismissed = true })
	want := []row{
		{Object: "Deployment/api", Path: `.spec.template.spec.containers[name="api"].imagePullPolicy`, Type: report.TypeAdded, Class: report.ClassWebhook, Live: "Always"},
		{Object: "Deployment/api", Path: `.spec.template.spec.containers[name="api"].readinessProbe`, Type: report.TypeAdded, Class: report.ClassWebhook, Live: `{"failureThreshold":3,"periodSeconds":10,"successThreshold":1,"tcpSocket":{"port":8080},"timeoutSeconds":1}`},
		{Object: "Deployment/api", Path: `.spec.template.spec.containers[name="edge"].readinessProbe`, Type: report.TypeAdded, Class: report.ClassWebhook, Live: `{"failureThreshold":3,"periodSeconds":10,"successThreshold":1,"tcpSocket":{"port":8080},"timeoutSeconds":1}`},
	}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	var edge string
	for _, d := range r.Apps[0].Objects[0].Dismissed {
		if d.Path == `.spec.template.spec.containers[name="edge"].imagePullPolicy` {
			edge = string(d.Reason) + ": " + d.Detail
		}
	}
	if !strings.HasPrefix(edge, "defaulted: ") || !strings.Contains(edge, name) {
		t.Errorf("imagePullPolicy Always on an image tagged latest dismissed as %q; want defaulted, naming the webhook", edge)
	}
}

// TestAFieldGitWritesAsNullIsTheServersDefault: a chart rendering
// `replicas: {{ .Values.replicas }}` with the value unset writes null; a
// server-side applier sends the null and owns the default the API server
// fills in, and a client-side one keeps the null in its last-applied
// configuration. Neither is drift ("the next sync removes it" is false: the
// next sync sends null again); someone scaling the Deployment is.
func TestAFieldGitWritesAsNullIsTheServersDefault(t *testing.T) {
	const deployment = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n" +
		"  replicas: {{ .Values.replicas }}\n  selector:\n    matchLabels: {app: {{ .Release.Name }}}\n" +
		"  template:\n    metadata:\n      labels: {app: {{ .Release.Name }}}\n    spec:\n      containers:\n" +
		"      - name: app\n        image: nginx:1.27\n        securityContext: {{ .Values.securityContext }}\n"
	ns := env.Namespace(t, nil)
	ssa, csa := writeChart(t, "ssa", deployment), writeChart(t, "csa", deployment)
	applyDir(t, ssa, ns)
	abs, _ := filepath.Abs(csa)
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: abs, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		if mf.Object.GetKind() == "Deployment" {
			if v, ok := mf.Object.Object["spec"].(map[string]any)["replicas"]; !ok || v != nil {
				t.Fatalf("the chart renders replicas as %v (present %v), want null", v, ok)
			}
		}
		sent, err := json.Marshal(mf.Object.Object)
		if err != nil {
			t.Fatal(err)
		}
		obj := mf.Object.DeepCopy()
		obj.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(sent)})
		env.Create(t, "kubectl-client-side-apply", ns, obj)
	}
	live := env.Get(t, cluster.Deployment, ns, "ssa")
	if n, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); n != 1 {
		t.Fatalf("live replicas = %d, want the API server's default 1", n)
	}
	cfg := scanConfig(ns,
		config.App{Name: "ssa", Source: config.Source{Path: ssa}},
		config.App{Name: "csa", Source: config.Source{Path: csa}})
	cfg.Appliers = append(cfg.Appliers, "kubectl-client-side-apply")
	r := runScan(t, cfg, func(o *Options) { o.ExplainDismissed = true })
	if got := rows(r); len(got) != 0 {
		t.Errorf("a default filled in where Git writes null is drift:\n%s", dump(got))
	}
	for _, a := range r.Apps {
		var why string
		for _, o := range a.Objects {
			for _, d := range o.Dismissed {
				if o.Kind == "Deployment" && d.Path == ".spec.replicas" {
					why = string(d.Reason) + ": " + d.Detail
				}
			}
		}
		if !strings.HasPrefix(why, "defaulted: ") {
			t.Errorf("%s: replicas dismissed as %q, want defaulted", a.Name, why)
		}
	}

	env.Scale(t, "kubectl", cluster.Deployment, ns, "ssa", 4)
	r = runScan(t, cfg)
	want := []row{{Object: "Deployment/ssa", Path: ".spec.replicas", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl", Live: "4"}}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("someone scaling where Git writes null (-want +got):\n%s", diff)
	}
}
