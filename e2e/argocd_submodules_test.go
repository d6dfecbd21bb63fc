package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// argocd-repo-server checks a repository's submodules out by default
// (`git submodule update --init --recursive`): the real Argo CD syncs a
// kustomization that reaches into one, at the commit the repository
// records, and driftscan, which takes the same default, scans clean.
func TestArgoCDSubmodulesScanClean(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	app := withSubmodule(t)
	const name = "argo-with-lib"
	createGitApp(t, name, ns, app.URL, "apps", "")
	waitArgoSynced(t, name, app.Head())
	waitReverted(t, ns, "info", 2*time.Minute)
	checkClean(t, scan(t, "--from", "argocd", "--app", name), 2)
}

// withSubmodule is a repository whose apps/ kustomization reaches into a
// submodule at vendor/lib (web-config, LOG_LEVEL info, at the commit it
// records; the submodule's newer commit has another level) and adds
// apps/service.yaml.
func withSubmodule(t *testing.T) *reconcilers.Repo {
	t.Helper()
	lib := gitServer.NewRepo(t, map[string]string{
		"base/kustomization.yaml": "resources: [config.yaml]\n",
		"base/config.yaml":        configMap,
	}, map[string]string{"base/config.yaml": strings.Replace(configMap, "LOG_LEVEL: info", "LOG_LEVEL: newer-not-recorded", 1)})
	return gitServer.NewRepo(t, map[string]string{
		".gitmodules":             "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = " + lib.URL + "\n",
		"vendor/lib":              gitrepo.Gitlink(lib.Commits[0]),
		"apps/kustomization.yaml": "resources: [../vendor/lib/base, service.yaml]\n",
		"apps/service.yaml":       service,
	})
}
