package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// twoConfigs is a ConfigMap file with cfg-a and, when both, cfg-b.
func twoConfigs(both bool) map[string]string {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-a}\ndata: {k: a}\n"
	if both {
		text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-b}\ndata: {k: b}\n"
	}
	return map[string]string{"app/cfg.yaml": text}
}

// extraObjects lists the report's Extra objects as Kind/name.
func extraObjects(r *report.Report) []string {
	var out []string
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			if o.Status == report.StatusExtra {
				out = append(out, o.Kind+"/"+o.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// copiedLabels creates a ConfigMap that carries app.kubernetes.io/instance:
// app, as an operator's child copies its parent's labels (and a chart
// labels what it renders), with no tracking of any reconciler.
func copiedLabels(t *testing.T, ns, app string) {
	t.Helper()
	env.Create(t, "some-operator", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"copied","labels":{"app.kubernetes.io/instance":"`+app+`"}},"data":{"k":"c"}}`))
}

// An object an app synced and Git no longer declares, left because the
// app does not prune, is what `--extra` is for. The real Argo CD says which
// of the live objects it tracks for an app require pruning (the
// Application's status.resources): with annotation tracking (Argo CD 3's
// default) its tracking-id annotation, which names the object itself, and
// not a chart's or an operator's app.kubernetes.io/instance label; with
// label tracking that label. driftscan's Extra objects must be those.
func TestExtraObjectsAreWhatArgoCDWouldPrune(t *testing.T) {
	needArgo(t)
	for _, tracking := range []string{reconcilers.TrackingAnnotation, reconcilers.TrackingLabel} {
		t.Run(tracking, func(t *testing.T) {
			if err := argo.SetTracking(t.Context(), tracking); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = argo.SetTracking(context.Background(), reconcilers.TrackingAnnotation) })
			ns := env.Namespace(t, nil)
			name := "extra-" + trackingName(tracking)
			repo := gitServer.NewRepo(t, twoConfigs(true))
			createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "app", Automated: "{selfHeal: true}"})
			waitArgoSynced(t, name, repo.Head())
			checkTracking(t, ns, name, tracking)
			copiedLabels(t, ns, name)
			head := repo.Commit(t, "drop cfg-b", twoConfigs(false))
			// Auto-sync skips a change that only prunes, when the app does
			// not prune: a person syncs, and the app stays OutOfSync, cfg-b
			// requiring pruning.
			refreshArgoApp(t, name)
			syncArgoApp(t, name)
			prune := argoRequiresPruning(t, name, head, "ConfigMap/cfg-b")
			if want := map[string][]string{
				reconcilers.TrackingAnnotation: {"ConfigMap/cfg-b"},
				reconcilers.TrackingLabel:      {"ConfigMap/cfg-b", "ConfigMap/copied"},
			}[tracking]; !slices.Equal(prune, want) {
				t.Fatalf("Argo CD would prune %v; the test expects %v", prune, want)
			}
			if got := extraObjects(scan(t, "--from", "argocd", "--app", name, "--extra")); !slices.Equal(got, prune) {
				t.Errorf("driftscan's extra objects %v, want what Argo CD would prune: %v", got, prune)
			}
		})
	}
}

// argoRequiresPruning waits until Argo CD has synced the app at head and
// lists want among the objects that require pruning (the Application's
// status.resources), and returns them all as sorted Kind/name.
func argoRequiresPruning(t *testing.T, name, head, want string) []string {
	t.Helper()
	var prune []string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		app := getArgoApp(t, name)
		if rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision"); rev != head {
			return false, nil
		}
		resources, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
		prune = nil
		for _, r := range resources {
			r := r.(map[string]any)
			if r["requiresPruning"] == true {
				prune = append(prune, fmt.Sprint(r["kind"], "/", r["name"]))
			}
		}
		return slices.Contains(prune, want), nil
	})
	if err != nil {
		t.Fatalf("Argo CD never listed %s of %s as requiring pruning: %v", want, name, prune)
	}
	slices.Sort(prune)
	return prune
}

// The same for Flux: kustomize-controller labels what it applies with the
// Kustomization's name and namespace, and an object Git dropped stays
// when the Kustomization does not prune.
func TestExtraObjectsOfAFluxKustomization(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	const name = "extra"
	repo := gitServer.NewRepo(t, twoConfigs(true))
	createFluxSource(t, ns, name, repo)
	createFluxObject(t, reconcilers.Kustomization, fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: %s}
spec:
  interval: %s
  path: ./app
  prune: false
  targetNamespace: %s
  sourceRef: {kind: GitRepository, name: %s}
`, name, ns, fluxInterval, ns, name))
	waitFluxReady(t, reconcilers.Kustomization, ns, name, repo.Head())
	copiedLabels(t, ns, name)
	head := repo.Commit(t, "drop cfg-b", twoConfigs(false))
	waitFluxReady(t, reconcilers.Kustomization, ns, name, head)
	if labels := env.Get(t, cluster.ConfigMap, ns, "cfg-b").GetLabels(); labels["kustomize.toolkit.fluxcd.io/name"] != name {
		t.Fatalf("cfg-b's labels %v: the test expects Flux to leave it, labelled as its own", labels)
	}
	if got, want := extraObjects(scan(t, "--from", "flux", "--app", name, "--extra")), []string{"ConfigMap/cfg-b"}; !slices.Equal(got, want) {
		t.Errorf("driftscan's extra objects %v, want %v", got, want)
	}
}
