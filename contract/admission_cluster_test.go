package contract_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

var env *cluster.Env

// TestMain runs the real kube-controller-manager as the identity it has in a
// real cluster, so that the policies meet the control plane's own writes,
// and an audit log, so that scans can say who made a change.
func TestMain(m *testing.M) {
	os.Exit(cluster.MainWith(m, &env, cluster.Options{ControllerManager: true, ControllerManagerUser: kcm, Audit: &cluster.AuditOptions{}}))
}

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// actor is a client that acts as one identity and keeps the warnings the API
// server sends it.
type actor struct {
	dyn      dynamic.Interface
	mu       sync.Mutex
	warnings []string
}

func (a *actor) HandleWarningHeader(code int, agent, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.warnings = append(a.warnings, text)
}

func (a *actor) takeWarnings() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.warnings
	a.warnings = nil
	return w
}

// as returns a client impersonating user in groups (system:masters added, so
// that RBAC allows every write and only the policy decides).
func as(t *testing.T, user string, groups ...string) *actor {
	t.Helper()
	env.Need(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:masters", "system:authenticated")}
	a := &actor{}
	cfg.WarningHandler = a
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.dyn = dyn
	return a
}

// patch sends a patch as field manager manager, to a subresource when one
// is given.
func (a *actor) patch(ctx context.Context, ns, name, manager string, pt types.PatchType, body string, sub ...string) error {
	_, err := a.dyn.Resource(deployments).Namespace(ns).Patch(ctx, name, pt, []byte(body), metav1.PatchOptions{FieldManager: manager}, sub...)
	return err
}

// Identities of the actors.
const (
	argoSA     = "system:serviceaccount:argocd:argocd-application-controller"
	deployerSA = "system:serviceaccount:ci:deployer"
	human      = "alice@example.com"
	kcm        = "system:kube-controller-manager"
)

const humanEdit = `{"spec":{"template":{"metadata":{"annotations":{"hotfix":"INC-4211"}}}}}`

// deployment is the app's Deployment as Argo CD syncs it, tracking-id and all.
func deployment(t *testing.T, ns string) *unstructured.Unstructured {
	return cluster.Object(t, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %[1]s
  annotations: {argocd.argoproj.io/tracking-id: "payments:apps/Deployment:%[1]s/web"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "nginx:1.25"}]
`, ns))
}

// production is the production contract over namespace ns.
func production(ns string) contract.Contract {
	return contract.Contract{
		Name: "production-" + ns, Namespaces: []string{ns}, Owner: "platform-team",
		Allow: []contract.Rule{
			{Class: "operator"},
			{Class: "webhook", Webhooks: []string{"istio-sidecar-injector"}},
			{Class: "pipeline", Managers: []string{"kubectl-set"}, Users: []string{deployerSA}},
			{Class: "human", During: contract.DuringBreakglass},
		},
		SelfHeal: contract.SelfHealForbidden,
	}
}

// syncApp applies the Deployment as Argo CD does: its service account, its
// field manager.
func syncApp(t *testing.T, ns string) {
	t.Helper()
	obj := deployment(t, ns)
	if _, err := as(t, argoSA).dyn.Resource(deployments).Namespace(ns).Apply(t.Context(), "web", obj, metav1.ApplyOptions{FieldManager: "argocd-controller", Force: true}); err != nil {
		t.Fatal(err)
	}
}

// install writes the params ConfigMap (in its own namespace), the
// contract's policy and binding with the given actions, and waits until the
// API server enforces them: until probe is refused (deny) or warned about.
func install(t *testing.T, c contract.Contract, actions []contract.Action, probe func() error, warned func() bool) contract.ParamsRef {
	t.Helper()
	env.Need(t)
	ctx := t.Context()
	params := contract.ParamsRef{Namespace: env.Namespace(t, nil), Name: "driftscan-breakglass"}
	opts := contract.DefaultAdmissionOptions()
	opts.Actions, opts.Params = actions, params
	opts.ApplierManagers = []string{"argocd-controller"}
	// A config rule by identity, as audit-aware configs write them.
	opts.Rules = contract.ClassRules(classify.Ordered([]classify.Rule{{Users: []string{"system:serviceaccount:ci:*"}, Class: report.ClassPipeline}}))
	opts.Resources = map[string][]contract.Resource{c.Name: {
		{Group: "apps", Resource: "deployments", Subresources: []string{"scale", "status"}},
		{Group: "", Resource: "configmaps"},
	}}
	m, err := contract.Admission([]contract.Contract{c}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(params.Namespace).Create(ctx, m.Params, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ar := env.Client.AdmissionregistrationV1()
	for _, p := range m.Policies {
		if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, p.Policy, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create policy: %v", err)
		}
		if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, p.Binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create binding: %v", err)
		}
		name := p.Policy.Name
		t.Cleanup(func() {
			_ = ar.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = ar.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := probe()
		last = err
		if warned != nil {
			return warned(), nil
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	})
	if err != nil {
		t.Fatalf("the API server never enforced policy %s: %v (the probe's last answer: %v)", contract.PolicyName(c.Name), err, last)
	}
	return params
}

// dryRun sends the human edit as a server-side dry run: it is judged like
// the real write and changes nothing.
func dryRunHumanEdit(a *actor, ns string) func() error {
	return func() error {
		_, err := a.dyn.Resource(deployments).Namespace(ns).Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(humanEdit),
			metav1.PatchOptions{FieldManager: "kubectl-edit", DryRun: []string{metav1.DryRunAll}})
		return err
	}
}

func mustDeny(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("the write was allowed; want it denied")
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("want a refusal by the policy, got %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("denial does not say %q:\n%v", w, err)
		}
	}
}

func TestAdmissionDeniesAHumanEditInProductionAndNamesTheContractAndTheBreakglassCommand(t *testing.T) {
	ns := env.Namespace(t, nil)
	syncApp(t, ns)
	c := production(ns)
	alice := as(t, human)
	install(t, c, []contract.Action{contract.ActionDeny}, dryRunHumanEdit(alice, ns), nil)

	err := alice.patch(t.Context(), ns, "web", "kubectl-edit", types.StrategicMergePatchType, humanEdit)
	mustDeny(t, err, "contract "+c.Name+" (owner platform-team)", human, "field manager kubectl-edit, class human",
		"driftscan breakglass suspend payments --ttl 1h")
	if hotfix(t, ns) != "" {
		t.Fatalf("the denied edit reached the object")
	}
}

// hotfix is the live pod template's hotfix annotation.
func hotfix(t *testing.T, ns string) string {
	t.Helper()
	v, _, _ := unstructured.NestedString(env.Get(t, cluster.Deployment, ns, "web").Object, "spec", "template", "metadata", "annotations", "hotfix")
	return v
}

var applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// application creates the Argo CD Application payments in its own
// namespace, deploying into dest with self-heal on.
func application(t *testing.T, dest string) breakglass.Target {
	t.Helper()
	env.InstallCRDs(t, "crd-installer", "../fixtures/crds/applications.argoproj.io.yaml")
	argo := env.Namespace(t, nil)
	env.Create(t, "argocd-server", argo, cluster.Object(t, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: payments}
spec:
  project: default
  source: {repoURL: https://git.example.com/deploy.git, path: apps/payments, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy: {automated: {prune: true, selfHeal: true}}
`, dest)))
	return breakglass.Target{Resource: applications, Namespace: argo, Name: "payments"}
}

func TestAdmissionAllowsTheHumanEditWhileBreakglassIsActiveAndDeniesItAgainAfterResume(t *testing.T) {
	ns := env.Namespace(t, nil)
	syncApp(t, ns)
	app := application(t, ns)
	alice := as(t, human)
	params := install(t, production(ns), []contract.Action{contract.ActionDeny}, dryRunHumanEdit(alice, ns), nil)
	ctx := t.Context()

	opts := breakglass.DefaultSuspendOptions()
	opts.Reason, opts.TTL, opts.Who = "INC-4211", time.Hour, human
	if _, err := breakglass.Suspend(ctx, env.Dynamic, app, opts); err != nil {
		t.Fatal(err)
	}
	ch, err := breakglass.Lift(ctx, env.Dynamic, params, app, false)
	if err != nil || ch == nil {
		t.Fatalf("lift: %v, %v", ch, err)
	}
	// The policy reads params through an informer: wait for the lift.
	waitFor(t, "the break-glass lift", func() bool { return dryRunHumanEdit(alice, ns)() == nil })
	if err := alice.patch(ctx, ns, "web", "kubectl-edit", types.StrategicMergePatchType, humanEdit); err != nil {
		t.Fatalf("the human hotfix was denied while break-glass is active: %v", err)
	}
	if hotfix(t, ns) != "INC-4211" {
		t.Fatal("the hotfix did not land")
	}
	// A Scale carries no tracking annotation: the lift of an app in its
	// namespace covers it.
	if err := alice.patch(ctx, ns, "web", "kubectl", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale"); err != nil {
		t.Fatalf("kubectl scale was denied while break-glass is active: %v", err)
	}

	if _, err := breakglass.Resume(ctx, env.Dynamic, app, breakglass.ResumeOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := breakglass.Unlift(ctx, env.Dynamic, params, app, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the end of the lift", func() bool { return dryRunHumanEdit(alice, ns)() != nil })
	err = alice.patch(ctx, ns, "web", "kubectl-edit", types.StrategicMergePatchType, `{"spec":{"template":{"metadata":{"annotations":{"hotfix":"again"}}}}}`)
	mustDeny(t, err, "driftscan breakglass suspend payments")
}

func TestAdmissionAllowsThePipelineServiceAccountsSetImageAndNoOneElses(t *testing.T) {
	ns := env.Namespace(t, nil)
	syncApp(t, ns)
	alice := as(t, human)
	install(t, production(ns), []contract.Action{contract.ActionDeny}, dryRunHumanEdit(alice, ns), nil)
	setImage := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`

	if err := as(t, deployerSA, "system:serviceaccounts").patch(t.Context(), ns, "web", "kubectl-set", types.StrategicMergePatchType, setImage); err != nil {
		t.Fatalf("the pipeline's kubectl set image was denied: %v", err)
	}
	// The same field manager from a person is not the pipeline: the rule
	// names the service account.
	err := alice.patch(t.Context(), ns, "web", "kubectl-set", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}}}`)
	mustDeny(t, err, "field manager kubectl-set, class pipeline")
}

func TestAdmissionInWarnModeWarnsTheClientAndLetsTheEditThrough(t *testing.T) {
	env.Need(t)
	// This contract picks its namespace by label.
	ns := env.Namespace(t, map[string]string{"env": "prod"})
	syncApp(t, ns)
	alice := as(t, human)
	c := production(ns)
	c.Namespaces, c.NamespaceSelector = nil, &contract.Selector{MatchLabels: map[string]string{"env": "prod"},
		MatchExpressions: []contract.Requirement{{Key: "sandbox", Operator: "DoesNotExist"}}}
	install(t, c, []contract.Action{contract.ActionWarn, contract.ActionAudit}, dryRunHumanEdit(alice, ns),
		func() bool { return len(alice.takeWarnings()) > 0 })

	if err := alice.patch(t.Context(), ns, "web", "kubectl-edit", types.StrategicMergePatchType, humanEdit); err != nil {
		t.Fatalf("warn mode denied the edit: %v", err)
	}
	warnings := strings.Join(alice.takeWarnings(), "\n")
	for _, want := range []string{"contract " + c.Name, "field manager kubectl-edit, class human", "driftscan breakglass suspend payments"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("the warning does not say %q:\n%s", want, warnings)
		}
	}
	if hotfix(t, ns) != "INC-4211" {
		t.Fatal("the edit did not land")
	}
}

func TestAdmissionNeverDeniesTheControlPlaneOrTheGitOpsApplier(t *testing.T) {
	ns := env.Namespace(t, nil)
	syncApp(t, ns)
	alice := as(t, human)
	// A strict contract: no rule for operators or unknown actors, so only
	// the exemptions let the control plane through.
	c := production(ns)
	c.Allow = []contract.Rule{
		{Class: "pipeline", Managers: []string{"kubectl-set"}, Users: []string{deployerSA}},
		{Class: "human", During: contract.DuringBreakglass},
	}
	install(t, c, []contract.Action{contract.ActionDeny}, dryRunHumanEdit(alice, ns), nil)
	ctx := t.Context()

	// The GitOps applier syncs a new image; the real Deployment controller
	// (kube-controller-manager as system:kube-controller-manager) rolls it
	// out: a new ReplicaSet, the revision annotation and the status.
	obj := deployment(t, ns)
	unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": "app", "image": "nginx:1.27"}}, "spec", "template", "spec", "containers")
	if _, err := as(t, argoSA).dyn.Resource(deployments).Namespace(ns).Apply(ctx, "web", obj, metav1.ApplyOptions{FieldManager: "argocd-controller", Force: true}); err != nil {
		t.Fatalf("the GitOps applier's sync was denied: %v", err)
	}
	waitFor(t, "the Deployment controller's rollout", func() bool {
		live := env.Get(t, cluster.Deployment, ns, "web")
		observed, _, _ := unstructured.NestedInt64(live.Object, "status", "observedGeneration")
		return observed == live.GetGeneration() && live.GetAnnotations()["deployment.kubernetes.io/revision"] == "2"
	})

	// The root CA publisher recreates kube-root-ca.crt in every namespace:
	// a ConfigMap create in the contract's namespace, naming no field
	// manager (class unknown at admission).
	if err := env.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "kube-controller-manager to recreate kube-root-ca.crt", func() bool {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil && cm.Data["ca.crt"] != ""
	})
	// The same create from a person is judged, and denied.
	_, err := alice.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Create(ctx,
		cluster.Object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: debug}, data: {a: b}}"), metav1.CreateOptions{})
	mustDeny(t, err, "field manager not named, class unknown", "create configmaps "+ns+"/debug")

	// The HPA's write through the scale subresource, as the controller
	// manager (there is no metrics server to drive a real one).
	if err := as(t, kcm).patch(ctx, ns, "web", "kube-controller-manager", types.MergePatchType, `{"spec":{"replicas":5}}`, "scale"); err != nil {
		t.Errorf("the autoscaler's scale write was denied: %v", err)
	}
	// A kube-system service account (a controller with its own credentials).
	if err := as(t, "system:serviceaccount:kube-system:deployment-controller").patch(ctx, ns, "web", "", types.MergePatchType,
		`{"metadata":{"labels":{"touched":"by-a-controller"}}}`); err != nil {
		t.Errorf("a kube-system service account's write was denied: %v", err)
	}
	// kubectl scale by a person goes through the same subresource, and is
	// judged.
	err = alice.patch(ctx, ns, "web", "kubectl", types.MergePatchType, `{"spec":{"replicas":9}}`, "scale")
	mustDeny(t, err, "field manager kubectl, class human", "update deployments/scale "+ns+"/web")
	// So is a person creating a Deployment.
	_, err = alice.dyn.Resource(deployments).Namespace(ns).Create(ctx, renamed(deployment(t, ns), "debug"), metav1.CreateOptions{FieldManager: "kubectl-create"})
	mustDeny(t, err, "create deployments "+ns+"/debug", "kubectl-create")
}

func renamed(u *unstructured.Unstructured, name string) *unstructured.Unstructured {
	u.SetName(name)
	u.SetAnnotations(nil)
	return u
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
