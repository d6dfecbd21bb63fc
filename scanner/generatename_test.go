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

const migrationHook = `apiVersion: batch/v1
kind: Job
metadata:
  generateName: db-migrate-
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "migrate:1.0"}]
`

// TestAGenerateNameObjectIsSkippedWithANotice: an Argo CD hook declared by
// generateName gets a new name from the API server at every sync, so no
// live object ever has the name Git gives. It was reported Missing on every
// run (and so paged, as drift nobody sanctioned). It is now skipped, with a
// warning that names it, and the app is in sync.
func TestAGenerateNameObjectIsSkippedWithANotice(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"hook.yaml":      migrationHook,
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {k: v}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// As Argo CD syncs it: the ConfigMap applied, the hook created (and
	// named by the API server).
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"},"data":{"k":"v"}}`))
	env.Create(t, "argocd-controller", ns, cluster.Object(t, migrationHook))

	r := runScan(t, scanConfig(ns, config.App{Name: "web", Owner: "team-web", Source: config.Source{Path: dir}}))
	if diff := cmp.Diff(map[string]report.Status{"ConfigMap/web": report.StatusInSync}, statuses(r)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	want := []report.Warning{{Code: report.WarnGenerateNameSkipped, App: "web", Object: "Job/" + ns + "/db-migrate-*",
		Message: "Job/" + ns + "/db-migrate-* (hook.yaml line 1) has metadata.generateName and no name: the API server names each copy it creates, so it is not compared"}}
	if diff := cmp.Diff(want, r.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if r.ExitCode(nil) != report.ExitOK {
		t.Errorf("exit %d, want 0: a hook is not drift", r.ExitCode(nil))
	}
}
