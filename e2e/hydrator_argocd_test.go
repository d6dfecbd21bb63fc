package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// An Application with a source hydrator syncs what the hydrator wrote to
// its sync branch and path (plain manifests), not its dry source: Argo CD
// v3.5.7 compares and syncs the sync source (spec.GetSources) whether its
// hydrator runs or not (here it does not: the branch is written as the
// hydrator writes it). The scan compares the same, and sees a person's
// edit; it said the Application had no source.
func TestArgoCDSourceHydratorSyncsTheHydratedBranch(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	// The dry source on main; on env/prod, its manifests as the hydrator
	// leaves them: one manifest.yaml, a README and hydrator.metadata.
	repo := gitServer.NewRepo(t, plainApp)
	checkout := repo.Clone(t)
	reconcilers.Git(t, checkout, "checkout", "--quiet", "--orphan", "env/prod")
	reconcilers.Git(t, checkout, "rm", "-r", "--quiet", "--force", ".")
	writeFiles(t, filepath.Join(checkout, "prod", "web"), map[string]string{
		"manifest.yaml":     strings.Join([]string{configMap, deployment, service}, "\n---\n"),
		"README.md":         "# Manifest Hydration\n",
		"hydrator.metadata": `{"repoURL": "` + repo.URL + `", "drySha": "` + repo.Head() + `"}`,
	})
	reconcilers.Git(t, checkout, "add", ".")
	reconcilers.Git(t, checkout, "commit", "--quiet", "-m", "hydrate")
	reconcilers.Git(t, checkout, "push", "--quiet", "origin", "env/prod")
	hydrated := strings.TrimSpace(reconcilers.Git(t, checkout, "rev-parse", "HEAD"))

	const name = "hydrated"
	createArgoManifest(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: `+name+`, namespace: `+argo.Namespace+`}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: `+ns+`}
  sourceHydrator:
    drySource: {repoURL: `+repo.URL+`, targetRevision: main, path: web}
    syncSource: {targetBranch: env/prod, path: prod/web}
  syncPolicy:
    automated: {prune: true}
`)
	waitArgoSynced(t, name, hydrated)
	r := scan(t, "--from", "argocd", "--app", name)
	checkClean(t, r, 3)

	humanEdit(t, ns, "debug")
	r = scanExiting(t, 1, "--from", "argocd", "--app", name)
	var edit finding
	for _, f := range activeFindings(r) {
		if f.Object == "ConfigMap/web-config" && f.Path == ".data.LOG_LEVEL" {
			edit = f
		}
	}
	if edit.Class != report.ClassHuman || !strings.Contains(edit.Git, "info") || !strings.Contains(edit.Live, "debug") {
		t.Errorf("the edit's finding %+v: want a person's, Git's info (the hydrated branch's) against live debug", edit)
	}
}
