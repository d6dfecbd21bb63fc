package e2e

import (
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// bareService names neither targetPort nor protocol: kustomize-controller
// sends targetPort 0 and protocol TCP for it, and owns both.
const bareService = `apiVersion: v1
kind: Service
metadata:
  name: web-bare
spec:
  selector: {app: web}
  ports:
  - port: 8080
`

// What a clean sync by the real Flux looks like to driftscan: a plain folder
// (with a Service that leaves out what the server defaults) and a Kustomize
// overlay that kustomize-controller applied, and nobody touched, scan with
// zero findings although the controller applied, and owns, fields Git does
// not write (a Deployment's strategy, ports' protocol, a targetPort).
func TestFluxKustomizationSyncsScanClean(t *testing.T) {
	needFlux(t)
	plain := maps.Clone(plainApp)
	plain["web/bare-service.yaml"] = bareService
	for _, src := range []struct {
		source
		objects int
	}{
		{source{"plain", plain, "web"}, 4},
		{sources[1], 3},
	} {
		t.Run(src.Name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t, nil)
			repo := gitServer.NewRepo(t, src.Files)
			name := "clean-ks-" + src.Name
			createKustomization(t, ns, name, repo, src.Path)
			waitFluxReady(t, reconcilers.Kustomization, ns, name, repo.Head())
			checkClean(t, scan(t, "--from", "flux", "--app", name), src.objects)
			if src.Name == "plain" {
				checkFluxOwnsTargetPort(t, ns)
			}
		})
	}
}

// checkFluxOwnsTargetPort pins what the scan relies on: kustomize-controller
// sent the targetPort Git left out, owns it, and the server made it the port.
func checkFluxOwnsTargetPort(t *testing.T, ns string) {
	t.Helper()
	svc, err := env.Client.CoreV1().Services(ns).Get(t.Context(), "web-bare", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.Spec.Ports[0].TargetPort.IntValue(); got != 8080 {
		t.Errorf("live targetPort %d, want the port 8080", got)
	}
	for _, e := range svc.ManagedFields {
		if e.Manager == "kustomize-controller" && e.Operation == metav1.ManagedFieldsOperationApply {
			if owned := e.FieldsV1.GetRawString(); !strings.Contains(owned, `"f:targetPort"`) || !strings.Contains(owned, `"f:protocol"`) {
				t.Errorf("kustomize-controller does not own the port's targetPort and protocol: %s", owned)
			}
			return
		}
	}
	t.Errorf("no Apply entry of kustomize-controller on Service web-bare: %v", svc.ManagedFields)
}

// The same for a chart that helm-controller installed from a HelmRelease.
func TestFluxHelmReleaseSyncScansClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, helmApp)
	const name = "clean-hr"
	createHelmRelease(t, ns, name, repo, "chart")
	// A HelmRelease's lastAppliedRevision is the chart version.
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	checkClean(t, scan(t, "--from", "flux", "--app", name), 3)
	// What the scan saw, pinned (docs/verified.md): helm-controller (Helm
	// 4) applies server-side, and labels what it applied with its
	// HelmRelease as well as Helm's own label and annotations.
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), name+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := cm.ManagedFields; len(m) != 1 || m[0].Manager != "helm-controller" || m[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managedFields of the chart's ConfigMap: want one Apply by helm-controller, got %v", m)
	}
	if l := cm.Labels; l["helm.toolkit.fluxcd.io/name"] != name || l["helm.toolkit.fluxcd.io/namespace"] != ns || l["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("labels of the chart's ConfigMap: %v", l)
	}
}
