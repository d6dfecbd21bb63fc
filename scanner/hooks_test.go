package scanner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// hookFolder is an app as real repositories write it for Argo CD: a
// ConfigMap, a PreSync migration Job with a fixed name that Argo CD deletes
// once it succeeded, a helm.sh/hook Secret from a `helm template` output
// committed as plain YAML, and an object Argo CD is told never to apply.
func hookFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {k: v}\n",
		"migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: db-migrate
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/hook-delete-policy: HookSucceeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "migrate:1.0"}]
`,
		"test-connection.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-test-connection
  annotations: {helm.sh/hook: test}
data: {url: "http://web:80"}
`,
		"skip.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-example
  annotations: {argocd.argoproj.io/hook: Skip}
data: {example: "true"}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestHooksWithAFixedNameAreNotComparedForArgoCD: Argo CD runs a hook at
// its phase of the sync and deletes it by its delete policy, and never
// applies an object annotated Skip; none of them counts towards the sync
// status (gitops-engine's hook.IsHook and hook.Skip). They were reported
// Missing after every clean sync, and paged. They are skipped with a
// warning each, and the app is in sync.
func TestHooksWithAFixedNameAreNotComparedForArgoCD(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir := hookFolder(t)
	// After a clean sync: the ConfigMap applied; the hook ran and was
	// deleted, the Skip object never applied.
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"},"data":{"k":"v"}}`))

	r := runScan(t, scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: dir}}))
	if diff := cmp.Diff(map[string]report.Status{"ConfigMap/web": report.StatusInSync}, statuses(r)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	want := []report.Warning{
		{Code: report.WarnHookSkipped, App: "web", Object: "ConfigMap/" + ns + "/web-example",
			Message: "ConfigMap/" + ns + "/web-example (skip.yaml line 1) is a hook, so it is not compared: argocd.argoproj.io/hook: Skip: Argo CD never applies it"},
		{Code: report.WarnHookSkipped, App: "web", Object: "ConfigMap/" + ns + "/web-test-connection",
			Message: "ConfigMap/" + ns + "/web-test-connection (test-connection.yaml line 1) is a hook, so it is not compared: helm.sh/hook: test: Argo CD runs it as a sync hook and does not count it towards the app's sync status"},
		{Code: report.WarnHookSkipped, App: "web", Object: "Job/" + ns + "/db-migrate",
			Message: "Job/" + ns + "/db-migrate (migrate.yaml line 1) is a hook, so it is not compared: argocd.argoproj.io/hook: PreSync: Argo CD runs it during a sync and does not count it towards the app's sync status"},
	}
	if diff := cmp.Diff(want, r.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if r.ExitCode(nil) != report.ExitOK {
		t.Errorf("exit %d, want 0: a hook is not drift", r.ExitCode(nil))
	}
}

// TestHooksAreComparedForFlux: kustomize-controller applies every object of
// a Kustomization, Argo CD's annotations mean nothing to it, so a hook that
// is not live is Missing for a Flux app.
func TestHooksAreComparedForFlux(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir := hookFolder(t)
	env.Apply(t, "kustomize-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"},"data":{"k":"v"}}`))

	app := config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: dir}, Appliers: []string{"kustomize-controller"},
		GitOps: &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/web"}}
	r := runScan(t, scanConfig(ns, app))
	want := map[string]report.Status{
		"ConfigMap/web": report.StatusInSync, "Job/db-migrate": report.StatusMissing,
		"ConfigMap/web-test-connection": report.StatusMissing, "ConfigMap/web-example": report.StatusMissing,
	}
	if diff := cmp.Diff(want, statuses(r)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}
