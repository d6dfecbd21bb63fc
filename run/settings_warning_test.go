package run

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/discover"
	"github.com/calricon/driftscan/report"
)

// A scan whose identity may not read argocd-cm still scans the Application,
// and its report warns that Argo CD's settings were not read: ignore rules
// kept there would otherwise go missing without a word, and fields Argo CD
// ignores would show as drift nobody can explain.
func TestAnUnreadableArgoCDSettingsIsAWarningOfTheScan(t *testing.T) {
	env.Need(t)
	_, argoNS := argoApp(t)
	read := []string{"get", "list"}
	opts := DefaultOptions()
	opts.Scan.RESTConfig = env.BindUser(t, "scan-without-configmaps-"+argoNS,
		rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications", "appprojects"}, Verbs: read},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: read},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: read})
	opts.Scan.GitCacheDir = t.TempDir()
	dopts := discover.DefaultOptions()
	dopts.Namespace = argoNS
	opts.Discover = &Discover{Options: dopts}
	res, err := Scan(t.Context(), config.New(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Apps) != 1 || res.Report.Apps[0].Name != "web" {
		t.Fatalf("apps = %+v, want web scanned without argocd-cm", res.Report.Apps)
	}
	i := slices.IndexFunc(res.Report.Warnings, func(w report.Warning) bool {
		return w.Code == report.WarnReconcilerSettingsUnreadable && w.Object == "ConfigMap/"+argoNS+"/argocd-cm"
	})
	if i < 0 {
		t.Fatalf("warnings %+v, want argocd-cm unreadable", res.Report.Warnings)
	}
	if msg := res.Report.Warnings[i].Message; !strings.Contains(msg, "forbidden") || !strings.Contains(msg, "may show as drift") {
		t.Errorf("warning %q does not say why argocd-cm was not read and what it costs", msg)
	}
}
