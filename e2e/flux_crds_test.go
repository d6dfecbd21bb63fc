package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdChart is a chart whose crds/ folder holds a CRD of group (its printer
// column named by column) and a ConfigMap, as some public charts misplace
// one there.
func crdChart(group, version, column string) map[string]string {
	return map[string]string{
		"chart/Chart.yaml":            "apiVersion: v2\nname: gadgets\nversion: " + version + "\n",
		"chart/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gadgets-config}\ndata: {level: info}\n",
		"chart/crds/gadgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.` + group + `}
spec:
  group: ` + group + `
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: ` + column + `, type: string, jsonPath: .spec.` + column + `}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`,
		"chart/crds/defaults.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gadgets-defaults}\ndata: {size: small}\n",
	}
}

// createCRDRelease creates a HelmRelease of the chart at chart/ of the
// source named name, with drift detection on; install and upgrade are
// more of spec.install and spec.upgrade.
func createCRDRelease(t *testing.T, ns, name, install, upgrade string) {
	t.Helper()
	createHelmReleaseOf(t, helmRelease{Namespace: ns, Name: name,
		Chart:   []string{"chart: ./chart", "sourceRef: {kind: GitRepository, name: " + name + "}", "reconcileStrategy: Revision"},
		Install: install, Upgrade: upgrade, Spec: []string{"driftDetection: {mode: enabled}"}})
}

// What the real helm-controller does with a chart's crds/ folder: it
// applies the CustomResourceDefinitions there at install and at each
// upgrade (policy Create, the default, applies with server-side apply, so
// an existing CRD is updated too) and nothing else there (a ConfigMap a
// chart misplaced in crds/ is never created); its drift detection compares
// the release's manifest, which holds no crds/, so a person's edit of such
// a CRD stays until the next upgrade. With install.crds and upgrade.crds
// Skip it never applies them. driftscan must report the misplaced
// ConfigMap as never applied (not Missing), leave the CRDs of a release
// that skips them out, and say of an edit of a CRD that drift detection
// leaves it, not that the next reconcile reverts it.
func TestFluxHelmReleaseCRDs(t *testing.T) {
	needFlux(t)
	const group, skipped, csa = "crdpolicy.driftscan.test", "skipped.driftscan.test", "csa.driftscan.test"
	t.Cleanup(func() {
		for _, g := range []string{group, skipped, csa} {
			_ = env.Dynamic.Resource(crdsGVR).Delete(context.Background(), "gadgets."+g, metav1.DeleteOptions{})
		}
	})
	ns := env.Namespace(t, nil)
	columnOf := func(group string) string {
		t.Helper()
		crd, err := env.Dynamic.Resource(crdsGVR).Get(t.Context(), "gadgets."+group, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		cols, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
		return cols[0].(map[string]any)["name"].(string)
	}
	column := func() string { return columnOf(group) }
	repo := gitServer.NewRepo(t, crdChart(group, "0.1.0", "size"))
	const name = "gadgets"
	createFluxSource(t, ns, name, repo)
	createCRDRelease(t, ns, name, "", "")
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "gadgets-defaults", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap in crds/: %v; the test expects helm-controller never to create it", err)
	}
	r := scan(t, "--from", "flux", "--app", name)
	checkClean(t, r, 2)
	if len(r.Warnings) != 1 || r.Warnings[0].Code != report.WarnNotApplied || r.Warnings[0].Object != "ConfigMap/"+ns+"/gadgets-defaults" ||
		!strings.Contains(r.Warnings[0].Message, "crds/") {
		t.Errorf("warnings %+v: want one NotApplied for the ConfigMap in crds/", r.Warnings)
	}

	// A person's edits: drift detection puts the template's ConfigMap back
	// and leaves the CRD.
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "gadgets-config", types.MergePatchType, `{"data":{"level":"debug"}}`)
	if _, err := env.Dynamic.Resource(crdsGVR).Patch(t.Context(), "gadgets."+group, types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/versions/0/additionalPrinterColumns/0/name","value":"hand"}]`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, false, func(ctx context.Context) (bool, error) {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "gadgets-config", metav1.GetOptions{})
		return err == nil && cm.Data["level"] == "info", nil
	})
	if err != nil {
		t.Fatalf("drift detection never put the ConfigMap back: %v", err)
	}
	time.Sleep(7 * time.Second) // two more reconciles
	if got := column(); got != "hand" {
		t.Fatalf("the CRD's column is %q after drift detection ran; the test expects the person's edit (hand) to stay", got)
	}
	got := activeFindings(scan(t, "--from", "flux", "--app", name))
	if len(got) != 1 || got[0].Object != "CustomResourceDefinition/gadgets."+group || got[0].Manager != "kubectl-edit" ||
		!strings.Contains(got[0].Hint, "drift detection does not cover") || strings.Contains(got[0].Hint, "will be reverted") {
		t.Errorf("want the CRD's edit, with the hint that drift detection leaves it until the next upgrade, got:\n%s", describe(got))
	}

	// The next upgrade applies the chart's CRD again.
	repo.Commit(t, "v2", crdChart(group, "0.2.0", "colour"))
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.2.0")
	if got := column(); got != "colour" {
		t.Errorf("the CRD's column is %q after an upgrade to a chart whose CRD names it colour", got)
	}
	checkClean(t, scan(t, "--from", "flux", "--app", name), 2)

	// A release that skips its CRDs never creates them, and driftscan
	// leaves them out as Missing.
	ns2 := env.Namespace(t, nil)
	repo2 := gitServer.NewRepo(t, crdChart(skipped, "0.1.0", "size"))
	createFluxSource(t, ns2, "skipped", repo2)
	createCRDRelease(t, ns2, "skipped", "crds: Skip", "crds: Skip")
	waitFluxReady(t, reconcilers.HelmRelease, ns2, "skipped", "0.1.0")
	if _, err := env.Dynamic.Resource(crdsGVR).Get(t.Context(), "gadgets."+skipped, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the CRD of a release with crds: Skip: %v; the test expects it never created", err)
	}
	r = scan(t, "--from", "flux", "--app", "skipped")
	checkClean(t, r, 1)

	// With client-side apply (install.serverSideApply: false, which
	// upgrades follow by default), Create creates a missing CRD and skips
	// one that exists: the chart's newer CRD is never applied. The
	// difference is the applier's, and its hint must say so.
	ns3 := env.Namespace(t, nil)
	repo3 := gitServer.NewRepo(t, crdChart(csa, "0.1.0", "size"))
	createFluxSource(t, ns3, "csa", repo3)
	createCRDRelease(t, ns3, "csa", "serverSideApply: false", "")
	waitFluxReady(t, reconcilers.HelmRelease, ns3, "csa", "0.1.0")
	checkClean(t, scan(t, "--from", "flux", "--app", "csa"), 2)
	repo3.Commit(t, "v2", crdChart(csa, "0.2.0", "colour"))
	waitFluxReady(t, reconcilers.HelmRelease, ns3, "csa", "0.2.0")
	if got := columnOf(csa); got != "size" {
		t.Fatalf("the CRD's column is %q after an upgrade with client-side apply; the test expects helm-controller to leave an existing CRD (size)", got)
	}
	got = activeFindings(scan(t, "--from", "flux", "--app", "csa"))
	if len(got) != 1 || got[0].Object != "CustomResourceDefinition/gadgets."+csa || got[0].Manager != "helm-controller" ||
		!strings.Contains(got[0].Hint, "never updates") || !strings.Contains(got[0].Hint, "CreateReplace") {
		t.Errorf("want the CRD's column, helm-controller's, with the hint that it never updates an existing CRD here, got:\n%s", describe(got))
	}
}
