package breakglass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

var (
	applicationGVK   = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
)

func installCRDs(t *testing.T) {
	env.InstallCRDs(t, "crd-installer", "../fixtures/crds/applications.argoproj.io.yaml", "../fixtures/crds/kustomizations.kustomize.toolkit.fluxcd.io.yaml")
}

const application = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: payments
  annotations: {notes: keep me}
spec:
  project: default
  source: {repoURL: https://git.example.com/deploy.git, path: apps/payments, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: payments}
  syncPolicy:
    automated: {prune: true, selfHeal: true, allowEmpty: false}
    syncOptions: [ServerSideApply=true]
`

const kustomization = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: payments}
spec:
  interval: 5m
  path: ./apps/payments
  prune: true
  sourceRef: {kind: GitRepository, name: deploy}
`

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

func suspendOpts() SuspendOptions {
	o := DefaultSuspendOptions()
	o.Reason, o.TTL, o.Who = "INC-4211 payment certs", 2*time.Hour, "alice@example.com"
	o.Now = func() time.Time { return t0 }
	return o
}

// specOf is the object's spec as JSON, for byte-for-byte comparisons.
func specOf(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	data, err := json.Marshal(u.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestSuspendAndResumeRestoreTheObjectExactly(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	cases := []struct {
		name     string
		gvk      schema.GroupVersionKind
		target   func(ns string) Target
		manifest string
		paused   func(*unstructured.Unstructured) bool
	}{
		{"an Argo CD Application loses automated sync", applicationGVK, func(ns string) Target { return Target{Resource: Application, Namespace: ns, Name: "payments"} }, application,
			func(u *unstructured.Unstructured) bool {
				_, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "syncPolicy", "automated")
				return !found
			}},
		{"a Flux Kustomization is suspended", kustomizationGVK, func(ns string) Target { return Target{Resource: Kustomization, Namespace: ns, Name: "payments"} }, kustomization,
			func(u *unstructured.Unstructured) bool {
				s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
				return s
			}},
		{"a Flux Kustomization with suspend: false keeps it", kustomizationGVK, func(ns string) Target { return Target{Resource: Kustomization, Namespace: ns, Name: "payments"} },
			strings.Replace(kustomization, "interval: 5m", "interval: 5m\n  suspend: false", 1),
			func(u *unstructured.Unstructured) bool {
				s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
				return s
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := env.Namespace(t, nil)
			before := env.Apply(t, "argocd-server", ns, cluster.Object(t, c.manifest))
			target := c.target(ns)

			ch, err := Suspend(t.Context(), env.Dynamic, target, suspendOpts())
			if err != nil {
				t.Fatal(err)
			}
			if len(ch.Fields) < 2 {
				t.Errorf("the change does not say what it changed: %+v", ch)
			}
			paused := env.Get(t, c.gvk, ns, "payments")
			if !c.paused(paused) {
				t.Fatalf("not paused: %s", specOf(t, paused))
			}
			want := map[string]string{AnnotationBy: "alice@example.com", AnnotationWhy: "INC-4211 payment certs", AnnotationSince: "2026-11-30T03:00:00Z", AnnotationUntil: "2026-11-30T05:00:00Z"}
			for k, v := range want {
				if got := paused.GetAnnotations()[k]; got != v {
					t.Errorf("annotation %s = %q, want %q", k, got, v)
				}
			}
			managers := map[string]bool{}
			for _, e := range paused.GetManagedFields() {
				managers[e.Manager] = true
			}
			if !managers[FieldManager] {
				t.Errorf("no managedFields entry for %s: %v", FieldManager, managers)
			}

			if _, err := Resume(t.Context(), env.Dynamic, target, ResumeOptions{}); err != nil {
				t.Fatal(err)
			}
			after := env.Get(t, c.gvk, ns, "payments")
			if diff := cmp.Diff(specOf(t, before), specOf(t, after)); diff != "" {
				t.Errorf("spec after resume (-before +after):\n%s", diff)
			}
			restored := after.GetAnnotations()
			if c.gvk.Kind != "Application" {
				// Resume asks Flux to reconcile now, as `flux resume` does.
				if v := restored[fluxRequestedAt]; v == "" || v == paused.GetAnnotations()[fluxRequestedAt] {
					t.Errorf("%s after resume = %q, want a new request (suspend's was %q)", fluxRequestedAt, v, paused.GetAnnotations()[fluxRequestedAt])
				}
				delete(restored, fluxRequestedAt)
				if len(restored) == 0 {
					restored = nil
				}
			}
			if diff := cmp.Diff(before.GetAnnotations(), restored); diff != "" {
				t.Errorf("annotations after resume (-before +after):\n%s", diff)
			}
		})
	}
}

func TestBreakglassRefusesWhatIsNotSanctioned(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, nil)
	env.Apply(t, "argocd-server", ns, cluster.Object(t, application))
	target := Target{Resource: Application, Namespace: ns, Name: "payments"}

	noReason := suspendOpts()
	noReason.Reason = ""
	tooLong := suspendOpts()
	tooLong.TTL = 24 * time.Hour
	for name, opts := range map[string]SuspendOptions{"no reason": noReason, "a TTL over the cap": tooLong} {
		if _, err := Suspend(t.Context(), env.Dynamic, target, opts); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: err = %v, want a refusal", name, err)
		}
	}
	if _, err := Resume(t.Context(), env.Dynamic, target, ResumeOptions{}); !errors.Is(err, ErrRefused) {
		t.Errorf("resume of an app not suspended: err = %v", err)
	}
	if _, err := Suspend(t.Context(), env.Dynamic, target, suspendOpts()); err != nil {
		t.Fatal(err)
	}
	if _, err := Suspend(t.Context(), env.Dynamic, target, suspendOpts()); !errors.Is(err, ErrRefused) {
		t.Errorf("second suspend: err = %v", err)
	}
	blocking := []string{`Deployment/payments/api .spec.template.spec.containers[name="app"].image: human (kubectl-edit)`}
	_, err := Resume(t.Context(), env.Dynamic, target, ResumeOptions{Blocking: blocking})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), blocking[0]) {
		t.Errorf("resume over unbackported drift: err = %v, want a refusal naming the finding", err)
	}
	if _, err := Resume(t.Context(), env.Dynamic, target, ResumeOptions{Blocking: blocking, Force: true}); err != nil {
		t.Errorf("resume --force: %v", err)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, nil)
	before := env.Apply(t, "argocd-server", ns, cluster.Object(t, application))
	opts := suspendOpts()
	opts.DryRun = true
	ch, err := Suspend(t.Context(), env.Dynamic, Target{Resource: Application, Namespace: ns, Name: "payments"}, opts)
	if err != nil || !ch.DryRun || !strings.Contains(string(ch.Patch), `"automated":null`) {
		t.Fatalf("dry run: %v %s", err, ch.Patch)
	}
	after := env.Get(t, applicationGVK, ns, "payments")
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("a dry run wrote the object")
	}
}

// racing runs before just ahead of every Patch, on the real API server.
type racing struct {
	dynamic.Interface
	before func()
}

func (r racing) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return racingResource{r.Interface.Resource(gvr), r.before}
}

type racingResource struct {
	dynamic.NamespaceableResourceInterface
	before func()
}

func (r racingResource) Namespace(ns string) dynamic.ResourceInterface {
	return racingNamespace{r.NamespaceableResourceInterface.Namespace(ns), r.before}
}

type racingNamespace struct {
	dynamic.ResourceInterface
	before func()
}

func (r racingNamespace) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	r.before()
	return r.ResourceInterface.Patch(ctx, name, pt, data, opts, sub...)
}

// A reconciler writes its object all the time (Argo CD its status, right
// after it self-heals): a change between breakglass's read and its write is
// retried from a fresh read, and what the other writer changed is kept.
func TestAConcurrentChangeIsRetriedFromAFreshRead(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, nil)
	env.Apply(t, "argocd-server", ns, cluster.Object(t, application))
	raced := false
	client := racing{Interface: env.Dynamic, before: func() {
		if !raced {
			raced = true
			env.Patch(t, "argocd-server", applicationGVK, ns, "payments", types.MergePatchType, `{"spec":{"source":{"targetRevision":"v2"}}}`)
		}
	}}
	if _, err := Suspend(t.Context(), client, Target{Resource: Application, Namespace: ns, Name: "payments"}, suspendOpts()); err != nil {
		t.Fatalf("suspend after one concurrent change: %v", err)
	}
	live := env.Get(t, applicationGVK, ns, "payments")
	if rev, _, _ := unstructured.NestedString(live.Object, "spec", "source", "targetRevision"); rev != "v2" || live.GetAnnotations()[AnnotationUntil] == "" {
		t.Errorf("after the retry: targetRevision %q (want the other writer's v2), until %q (want set)", rev, live.GetAnnotations()[AnnotationUntil])
	}
}

func TestAnObjectThatKeepsChangingMakesSuspendFailCleanly(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, nil)
	env.Apply(t, "argocd-server", ns, cluster.Object(t, application))
	n := 0
	client := racing{Interface: env.Dynamic, before: func() {
		n++
		env.Patch(t, "argocd-server", applicationGVK, ns, "payments", types.MergePatchType, fmt.Sprintf(`{"spec":{"source":{"targetRevision":"v%d"}}}`, n+1))
	}}
	_, err := Suspend(t.Context(), client, Target{Resource: Application, Namespace: ns, Name: "payments"}, suspendOpts())
	if err == nil || !strings.Contains(err.Error(), "changed while breakglass was writing it") {
		t.Fatalf("err = %v, want a clean conflict", err)
	}
	live := env.Get(t, applicationGVK, ns, "payments")
	if _, ok := live.GetAnnotations()[AnnotationUntil]; ok {
		t.Errorf("a failed suspend left its annotations")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(live.Object, "spec", "syncPolicy", "automated"); !found {
		t.Errorf("a failed suspend removed automated sync")
	}
}

func TestListReportsSuspensionsPastTheirDeadline(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, nil)
	env.Apply(t, "argocd-server", ns, cluster.Object(t, application))
	env.Apply(t, "flux", ns, cluster.Object(t, kustomization))
	if _, err := Suspend(t.Context(), env.Dynamic, Target{Resource: Application, Namespace: ns, Name: "payments"}, suspendOpts()); err != nil {
		t.Fatal(err)
	}
	got, err := List(t.Context(), env.Dynamic, ns, Application, Kustomization, HelmRelease)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].By != "alice@example.com" || got[0].Reason != "INC-4211 payment certs" {
		t.Fatalf("suspensions = %+v", got)
	}
	s := got[0]
	if s.Expired(t0.Add(time.Hour)) || s.Left(t0.Add(time.Hour)) != time.Hour {
		t.Errorf("an hour in: expired %v, left %s", s.Expired(t0.Add(time.Hour)), s.Left(t0.Add(time.Hour)))
	}
	if !s.Expired(t0.Add(3 * time.Hour)) {
		t.Errorf("three hours in, the 2h suspension is not expired")
	}
}

func TestASlowWebhookMakesSuspendTimeOutCleanly(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, map[string]string{"slow-webhook": "on"})
	env.Apply(t, "argocd-server", ns, cluster.Object(t, application))
	w := cluster.DefaultWebhook("slow-application-webhook")
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"slow-webhook": "on"}}
	w.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"argoproj.io"}, APIVersions: []string{"*"}, Resources: []string{"applications"}}}}
	w.Delay, w.TimeoutSeconds, w.NoProbe = 4*time.Second, 10, true
	env.ServeWebhook(t, w)

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := Suspend(ctx, env.Dynamic, Target{Resource: Application, Namespace: ns, Name: "payments"}, suspendOpts())
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("err = %v, want a timeout that says nothing was changed", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("suspend took %s with a 1s timeout", took)
	}
	time.Sleep(5 * time.Second) // past the webhook's delay: the aborted write must not land late
	if _, ok := env.Get(t, applicationGVK, ns, "payments").GetAnnotations()[AnnotationUntil]; ok {
		t.Errorf("the timed-out write landed after all")
	}
}

// asUser returns a dynamic client that acts as user, who may only list
// Applications in namespace ns.
func asUser(t *testing.T, user, ns string) dynamic.Interface {
	t.Helper()
	env.Create(t, "kubectl-create", ns, cluster.Object(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"read-apps"},
		"rules":[{"apiGroups":["argoproj.io"],"resources":["applications"],"verbs":["get","list"]}]}`))
	env.Create(t, "kubectl-create", ns, cluster.Object(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"read-apps"},
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"read-apps"},"subjects":[{"kind":"User","name":"`+user+`"}]}`))
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The RBAC authorizer learns of the new Role through an informer.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := client.Resource(Application).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err == nil {
			return client
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still may not list Applications in %s: %v", user, ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestListForAppsReadsOnlyWhereTheAppsLive is the regression test of the
// scan's breakglass check under the chart's rbac.scope: namespaces: it
// listed Applications, Kustomizations and HelmReleases cluster-wide, was
// forbidden, and failed the whole scan (exit 2). It now lists only in the
// apps' namespaces, and one it may not read is a warning.
func TestListForAppsReadsOnlyWhereTheAppsLive(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	allowed, denied := env.Namespace(t, nil), env.Namespace(t, nil)
	for _, ns := range []string{allowed, denied} {
		env.Apply(t, "argocd-server", ns, cluster.Object(t, application))
		if _, err := Suspend(t.Context(), env.Dynamic, Target{Resource: Application, Namespace: ns, Name: "payments"}, suspendOpts()); err != nil {
			t.Fatal(err)
		}
	}
	client := asUser(t, "scan-"+allowed, allowed)
	apps := []report.App{
		{Name: "payments", GitOps: &report.GitOps{Tool: "argocd", Object: "Application/" + allowed + "/payments"}},
		{Name: "payments-eu", GitOps: &report.GitOps{Tool: "argocd", Object: "Application/" + denied + "/payments"}},
		{Name: "plain"},
	}
	got, warnings, err := ListForApps(t.Context(), client, apps)
	if err != nil {
		t.Fatalf("ListForApps: %v, want no error (a namespace it may not read is a warning)", err)
	}
	if len(got) != 1 || got[0].Target.Namespace != allowed || got[0].Reason != "INC-4211 payment certs" {
		t.Errorf("suspensions %+v, want the one in %s", got, allowed)
	}
	want := []report.Warning{{Code: report.WarnBreakglassUnreadable, App: "payments-eu", Object: "Application/" + denied + "/payments",
		Message: "may not list applications.argoproj.io in namespace " + denied + ", so whether breakglass suspended this app is not known (grant get and list there; the chart does with rbac.namespaces)"}}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
