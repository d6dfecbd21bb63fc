package scanner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// Objects Git marks for kustomize-controller not to apply as usual: one it
// creates only (ssa: IfNotPresent), whose later edits stay; one it never
// applies (ssa: Ignore), missing live; one whose reconcile is disabled,
// edited live. None is drift kustomize-controller would undo, so none is a
// finding; each is named in a NotApplied warning. A create-only object that
// is missing is, since the next sync creates it, and an object marked
// nothing is compared as always. Labels mark as annotations do, as
// kustomize-controller reads both.
func TestKustomizeControllerApplyPolicyAnnotations(t *testing.T) {
	ns := env.Namespace(t, nil)
	marked := func(where string) func(name, marks string) string {
		return func(name, marks string) string {
			return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  " + where + ": {" + marks + "}\ndata: {mode: safe}\n"
		}
	}
	cm, labelled := marked("annotations"), marked("labels")
	files := map[string]string{
		"seed.yaml":          cm("seed", "kustomize.toolkit.fluxcd.io/ssa: IfNotPresent"),
		"absent.yaml":        cm("absent", "kustomize.toolkit.fluxcd.io/ssa: ifnotpresent"),
		"ignored.yaml":       cm("ignored", "kustomize.toolkit.fluxcd.io/ssa: Ignore"),
		"disabled.yaml":      cm("disabled", "kustomize.toolkit.fluxcd.io/reconcile: disabled"),
		"plain.yaml":         cm("plain", "team: web"),
		"seed-label.yaml":    labelled("seed-label", "kustomize.toolkit.fluxcd.io/ssa: IfNotPresent, team: web"),
		"ignored-label.yaml": labelled("ignored-label", "kustomize.toolkit.fluxcd.io/ssa: ignore"),
	}
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if name == "absent.yaml" || name == "ignored.yaml" || name == "ignored-label.yaml" {
			continue // never created
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(text), &obj.Object); err != nil {
			t.Fatal(err)
		}
		if err := appliedAs(config.AppliedAsFlux, obj); err != nil {
			t.Fatal(err)
		}
		env.Apply(t, "kustomize-controller", ns, obj)
	}
	for _, name := range []string{"seed", "seed-label", "disabled", "plain"} {
		env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, name, "application/merge-patch+json", `{"data":{"mode":"fast"}}`)
	}
	app := config.App{Name: "flux", Source: config.Source{Path: dir}, AppliedAs: config.AppliedAsFlux, Appliers: []string{"kustomize-controller"}}
	r := runScan(t, scanConfig(ns, app))

	want := []row{{Object: "ConfigMap/plain", Path: ".data.mode", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "safe", Live: "fast"}}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	var warned []string
	for _, w := range r.Warnings {
		if w.Code == report.WarnNotApplied {
			warned = append(warned, w.Object)
			if !strings.Contains(w.Message, "kustomize.toolkit.fluxcd.io/") {
				t.Errorf("the warning does not name the annotation: %q", w.Message)
			}
		}
	}
	if diff := cmp.Diff([]string{"ConfigMap/" + ns + "/absent", "ConfigMap/" + ns + "/disabled", "ConfigMap/" + ns + "/ignored", "ConfigMap/" + ns + "/ignored-label", "ConfigMap/" + ns + "/seed", "ConfigMap/" + ns + "/seed-label"}, slices.Sorted(slices.Values(warned))); diff != "" {
		t.Errorf("NotApplied warnings (-want +got):\n%s", diff)
	}
	status := map[string]report.Status{}
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			status[o.Name] = o.Status
		}
	}
	// The create-only object that exists holds all Git says of it; the
	// one missing is created by the next sync; the others are not there.
	if diff := cmp.Diff(map[string]report.Status{"seed": report.StatusInSync, "seed-label": report.StatusInSync, "absent": report.StatusMissing, "plain": report.StatusDrifted}, status); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// On-call pauses Flux on the object by hand to keep the edit: the
	// finding stays, and says why it is not put back.
	env.Patch(t, "kubectl-annotate", cluster.ConfigMap, ns, "plain", "application/merge-patch+json",
		`{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/reconcile":"disabled"}}}`)
	app.GitOps = &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/flux", SelfHeal: true}
	r = runScan(t, scanConfig(ns, app))
	var mode *report.Finding
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for i, f := range o.Findings {
				if o.Name == "plain" && f.Path == ".data.mode" {
					mode = &o.Findings[i]
				}
			}
		}
	}
	if mode == nil || !strings.Contains(mode.Hint, "marked kustomize.toolkit.fluxcd.io/reconcile: disabled") || strings.Contains(mode.Hint, "reverted") {
		t.Errorf("the edit of an object paused by hand: %+v; want a hint that kustomize-controller skips it, not that it is reverted", mode)
	}
}
