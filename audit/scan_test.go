package audit_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

const imagePath = `.spec.template.spec.containers[name="app"].image`

func setImage(image string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = image
		_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers")
	}
}

// who is an attribution reduced to what these tests assert.
type who struct {
	Confidence     report.Confidence
	User           string
	ServiceAccount string
	FieldManager   string
	Subresource    string
	AuditID        string
	Requester      bool
}

func whoOf(a *report.Attribution) who {
	if a == nil {
		return who{}
	}
	return who{a.Confidence, a.User, a.ServiceAccount, a.FieldManager, a.Subresource, a.AuditID, a.Requester}
}

func TestAHumanEditNamesThePerson(t *testing.T) {
	env.Need(t)
	a := newApp(t, nil, fmt.Sprintf(deployment, "web", "web", "web", "web"))
	u := as(t, alice)
	u.Update(t, "kubectl-edit", cluster.Deployment, a.ns, "web", setImage("nginx:1.26"))
	id := u.LastAuditID(t)
	env.AuditLog.Wait(t, id)

	f := finding(t, a.scan(nil), "Deployment", "web", imagePath)
	want := who{Confidence: report.ConfidenceExact, User: "alice@example.com", FieldManager: "kubectl-edit", AuditID: id}
	if diff := cmp.Diff(want, whoOf(f.Attribution)); diff != "" {
		t.Errorf("attribution (-want +got):\n%s", diff)
	}
	if f.Class != report.ClassHuman {
		t.Errorf("class = %s, want human", f.Class)
	}
	if got := f.By(); got != "kubectl-edit by alice@example.com" {
		t.Errorf("By() = %q, want the manager and the person", got)
	}
	if !slices.Contains(f.Attribution.Groups, "sre") || f.Attribution.ImpersonatedBy == "" || f.Attribution.Verb != "update" {
		t.Errorf("attribution lacks the groups, the impersonating user or the verb: %+v", f.Attribution)
	}
}

func TestAPipelineAndAPersonRunningSetImageAreToldApart(t *testing.T) {
	env.Need(t)
	a := newApp(t, nil, fmt.Sprintf(deployment, "api", "api", "api", "api")+"---\n"+fmt.Sprintf(deployment, "admin", "admin", "admin", "admin"))
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}}}`
	ci := as(t, deployer)
	ci.Patch(t, "kubectl-set", cluster.Deployment, a.ns, "api", types.StrategicMergePatchType, patch)
	person := as(t, alice)
	person.Patch(t, "kubectl-set", cluster.Deployment, a.ns, "admin", types.StrategicMergePatchType, patch)
	env.AuditLog.Wait(t, ci.LastAuditID(t), person.LastAuditID(t))

	// The field manager alone cannot tell them apart.
	r := a.scan(nil)
	for _, name := range []string{"api", "admin"} {
		if f := finding(t, r, "Deployment", name, imagePath); f.Class != report.ClassPipeline {
			t.Errorf("without user rules, %s's kubectl-set is %s, want pipeline by its manager", name, f.Class)
		}
	}

	r = a.scan(func(cfg *config.Config, _ *scanner.Options) {
		cfg.Rules = []classify.Rule{
			{Users: []string{"system:serviceaccount:ci:*"}, Class: report.ClassPipeline},
			{Groups: []string{"sre"}, Class: report.ClassHuman},
		}
	})
	api, admin := finding(t, r, "Deployment", "api", imagePath), finding(t, r, "Deployment", "admin", imagePath)
	if api.Class != report.ClassPipeline || admin.Class != report.ClassHuman {
		t.Errorf("classes = %s (CI service account) and %s (alice), want pipeline and human", api.Class, admin.Class)
	}
	if got := api.Attribution.ServiceAccount; got != "ci/deployer" {
		t.Errorf("serviceAccount = %q, want ci/deployer", got)
	}
}

func TestARemovedLabelNamesWhoRemovedIt(t *testing.T) {
	env.Need(t)
	a := newApp(t, nil, fmt.Sprintf(deployment, "cart", "cart", "cart", "cart"))
	u := as(t, alice)
	u.Patch(t, "kubectl-label", cluster.Deployment, a.ns, "cart", types.StrategicMergePatchType, `{"metadata":{"labels":{"team":null}}}`)
	env.AuditLog.Wait(t, u.LastAuditID(t))

	// managedFields keep no trace of a removal.
	without := finding(t, a.scan(func(_ *config.Config, o *scanner.Options) { o.AuditLogs = nil }), "Deployment", "cart", ".metadata.labels.team")
	if without.Manager != "" || without.Attribution != nil {
		t.Fatalf("without the audit log the removal has manager %q, attribution %+v: want neither", without.Manager, without.Attribution)
	}

	f := finding(t, a.scan(nil), "Deployment", "cart", ".metadata.labels.team")
	want := who{Confidence: report.ConfidenceExact, User: "alice@example.com", FieldManager: "kubectl-label", AuditID: u.LastAuditID(t)}
	if diff := cmp.Diff(want, whoOf(f.Attribution)); diff != "" {
		t.Errorf("attribution (-want +got):\n%s", diff)
	}
	if f.Type != report.TypeRemoved || f.Manager != "kubectl-label" || f.Class != report.ClassHuman {
		t.Errorf("finding = %s by %q class %s, want Removed by kubectl-label, human", f.Type, f.Manager, f.Class)
	}
}

func TestAScaleThroughTheSubresourceNamesTheAutoscaler(t *testing.T) {
	env.Need(t)
	a := newApp(t, nil, fmt.Sprintf(deployment, "front", "front", "front", "front"))
	u := as(t, hpa)
	// No fieldManager: the API server takes it from the user agent.
	u.Patch(t, "", cluster.Deployment, a.ns, "front", types.MergePatchType, `{"spec":{"replicas":5}}`, "scale")
	env.AuditLog.Wait(t, u.LastAuditID(t))

	f := finding(t, a.scan(nil), "Deployment", "front", ".spec.replicas")
	want := who{Confidence: report.ConfidenceExact, User: hpa.Name, ServiceAccount: "kube-system/horizontal-pod-autoscaler",
		FieldManager: "kube-controller-manager", Subresource: "scale", AuditID: u.LastAuditID(t)}
	if diff := cmp.Diff(want, whoOf(f.Attribution)); diff != "" {
		t.Errorf("attribution (-want +got):\n%s\nreason: %s", diff, f.Attribution.Reason)
	}
	// The scale handler leaves the entry without a time: the request's
	// body is what singles it out.
	if !strings.Contains(f.Attribution.Reason, "no time") {
		t.Errorf("reason %q does not say the entry has no time", f.Attribution.Reason)
	}
	if f.Manager != "kube-controller-manager" || f.Class != report.ClassOperator {
		t.Errorf("finding by %q class %s, want kube-controller-manager, operator", f.Manager, f.Class)
	}
}

func TestAWebhookInjectionNamesOnlyTheRequester(t *testing.T) {
	env.Need(t)
	hook := cluster.DefaultWebhook("audit-sidecar")
	hook.NamespaceSelector.MatchLabels = map[string]string{"audit-injection": "enabled"}
	env.ServeWebhook(t, hook)
	a := newApp(t, map[string]string{"audit-injection": "enabled"}, fmt.Sprintf(deployment, "mesh", "mesh", "mesh", "mesh"))

	r := a.scan(nil)
	for _, path := range []string{`.spec.template.spec.containers[name="istio-proxy"]`, ".metadata.annotations.sidecar.istio.io/status"} {
		f := finding(t, r, "Deployment", "mesh", path)
		if f.Class != report.ClassWebhook {
			t.Errorf("%s: class %s, want webhook", path, f.Class)
		}
		got := whoOf(f.Attribution)
		if got.Confidence != report.ConfidenceExact || got.User != argocd.Name || !got.Requester {
			t.Errorf("%s: attribution %+v, want Argo CD's service account as the requester, exact", path, f.Attribution)
		}
		if !strings.Contains(f.Attribution.Reason, "audit-sidecar") || !strings.Contains(f.Attribution.Reason, "only sent the request") {
			t.Errorf("%s: reason %q does not name the webhook and say the user only sent the request", path, f.Attribution.Reason)
		}
		if by := f.By(); !strings.Contains(by, "requested by "+argocd.Name) {
			t.Errorf("%s: By() = %q, want it to say who requested", path, by)
		}
	}
}

func TestTwoUsersInTheSameSecondAreBothCandidates(t *testing.T) {
	env.Need(t)
	for attempt := 1; ; attempt++ {
		name := fmt.Sprintf("shared%d", attempt)
		a := newApp(t, nil, fmt.Sprintf(deployment, name, name, name, name))
		ua, ub := as(t, alice), as(t, bob)
		waitForSecondStart()
		ua.Update(t, "kubectl-edit", cluster.Deployment, a.ns, name, setImage("nginx:1.26"))
		ub.Update(t, "kubectl-edit", cluster.Deployment, a.ns, name, setImage("nginx:1.27"))
		env.AuditLog.Wait(t, ua.LastAuditID(t), ub.LastAuditID(t))

		f := finding(t, a.scan(nil), "Deployment", name, imagePath)
		if f.Attribution.Confidence == report.ConfidenceExact && attempt < 3 {
			// The second write slipped into the next second: try again.
			continue
		}
		if f.Attribution.Confidence != report.ConfidenceCandidate {
			t.Fatalf("attribution %+v, want candidates", f.Attribution)
		}
		var got []who
		for _, c := range f.Attribution.Candidates {
			got = append(got, who{Confidence: c.Confidence, User: c.User, FieldManager: c.FieldManager, AuditID: c.AuditID})
		}
		want := []who{
			{Confidence: report.ConfidenceCandidate, User: "alice@example.com", FieldManager: "kubectl-edit", AuditID: ua.LastAuditID(t)},
			{Confidence: report.ConfidenceCandidate, User: "bob@example.com", FieldManager: "kubectl-edit", AuditID: ub.LastAuditID(t)},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("candidates (-want +got):\n%s", diff)
		}
		if by := f.By(); by != "kubectl-edit by alice@example.com or bob@example.com (candidates)" {
			t.Errorf("By() = %q", by)
		}
		return
	}
}
