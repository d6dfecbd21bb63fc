package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// Gitless GitOps: CI pushes the manifests as an OCI artifact (`flux push
// artifact`: Flux's media types, a gzip tarball) to a registry, and a
// Kustomization applies it from an OCIRepository. The real source-controller
// pulls it (the newest tag of a semver range, its .sourceignore applied,
// its symbolic link skipped) and kustomize-controller applies it; driftscan
// reads the same artifact at the digest applied and scans clean. When a
// newer artifact is pulled but not applied (the Kustomization suspended),
// it is pending sync, not drift; a person's edit is drift.
func TestFluxOCIRepositoryKustomizationScans(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	reg := reconcilers.StartRegistry(t, reconcilers.RegistryOptions{})
	files := map[string]string{
		"web/config.yaml":               configMap,
		"web/service.yaml":              service,
		"web/drafts/next.yaml":          strings.Replace(configMap, "web-config", "web-draft", 1),
		"web/extra.json":                `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}}`,
		"web/alias.yaml -> config.yaml": "",
		".sourceignore":                 "drafts/\n",
	}
	push := func(tag string) string {
		return reconcilers.PushArtifact(t, reg, "manifests/web", tag, reconcilers.FluxArtifact(files, "https://git.example.com/web.git", "main@sha1:"+strings.Repeat("1", 40)))
	}
	v1 := push("v1.0.0")
	const app = "oci-web"
	createFluxObject(t, reconcilers.OCIRepository, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  insecure: true
  url: oci://%s/manifests/web
  ref: {semver: ">=1.0.0"}
`, app, ns, fluxInterval, reg.Host))
	createFluxObject(t, reconcilers.Kustomization, fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  path: ./web
  prune: true
  targetNamespace: %s
  sourceRef: {kind: OCIRepository, name: %s}
`, app, ns, fluxInterval, ns, app))
	waitFluxReady(t, reconcilers.Kustomization, ns, app, v1)
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "web-draft", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap web-draft: %v: the test expects Flux to leave the ignored draft out", err)
	}

	r := scan(t, "--from", "flux", "--app", app)
	checkClean(t, r, 2)
	if len(r.Apps) == 1 {
		if s := r.Apps[0].Source; s.Version != "v1.0.0@"+v1 || !strings.HasPrefix(s.Repo, "oci://") {
			t.Errorf("the report's source %+v: want the artifact v1.0.0@%s", s, v1)
		}
	}

	setFluxSuspend(t, ns, app, true)
	files["web/config.yaml"] = strings.Replace(configMap, "LOG_LEVEL: info", "LOG_LEVEL: warn", 1)
	v2 := push("v1.1.0")
	waitSourceArtifact(t, reconcilers.OCIRepository, ns, app, v2)
	humanEdit(t, ns, "debug")

	r = scan(t, "--from", "flux", "--app", app)
	got := activeFindings(r)
	if len(got) != 1 || got[0].Path != ".data.LOG_LEVEL" || got[0].Git != "info" || got[0].Live != "debug" || got[0].Class != report.ClassHuman {
		t.Errorf("want one human finding LOG_LEVEL info -> debug against the artifact applied, got:\n%s", describe(got))
	}
	if len(r.Apps) == 1 {
		want := &report.Pending{Synced: "v1.0.0@" + v1, Target: "v1.1.0@" + v2, Objects: []report.PendingObject{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web-config", Change: report.PendingChanged, Paths: []string{".data.LOG_LEVEL"}},
		}}
		if d := cmp.Diff(want, r.Apps[0].Pending); d != "" {
			t.Errorf("pending (-want +got):\n%s", d)
		}
	}
}
