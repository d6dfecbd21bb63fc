package e2e

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// Objects a Kustomization's Git marks for kustomize-controller: create
// only (ssa: IfNotPresent), never apply (ssa: Ignore), reconcile disabled,
// as annotations or as labels (it reads both). The real controller creates
// the first, never the second, and keeps a person's edits of the first and
// third after a reconcile, while it puts back one of an object marked
// nothing. driftscan must not call any of the kept edits drift the next
// sync undoes.
func TestFluxApplyPolicyAnnotationsAreNoDrift(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	marked := func(where string) func(name, mark string) string {
		return func(name, mark string) string {
			return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  " + where + ": {" + mark + "}\ndata: {mode: safe}\n"
		}
	}
	cm, labelled := marked("annotations"), marked("labels")
	repo := gitServer.NewRepo(t, map[string]string{
		"app/seed.yaml":           cm("seed", "kustomize.toolkit.fluxcd.io/ssa: IfNotPresent"),
		"app/ignored.yaml":        cm("ignored", "kustomize.toolkit.fluxcd.io/ssa: Ignore"),
		"app/disabled.yaml":       cm("disabled", "kustomize.toolkit.fluxcd.io/reconcile: disabled"),
		"app/plain.yaml":          cm("plain", "team: web"),
		"app/seed-label.yaml":     labelled("seed-label", "kustomize.toolkit.fluxcd.io/ssa: IfNotPresent"),
		"app/ignored-label.yaml":  labelled("ignored-label", "kustomize.toolkit.fluxcd.io/ssa: Ignore"),
		"app/disabled-label.yaml": labelled("disabled-label", "kustomize.toolkit.fluxcd.io/reconcile: disabled"),
	})
	const name = "policies"
	createFluxSource(t, ns, name, repo)
	createKustomizationOf(t, ns, name, "app", "1h")
	waitFluxReady(t, reconcilers.Kustomization, ns, name, repo.Head())
	for _, n := range []string{"ignored", "ignored-label", "disabled", "disabled-label"} {
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("ConfigMap %s: %v; the test expects kustomize-controller never to create an object marked ssa: Ignore or reconcile: disabled", n, err)
		}
	}
	for _, n := range []string{"seed", "seed-label", "plain"} {
		env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, n, types.MergePatchType, `{"data":{"mode":"fast"}}`)
	}
	reconcileKustomization(t, ns, name)
	for n, want := range map[string]string{"seed": "fast", "seed-label": "fast", "plain": "safe"} {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), n, metav1.GetOptions{})
		if err != nil || cm.Data["mode"] != want {
			t.Fatalf("ConfigMap %s after a reconcile: %v, %v; the test expects mode %s", n, cm.Data, err, want)
		}
	}

	r := scan(t, "--from", "flux", "--app", name)
	if got := activeFindings(r); len(got) != 0 || len(appErrors(r)) != 0 {
		t.Errorf("want no finding (the create-only edit stays, the other was put back), got:\n%s\nerrors %v", describe(got), appErrors(r))
	}
	var warned []string
	for _, w := range r.Warnings {
		if w.Code == report.WarnNotApplied {
			warned = append(warned, strings.TrimPrefix(w.Object, "ConfigMap/"+ns+"/"))
		}
	}
	slices.Sort(warned)
	if strings.Join(warned, ",") != "disabled,disabled-label,ignored,ignored-label,seed,seed-label" {
		t.Errorf("NotApplied warnings for %v, want disabled, ignored and seed, each marked by annotation and by label", warned)
	}

	// On-call pauses Flux on one object by hand and edits it: the real
	// controller leaves it, and the finding says so rather than that the
	// next reconcile reverts it.
	env.Patch(t, "kubectl-annotate", cluster.ConfigMap, ns, "plain", types.MergePatchType,
		`{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/reconcile":"disabled"}}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "plain", types.MergePatchType, `{"data":{"mode":"hotfix"}}`)
	reconcileKustomization(t, ns, name)
	if cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "plain", metav1.GetOptions{}); err != nil || cm.Data["mode"] != "hotfix" {
		t.Fatalf("ConfigMap plain after a reconcile: %v, %v; the test expects kustomize-controller to skip a live object marked reconcile: disabled", cm.Data, err)
	}
	var mode *finding
	for _, f := range activeFindings(scan(t, "--from", "flux", "--app", name)) {
		if f.Object == "ConfigMap/plain" && f.Path == ".data.mode" {
			mode = &f
		}
	}
	if mode == nil || !strings.Contains(mode.Hint, "marked kustomize.toolkit.fluxcd.io/reconcile: disabled") {
		t.Errorf("the hotfix on an object paused by hand: %+v; want a finding whose hint says kustomize-controller skips it", mode)
	}
}
