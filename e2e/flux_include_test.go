package e2e

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// A GitRepository that includes another (spec.include: a platform
// repository taking shared manifests from a repository of their own, as
// Flux documents it): the real source-controller copies the included
// artifact (what its own ignore rules leave out left out) into the
// including one, and kustomize-controller builds from both. driftscan
// composes the same tree and scans clean; when the shared repository moves
// on, the platform's next artifact holds the new commit and so does the
// scan; a person's edit of an included object is drift. It was an app
// error before ("the included repositories' files are missing").
func TestFluxGitRepositoryIncludeScansClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	shared := gitServer.NewRepo(t, map[string]string{
		"deploy/base/config.yaml": configMap,
		"deploy/base/draft.yaml":  strings.Replace(configMap, "web-config", "web-draft", 1),
		"README.md":               "# shared manifests\n",
	})
	// No kustomization.yaml: kustomize-controller generates one of every
	// manifest under the path, the included ones too.
	platform := gitServer.NewRepo(t, map[string]string{"clusters/prod/service.yaml": service})
	createFluxSource(t, ns, "shared", shared, "ignore: |\n  draft.yaml\n")
	createFluxSource(t, ns, "platform", platform, "include:\n- repository: {name: shared}\n  fromPath: deploy\n  toPath: clusters/prod/shared\n")
	createKustomizationOf(t, ns, "platform", "clusters/prod", fluxInterval)
	waitFluxReady(t, reconcilers.Kustomization, ns, "platform", platform.Head())
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "web-draft", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap web-draft: %v: the test expects Flux to leave out what the included repository ignores", err)
	}
	waitReverted(t, ns, "info", 2*time.Minute) // the included ConfigMap is applied
	checkClean(t, scan(t, "--from", "flux", "--app", "platform"), 2)

	shared.Commit(t, "warn", map[string]string{"deploy/base/config.yaml": strings.Replace(configMap, "LOG_LEVEL: info", "LOG_LEVEL: warn", 1)})
	waitReverted(t, ns, "warn", 2*time.Minute)
	checkClean(t, scan(t, "--from", "flux", "--app", "platform"), 2)

	setFluxSuspend(t, ns, "platform", true)
	humanEdit(t, ns, "debug")
	got := activeFindings(scan(t, "--from", "flux", "--app", "platform"))
	if len(got) != 1 || got[0].Path != ".data.LOG_LEVEL" || got[0].Git != "warn" || got[0].Live != "debug" || got[0].Class != report.ClassHuman {
		t.Errorf("want one human finding LOG_LEVEL warn -> debug in the included ConfigMap, got:\n%s", describe(got))
	}
}

// A GitRepository with recurseSubmodules: the real source-controller
// checks the submodule out at the commit the repository records (not the
// submodule's newest), and kustomize-controller builds a kustomization
// that reaches into it. driftscan checks out the same and scans clean; it
// was an app error before ("driftscan does not check out submodules").
func TestFluxGitRepositorySubmodulesScanClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	app := withSubmodule(t)
	createFluxSource(t, ns, "with-lib", app, "recurseSubmodules: true\n")
	createKustomizationOf(t, ns, "with-lib", "apps", fluxInterval)
	waitFluxReady(t, reconcilers.Kustomization, ns, "with-lib", app.Head())
	waitReverted(t, ns, "info", 2*time.Minute) // the recorded commit's ConfigMap
	checkClean(t, scan(t, "--from", "flux", "--app", "with-lib"), 2)
}
