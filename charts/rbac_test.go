package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

// installed is the chart's RBAC and state installed on the test API server,
// and clients that act as the chart's ServiceAccount.
type installed struct {
	ns       string // the release namespace
	fullname string
	saName   string
	rel      *Release
	// sa and saConfig act as the ServiceAccount, by impersonation.
	sa       kubernetes.Interface
	saConfig *rest.Config
}

// install renders the chart as release ns into a new namespace ns and
// creates, as Helm would, every object the scan's rights come from: the
// ServiceAccount, Roles, ClusterRoles, their bindings, and the ConfigMaps;
// and the cache's PersistentVolumeClaim when the values ask for one.
func install(t *testing.T, valuesDoc string) *installed {
	t.Helper()
	ns := env.Namespace(t, nil)
	opts := DefaultOptions()
	opts.ReleaseName, opts.Namespace = ns, ns
	opts.Values = values(t, valuesDoc)
	rel, err := Render(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	cj, err := rel.CronJob()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range rel.Objects {
		switch u.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Lease", "PersistentVolumeClaim":
			env.Create(t, "helm", "", u)
		case "ClusterRole", "ClusterRoleBinding":
			env.Create(t, "helm", "", u)
			env.DeleteRBACAtEnd(t, u.GetKind(), u.GetName())
		}
	}
	saName := cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + saName}
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &installed{ns: ns, fullname: cj.GetName(), saName: saName, rel: rel, sa: sa, saConfig: cfg}
	// The RBAC authorizer learns of new roles and bindings through
	// informers: wait until every binding the release made is in effect.
	r.eventuallyBound(t)
	return r
}

// eventuallyBound waits until the authorizer honours the first rule of
// every role each of the release's bindings grants, in the binding's scope.
func (r *installed) eventuallyBound(t *testing.T) {
	t.Helper()
	roles := map[string]rbacv1.ClusterRole{}
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, u := range r.rel.OfKind(kind) {
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
				t.Fatalf("%s %s: %v", kind, u.GetName(), err)
			}
			roles[kind+"/"+u.GetName()] = role
		}
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, u := range r.rel.OfKind(kind) {
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
				t.Fatalf("%s %s: %v", kind, u.GetName(), err)
			}
			role, ok := roles[b.RoleRef.Kind+"/"+b.RoleRef.Name]
			if !ok || len(role.Rules) == 0 {
				continue
			}
			rule := role.Rules[0]
			if len(rule.Verbs) == 0 || len(rule.APIGroups) == 0 || len(rule.Resources) == 0 {
				continue
			}
			name := ""
			if len(rule.ResourceNames) > 0 {
				name = rule.ResourceNames[0]
			}
			ns := b.Namespace
			if kind == "RoleBinding" && ns == "" {
				ns = r.ns
			}
			r.eventuallyCan(t, rule.Verbs[0], rule.APIGroups[0], rule.Resources[0], ns, name)
		}
	}
}

// states returns the state ConfigMaps' names.
func (r *installed) states() []string {
	var out []string
	for _, u := range r.rel.OfKind("ConfigMap") {
		if u.GetLabels()["app.kubernetes.io/component"] == "state" {
			out = append(out, u.GetName())
		}
	}
	return out
}

// can asks the API server whether the ServiceAccount may do verb.
func (r *installed) can(t *testing.T, verb, group, resource, ns, name string) bool {
	t.Helper()
	review, err := r.sa.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("access review %s %s.%s %s/%s: %v", verb, resource, group, ns, name, err)
	}
	return review.Status.Allowed
}

func (r *installed) eventuallyCan(t *testing.T, verb, group, resource, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !r.can(t, verb, group, resource, ns, name) {
		if time.Now().After(deadline) {
			t.Fatalf("the ServiceAccount still may not %s %s.%s %s/%s after 30s", verb, resource, group, ns, name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allowed fails the test unless err is nil.
func allowed(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v, want allowed", what, err)
	}
}

// forbidden fails the test unless err is a 403.
func forbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want Forbidden", what, err)
	}
}

// seed creates, as an admin, a Deployment, a ConfigMap and a Secret in ns.
func seed(t *testing.T, ns string) {
	t.Helper()
	for _, f := range []string{"deployment.yaml", "configmap.yaml", "secret.yaml"} {
		env.Apply(t, "argocd-controller", ns, cluster.ObjectFile(t, filepath.Join("..", "fixtures", "apps", "web", f)))
	}
}

// updateState proves the ServiceAccount can read and rewrite a state
// ConfigMap, the way the scan keeps what it notified.
func (r *installed) updateState(t *testing.T, name string) {
	t.Helper()
	cms := r.sa.CoreV1().ConfigMaps(r.ns)
	cm, err := cms.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("get state ConfigMap %s: %v", name, err)
		return
	}
	cm.Data = map[string]string{"fingerprints": `{"web":"abc"}`}
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "driftscan"})
	allowed(t, "update state ConfigMap "+name, err)
}

// neverWrites asks the API server about every write the ServiceAccount must
// not have, here and cluster-wide.
func (r *installed) neverWrites(t *testing.T, otherNS string) {
	t.Helper()
	resources := [][2]string{
		{"", "pods"}, {"", "pods/exec"}, {"", "secrets"}, {"", "configmaps"}, {"", "serviceaccounts"},
		{"", "serviceaccounts/token"}, {"", "namespaces"}, {"", "nodes"}, {"apps", "deployments"},
		{"apps", "deployments/scale"}, {"batch", "jobs"}, {"batch", "cronjobs"},
		{"rbac.authorization.k8s.io", "roles"}, {"rbac.authorization.k8s.io", "clusterroles"},
		{"rbac.authorization.k8s.io", "rolebindings"}, {"admissionregistration.k8s.io", "mutatingwebhookconfigurations"},
		{"apiextensions.k8s.io", "customresourcedefinitions"}, {"", "users"}, {"", "groups"}, {"*", "*"},
	}
	verbs := []string{"create", "update", "patch", "delete", "deletecollection", "watch", "impersonate", "escalate", "bind"}
	for _, ns := range []string{r.ns, otherNS, ""} {
		for _, res := range resources {
			for _, verb := range verbs {
				if r.can(t, verb, res[0], res[1], ns, "") {
					t.Errorf("the ServiceAccount may %s %s.%s in namespace %q", verb, res[1], res[0], ns)
				}
			}
		}
	}
	for _, name := range r.states() {
		for _, verb := range []string{"patch", "delete", "create", "watch"} {
			if r.can(t, verb, "", "configmaps", r.ns, name) {
				t.Errorf("the ServiceAccount may %s its state ConfigMap %s (only get and update)", verb, name)
			}
		}
	}
}

// realWritesFail sends the writes the ServiceAccount must not make and
// checks that each is refused.
func (r *installed) realWritesFail(t *testing.T, otherNS string) {
	t.Helper()
	ctx := t.Context()
	cms := r.sa.CoreV1().ConfigMaps(r.ns)

	// Read as the admin: in namespaces scope the release namespace itself
	// may not be readable.
	config, err := env.Client.CoreV1().ConfigMaps(r.ns).Get(ctx, r.fullname+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the config ConfigMap: %v", err)
	}
	config.Data["scan.yaml"] = "apiVersion: hacked\n"
	_, err = cms.Update(ctx, config, metav1.UpdateOptions{})
	forbidden(t, "update the config ConfigMap", err)

	other, err := r.sa.CoreV1().ConfigMaps(otherNS).Get(ctx, "web-config", metav1.GetOptions{})
	allowed(t, "get a ConfigMap in a namespace it reads", err)
	if err == nil {
		other.Data = map[string]string{"x": "y"}
		_, err = r.sa.CoreV1().ConfigMaps(otherNS).Update(ctx, other, metav1.UpdateOptions{})
		forbidden(t, "update a ConfigMap in a namespace it reads", err)
	}

	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "made-by-scan"}}, metav1.CreateOptions{})
	forbidden(t, "create a ConfigMap", err)
	state := r.states()[0]
	_, err = cms.Patch(ctx, state, types.MergePatchType, []byte(`{"data":{"x":"y"}}`), metav1.PatchOptions{})
	forbidden(t, "patch the state ConfigMap", err)
	forbidden(t, "delete the state ConfigMap", cms.Delete(ctx, state, metav1.DeleteOptions{}))
	forbidden(t, "delete a Deployment", r.sa.AppsV1().Deployments(otherNS).Delete(ctx, "web", metav1.DeleteOptions{}))
	_, err = r.sa.AppsV1().Deployments(otherNS).Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
	forbidden(t, "patch a Deployment", err)
	_, err = r.sa.CoreV1().Pods(r.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "escape"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	forbidden(t, "create a Pod", err)
	_, err = r.sa.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: r.ns + "-escalate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: r.fullname, Namespace: r.ns}},
	}, metav1.CreateOptions{})
	forbidden(t, "bind cluster-admin", err)
	_, err = r.sa.CoreV1().ServiceAccounts(r.ns).CreateToken(ctx, r.fullname, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	forbidden(t, "mint a token for its own ServiceAccount", err)
}

func TestTheDefaultRBACReadsWhatAppsDeclareAndWritesOnlyItsState(t *testing.T) {
	r := install(t, ``)
	other := env.Namespace(t, nil)
	seed(t, other)
	ctx := t.Context()

	_, err := r.sa.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	allowed(t, "list Deployments cluster-wide", err)
	_, err = r.sa.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	allowed(t, "list ConfigMaps cluster-wide", err)
	_, err = r.sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	forbidden(t, "list Secrets cluster-wide (without rbac.secrets)", err)
	_, err = r.sa.CoreV1().Secrets(other).Get(ctx, "web-db", metav1.GetOptions{})
	forbidden(t, "get a Secret (without rbac.secrets)", err)
	_, err = r.sa.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	allowed(t, "list Namespaces", err)
	_, err = r.sa.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	allowed(t, "list MutatingWebhookConfigurations", err)
	_, err = r.sa.AppsV1().Deployments(other).Get(ctx, "web", metav1.GetOptions{})
	allowed(t, "get a Deployment", err)
	_, err = r.sa.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	allowed(t, "list ClusterRoles", err)
	_, err = r.sa.CoreV1().Pods(other).List(ctx, metav1.ListOptions{})
	forbidden(t, "list Pods (not in rbac.rules)", err)

	r.updateState(t, r.states()[0])
	r.realWritesFail(t, other)
	r.neverWrites(t, other)
}

func TestEachShardMayUpdateItsOwnStateOnly(t *testing.T) {
	r := install(t, `shards: 3`)
	other := env.Namespace(t, nil)
	seed(t, other)
	if got := len(r.states()); got != 3 {
		t.Fatalf("%d state ConfigMaps, want 3", got)
	}
	for _, name := range r.states() {
		r.updateState(t, name)
	}
	if r.can(t, "update", "", "configmaps", r.ns, r.fullname+"-state") {
		t.Error("the unsharded state name is writable too")
	}
	r.realWritesFail(t, other)
	r.neverWrites(t, other)
}

func TestNarrowedRBACReadsOnlyTheNamedGroupsAndNamespaces(t *testing.T) {
	teamA, teamB, outside := env.Namespace(t, nil), env.Namespace(t, nil), env.Namespace(t, nil)
	for _, ns := range []string{teamA, outside} {
		seed(t, ns)
	}
	r := install(t, fmt.Sprintf(`
rbac:
  scope: namespaces
  rules: [{apiGroups: ["", "apps"], resources: [configmaps, services, deployments]}]
  secrets: true
  namespaces: [%s, %s]
`, teamA, teamB))
	r.eventuallyCan(t, "list", "apps", "deployments", teamA, "")
	ctx := t.Context()

	_, err := r.sa.AppsV1().Deployments(teamA).List(ctx, metav1.ListOptions{})
	allowed(t, "list Deployments in a named namespace", err)
	_, err = r.sa.CoreV1().Secrets(teamB).List(ctx, metav1.ListOptions{})
	allowed(t, "list Secrets in a named namespace", err)
	_, err = r.sa.AppsV1().Deployments(teamA).Get(ctx, "web", metav1.GetOptions{})
	allowed(t, "get a Deployment in a named namespace", err)
	_, err = r.sa.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	allowed(t, "list Namespaces", err)
	_, err = r.sa.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	allowed(t, "list MutatingWebhookConfigurations", err)

	_, err = r.sa.AppsV1().Deployments(outside).List(ctx, metav1.ListOptions{})
	forbidden(t, "list Deployments in a namespace not named", err)
	_, err = r.sa.CoreV1().Secrets(outside).Get(ctx, "web-db", metav1.GetOptions{})
	forbidden(t, "get a Secret in a namespace not named", err)
	_, err = r.sa.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	forbidden(t, "list Deployments cluster-wide", err)
	_, err = r.sa.BatchV1().Jobs(teamA).List(ctx, metav1.ListOptions{})
	forbidden(t, "list Jobs (API group batch is not named)", err)
	_, err = r.sa.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	forbidden(t, "list ClusterRoles", err)

	r.updateState(t, r.states()[0])
	r.realWritesFail(t, teamA)
	r.neverWrites(t, teamA)
}

// TestTheServiceAccountCanScan runs a real scan with the chart's rendered
// scan.yaml as the chart's ServiceAccount: every read the scan makes must be
// granted, in both RBAC scopes.
func TestTheServiceAccountCanScan(t *testing.T) {
	webDir, err := filepath.Abs(filepath.Join("..", "fixtures", "apps", "web"))
	if err != nil {
		t.Fatal(err)
	}
	// Without rbac.secrets the Secret the app declares is reported as not
	// readable, naming the right it lacks: never as Missing.
	notReadable := "Secret/%[1]s/web-db Error not readable (forbidden): the scan needs list on secrets in namespace %[1]s: RBAC denied"
	cases := []struct {
		name, values, secret string
	}{
		{"cluster scope", ``, notReadable},
		{"cluster scope with rbac.secrets", "rbac: {secrets: true}", "Secret/%[1]s/web-db InSync "},
		{"namespaces scope", `
rbac:
  scope: namespaces
  rules: [{apiGroups: ["", "apps"], resources: [configmaps, services, deployments]}]
  secrets: true
  namespaces: [%[1]s]
`, "Secret/%[1]s/web-db InSync "},
		{"namespaces scope without rbac.secrets", `
rbac:
  scope: namespaces
  rules: [{apiGroups: ["", "apps"], resources: [configmaps, services, deployments]}]
  namespaces: [%[1]s]
`, notReadable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env.Need(t)
			appNS := env.Namespace(t, nil)
			for _, f := range []string{"deployment.yaml", "configmap.yaml", "secret.yaml", "service.yaml"} {
				env.Apply(t, "argocd-controller", appNS, cluster.ObjectFile(t, filepath.Join(webDir, f)))
			}
			r := install(t, fmt.Sprintf(c.values+`
config:
  appliers: [argocd-controller]
  apps:
  - name: web
    owner: team-web
    namespace: %[1]s
    source: {path: %[2]q}
`, appNS, webDir))
			r.eventuallyCan(t, "list", "apps", "deployments", appNS, "")

			scanYAML, err := r.rel.ScanConfig()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "scan.yaml")
			if err := os.WriteFile(path, []byte(scanYAML), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatalf("the chart's scan.yaml: %v\n%s", err, scanYAML)
			}
			opts := scanner.DefaultOptions()
			opts.RESTConfig = r.saConfig
			opts.Cluster = "envtest"
			opts.GitCacheDir = t.TempDir()
			rep, err := scanner.Scan(t.Context(), cfg, opts)
			if err != nil {
				t.Fatalf("scan as the ServiceAccount: %v", err)
			}
			out, _ := json.MarshalIndent(rep, "", "  ")
			var got []string
			for _, a := range rep.Apps {
				for _, o := range a.Objects {
					got = append(got, o.Ref()+" "+string(o.Status)+" "+o.Error)
				}
			}
			want := []string{"ConfigMap/%[1]s/web-config InSync ", "Deployment/%[1]s/web InSync ", c.secret, "Service/%[1]s/web InSync "}
			for i := range want {
				want[i] = fmt.Sprintf(want[i], appNS)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s\nreport:\n%s", diff, out)
			}
			wantExit := report.ExitOK
			if c.secret == notReadable {
				wantExit = report.ExitError
			}
			if rep.Summary.Objects != 4 || rep.Summary.Missing != 0 || rep.ExitCode(nil) != wantExit {
				t.Errorf("summary %+v, exit %d, want 4 objects, none missing, exit %d", rep.Summary, rep.ExitCode(nil), wantExit)
			}
		})
	}
}

func TestContractParamsGrantGetAndPatchOnThatConfigMapOnly(t *testing.T) {
	paramsNS := env.Namespace(t, nil)
	for _, name := range []string{"contract-params", "other"} {
		env.Create(t, "driftscan", paramsNS, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name},
			"data":     map[string]any{"lifted": "web"},
		}})
	}
	// Reads are narrowed to another namespace, so that every right in
	// paramsNS comes from contractParams.
	r := install(t, fmt.Sprintf(`
contractParams: %s/contract-params
rbac:
  scope: namespaces
  rules: [{apiGroups: [""], resources: [configmaps]}]
  namespaces: [%s]
`, paramsNS, env.Namespace(t, nil)))
	ctx := t.Context()
	cms := r.sa.CoreV1().ConfigMaps(paramsNS)
	_, err := cms.Get(ctx, "contract-params", metav1.GetOptions{})
	allowed(t, "get the params ConfigMap", err)
	_, err = cms.Patch(ctx, "contract-params", types.MergePatchType, []byte(`{"data":{"lifted":""}}`), metav1.PatchOptions{FieldManager: "driftscan"})
	allowed(t, "patch the params ConfigMap", err)
	_, err = cms.Patch(ctx, "other", types.MergePatchType, []byte(`{"data":{"lifted":""}}`), metav1.PatchOptions{FieldManager: "driftscan"})
	forbidden(t, "patch another ConfigMap in its namespace", err)
	err = cms.Delete(ctx, "contract-params", metav1.DeleteOptions{})
	forbidden(t, "delete the params ConfigMap", err)
	_, err = cms.List(ctx, metav1.ListOptions{})
	forbidden(t, "list ConfigMaps in the params namespace", err)
}
