package scanner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// reader is a user, bound cluster-wide, that may get and list the app's
// kinds plus what extra names.
func reader(t *testing.T, name string, extra ...rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	return user(t, name, append([]rbacv1.PolicyRule{
		{APIGroups: []string{"", "apps"}, Resources: []string{"deployments", "configmaps", "secrets", "services"}, Verbs: []string{"get", "list"}},
	}, extra...)...)
}

// user is a user, bound cluster-wide, that may do what rules say.
func user(t *testing.T, name string, rules ...rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	return env.BindUser(t, name, rules...)
}

// codes lists each warning as app/code.
func codes(r *report.Report) []string {
	var out []string
	for _, w := range r.Warnings {
		out = append(out, w.App+"/"+string(w.Code))
	}
	return out
}

func TestWhatTheScanCouldNotReadIsAWarning(t *testing.T) {
	env.ServeWebhook(t, cluster.DefaultWebhook("injector-"+strings.ToLower(t.Name()[len(t.Name())-8:])))
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	namespaces := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}}
	webhooks := rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, Verbs: []string{"list"}}
	autoscalers := rbacv1.PolicyRule{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"list"}}
	as := func(cfg *rest.Config) func(*Options) { return func(o *Options) { o.RESTConfig = cfg } }

	t.Run("a reader with every right it needs gets no warning", func(t *testing.T) {
		r := runScan(t, webApp(ns), as(reader(t, "full-"+ns, namespaces, webhooks, autoscalers)))
		if len(r.Warnings) != 0 || r.Summary.Warnings != 0 {
			t.Errorf("warnings = %+v", r.Warnings)
		}
	})

	t.Run("webhooks and autoscalers RBAC forbids to list", func(t *testing.T) {
		r := runScan(t, webApp(ns), as(reader(t, "nowebhooks-"+ns, namespaces)))
		if diff := cmp.Diff([]string{"/WebhooksUnreadable", "web/AutoscalersUnreadable"}, codes(r)); diff != "" {
			t.Fatalf("warnings (-want +got):\n%s\n%+v", diff, r.Warnings)
		}
		if m := r.Warnings[0].Message; !strings.Contains(m, "mutatingwebhookconfigurations") || !strings.Contains(m, "forbidden") {
			t.Errorf("the webhook warning does not say what RBAC forbids: %q", m)
		}
		if m := r.Warnings[1].Message; !strings.Contains(m, "HorizontalPodAutoscaler in namespace "+ns) {
			t.Errorf("the autoscaler warning does not name the kind and namespace: %q", m)
		}
		// A degraded scan is not an error, and fails only when asked to.
		if r.Summary.Warnings != 2 || r.HasErrors() || r.Summary.Findings != 0 {
			t.Errorf("summary = %+v", r.Summary)
		}
		if got := r.ExitCode(nil); got != report.ExitOK {
			t.Errorf("exit code %d by default, want %d", got, report.ExitOK)
		}
		if got := r.ExitCodeFor(report.FailOn{Warnings: true}); got != report.ExitDrift {
			t.Errorf("exit code %d with --fail-on all,warning, want %d", got, report.ExitDrift)
		}
	})

	t.Run("namespace labels, when a webhook selects namespaces by label", func(t *testing.T) {
		r := runScan(t, webApp(ns), as(reader(t, "nonamespaces-"+ns, webhooks, autoscalers)))
		if diff := cmp.Diff([]string{"web/NamespaceUnreadable"}, codes(r)); diff != "" {
			t.Fatalf("warnings (-want +got):\n%s\n%+v", diff, r.Warnings)
		}
		if m := r.Warnings[0].Message; !strings.Contains(m, "namespace "+ns) || !strings.Contains(m, "forbidden") {
			t.Errorf("the namespace warning does not name the namespace and why: %q", m)
		}
	})
}
