package backport

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/golden"
)

func TestHelmValueThatMapsOneToOneIsChangedAndTheRestSuggested(t *testing.T) {
	ns := env.Namespace(t, nil)
	root := worktree(t, "../fixtures/backport/helm/web", "charts/web")
	chart := filepath.Join(root, "charts", "web")
	app := config.App{Name: "web", Namespace: ns, Source: config.Source{
		Path: chart,
		Helm: &config.HelmSource{ReleaseName: "web", ValuesFiles: []string{"values-prod.yaml"}},
	}}
	sync(t, app)
	// The ConfigMap's level is config.logLevel; the image's tag is
	// image.tag behind "nginx:"; no value renders a new env var or the
	// grace period the template writes itself.
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
	env.Patch(t, "kubectl-patch", cluster.Deployment, ns, "web", types.MergePatchType,
		`{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":60}}}}`)

	res, err := Run(t.Context(), scanApp(t, app), options(root, app, "INC-4211 payment certs"))
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]string{}
	for _, c := range res.Changes {
		changes[strings.Replace(c.Field(), "/"+ns+"/", "/", 1)] = c.Via + " in " + c.WrittenTo
	}
	wantChanges := map[string]string{
		`ConfigMap/web-config .data.LOG_LEVEL`:                            "helm value config.logLevel in charts/web/values-prod.yaml",
		`Deployment/web .spec.template.spec.containers[name="app"].image`: "helm value image.tag in charts/web/values-prod.yaml",
	}
	if diff := cmp.Diff(wantChanges, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	wantSkipped := []string{
		`Deployment/web .spec.template.spec.containers[name="app"].env[name="DEBUG"]`,
		`Deployment/web .spec.template.spec.terminationGracePeriodSeconds`,
	}
	if diff := cmp.Diff(wantSkipped, fields(res.Skipped, ns)); diff != "" {
		t.Fatalf("skipped (-want +got):\n%s", diff)
	}
	for _, s := range res.Skipped {
		if !strings.Contains(s.Reason, "no chart value maps to this field one to one") || s.Suggestion != "charts/web/driftscan-hotfix-deployment-web.patch.yaml" {
			t.Errorf("%s: reason %q, suggestion %q", s.Field(), s.Reason, s.Suggestion)
		}
	}
	committed(t, root, res, "charts/web/driftscan-hotfix-deployment-web.patch.yaml", "charts/web/values-prod.yaml")
	golden.Check(t, "helm-values-prod.yaml", readFile(t, filepath.Join(chart, "values-prod.yaml")))
	suggested := strings.ReplaceAll(string(readFile(t, filepath.Join(chart, "driftscan-hotfix-deployment-web.patch.yaml"))), ns, "NAMESPACE")
	golden.Check(t, "helm-suggested.patch.yaml", []byte(suggested))
	if got, want := readFile(t, filepath.Join(chart, "values.yaml")), readFile(t, "../fixtures/backport/helm/web/values.yaml"); string(got) != string(want) {
		t.Errorf("values.yaml changed:\n%s", got)
	}
	var text strings.Builder
	if err := res.Write(&text, FormatText); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "suggested patch: charts/web/driftscan-hotfix-deployment-web.patch.yaml") {
		t.Errorf("the summary does not name the suggested patch:\n%s", text.String())
	}

	// Rendering the new commit: the two values carry the hotfix, the rest
	// is still drift.
	if diff := cmp.Diff(wantSkipped, unbackported(scanApp(t, app))); diff != "" {
		t.Errorf("drift after the backport (-want +got):\n%s", diff)
	}
}

// An Argo CD Application's valueFiles may be a glob (argocd-repo-server
// v3.5 expands it): the hotfix goes into the last file it matches, as into
// the last values file named outright.
func TestHelmValueIsWrittenToTheLastFileAGlobMatches(t *testing.T) {
	ns := env.Namespace(t, nil)
	root := worktree(t, "../fixtures/backport/helm/web", "charts/web")
	chart := filepath.Join(root, "charts", "web")
	app := config.App{Name: "web", Namespace: ns, Source: config.Source{
		Path: chart,
		Helm: &config.HelmSource{ReleaseName: "web", ValuesFiles: []string{"values-*.yaml"}, ArgoValueFiles: true},
	}}
	sync(t, app)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)

	res, err := Run(t.Context(), scanApp(t, app), options(root, app, "INC-4212 noisy logs"))
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, c := range res.Changes {
		changes = append(changes, strings.Replace(c.Field(), "/"+ns+"/", "/", 1)+": "+c.Via+" in "+c.WrittenTo)
	}
	want := []string{"ConfigMap/web-config .data.LOG_LEVEL: helm value config.logLevel in charts/web/values-prod.yaml"}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if got := string(readFile(t, filepath.Join(chart, "values-prod.yaml"))); !strings.Contains(got, "logLevel: debug") {
		t.Errorf("values-prod.yaml does not carry the hotfix:\n%s", got)
	}
}
