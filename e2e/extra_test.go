package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			useArgoTracking(t, tracking)
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
			checkExtraIsWhatArgoPrunes(t, name, head, map[string][]string{
				reconcilers.TrackingAnnotation: {"ConfigMap/cfg-b"},
				reconcilers.TrackingLabel:      {"ConfigMap/cfg-b", "ConfigMap/copied"},
			}[tracking])
		})
	}
}

// checkExtraIsWhatArgoPrunes has Argo CD compare and sync the app at head,
// which left cfg-b (prune off), checks that it then lists want as
// requiring pruning, and that driftscan's extra objects are those.
func checkExtraIsWhatArgoPrunes(t *testing.T, name, head string, want []string) {
	t.Helper()
	refreshArgoApp(t, name)
	syncArgoApp(t, name)
	prune := argoRequiresPruning(t, name, head, "ConfigMap/cfg-b")
	if !slices.Equal(prune, want) {
		t.Fatalf("Argo CD would prune %v; the test expects %v", prune, want)
	}
	if got := extraObjects(scan(t, "--from", "argocd", "--app", name, "--extra")); !slices.Equal(got, prune) {
		t.Errorf("driftscan's extra objects %v, want what Argo CD would prune: %v", got, prune)
	}
}

// argoRequiresPruning waits until Argo CD's sync of the app at head has
// succeeded and lists want among the objects that require pruning (the
// Application's status.resources), and returns them all as sorted
// Kind/name.
func argoRequiresPruning(t *testing.T, name, head, want string) []string {
	t.Helper()
	var prune []string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		app := getArgoApp(t, name)
		// The sync result names its revision before the sync ends (its
		// hooks still run): the history, which the scan reads, is written
		// when it succeeds.
		rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision")
		phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
		if rev != head || phase != "Succeeded" {
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

// leftConfigs are the ConfigMaps of TestExtraObjectsArgoCDDoesNotCount:
// cfg-a and two hooks (Argo CD's PostSync, Helm's post-install, each
// deleted before it is created again, Argo CD's default) always; while
// all, cfg-gen marked as kustomize's configMapGenerator options mark what
// it generates for Argo CD (IgnoreExtraneous, Prune=false: old
// generations stay and do not count), cfg-keep marked Prune=false, and
// cfg-ign marked IgnoreExtraneous.
func leftConfigs(all bool) map[string]string {
	cm := func(name, annotations string) string {
		return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  annotations: {" + annotations + "}\ndata: {k: v}\n"
	}
	text := cm("cfg-a", "") +
		cm("hook", "argocd.argoproj.io/hook: PostSync") +
		cm("helm-hook", "helm.sh/hook: post-install")
	if all {
		text += cm("cfg-gen", "argocd.argoproj.io/compare-options: IgnoreExtraneous, argocd.argoproj.io/sync-options: Prune=false") +
			cm("cfg-keep", "argocd.argoproj.io/sync-options: Prune=false") +
			cm("cfg-ign", "argocd.argoproj.io/compare-options: IgnoreExtraneous")
	}
	return map[string]string{"app/cfg.yaml": text}
}

// What Argo CD neither prunes nor counts is no extra object: its sync
// hooks (never pruned, never counted; they stay live between syncs), and
// an object marked IgnoreExtraneous (not counted: a dismissal). An object
// marked Prune=false is left and counted: the app stays OutOfSync.
func TestExtraObjectsArgoCDDoesNotCount(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	const name = "extra-uncounted"
	repo := gitServer.NewRepo(t, leftConfigs(true))
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "app", Automated: "{selfHeal: true}"})
	waitArgoSynced(t, name, repo.Head())
	head := repo.Commit(t, "drop three", leftConfigs(false))
	refreshArgoApp(t, name)
	syncArgoApp(t, name)
	// Argo CD says its hooks require pruning too, and never prunes them.
	if prune, want := argoRequiresPruning(t, name, head, "ConfigMap/cfg-keep"), []string{"ConfigMap/cfg-gen", "ConfigMap/cfg-ign", "ConfigMap/cfg-keep", "ConfigMap/helm-hook", "ConfigMap/hook"}; !slices.Equal(prune, want) {
		t.Fatalf("Argo CD would prune %v; the test expects %v", prune, want)
	}
	checkExtra := func(when string, want []string, ignored int) {
		t.Helper()
		r := scan(t, "--from", "argocd", "--app", name, "--extra")
		if got := extraObjects(r); !slices.Equal(got, want) {
			t.Errorf("%s: driftscan's extra objects %v, want %v", when, got, want)
		}
		if got := r.Stats.Dismissed[report.ExtraneousIgnored]; got != ignored {
			t.Errorf("%s: %d objects dismissed as %s, want %d", when, got, report.ExtraneousIgnored, ignored)
		}
	}
	checkExtra("Git dropped three", []string{"ConfigMap/cfg-keep"}, 2)

	// A sync with prune deletes only cfg-ign.
	syncArgoAppPruning(t, name, true)
	var left []string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		phase, _, _ := unstructured.NestedString(getArgoApp(t, name).Object, "status", "operationState", "phase")
		list, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		left = nil
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				left = append(left, cm.Name)
			}
		}
		slices.Sort(left)
		return phase == "Succeeded" && !slices.Contains(left, "cfg-ign"), nil
	})
	if want := []string{"cfg-a", "cfg-gen", "cfg-keep", "helm-hook", "hook"}; err != nil || !slices.Equal(left, want) {
		t.Fatalf("after a sync with prune, live ConfigMaps %v (%v); the test expects %v", left, err, want)
	}
	checkExtra("after a sync with prune", []string{"ConfigMap/cfg-keep"}, 1)

	// Once a person deletes cfg-keep, Argo CD counts nothing left: Synced
	// with cfg-gen and the hooks live.
	if err := env.Client.CoreV1().ConfigMaps(ns).Delete(t.Context(), "cfg-keep", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := argoSyncAfterRefresh(t, name); got != "Synced" {
		t.Fatalf("with cfg-gen and the hooks left, Argo CD says %s; the test expects Synced", got)
	}
	checkExtra("cfg-keep deleted", nil, 1)
}

// hookChart is a chart at chart/ with a ConfigMap, a post-install and
// post-upgrade hook deleted before it is created again (so it stays
// between upgrades), and, while kept, a ConfigMap Helm is told to keep
// (helm.sh/resource-policy: keep) when an upgrade drops it.
func hookChart(version string, kept bool) map[string]string {
	files := map[string]string{
		"chart/Chart.yaml":            "apiVersion: v2\nname: hooked\nversion: " + version + "\n",
		"chart/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hooked-config}\ndata: {level: info}\n",
		"chart/templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: hooked-migrate
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
data: {step: migrate}
`,
		"chart/templates/kept.yaml": "", // Repo.Commit overwrites, never deletes
	}
	if kept {
		files["chart/templates/kept.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooked-kept\n  annotations: {helm.sh/resource-policy: keep}\ndata: {k: v}\n"
	}
	return files
}

// helm-controller post-renders a chart's hooks with its templates (Helm 4's
// combined post-render strategy, its default), so a hook that stays
// between upgrades carries the HelmRelease's labels; Helm never deletes it
// at an upgrade (its delete policy does, before the next run). An object
// an upgrade dropped that Helm keeps (resource-policy keep) stays with the
// labels: that one is extra.
func TestExtraObjectsOfAFluxHelmRelease(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	const name = "extra-hooked"
	repo := gitServer.NewRepo(t, hookChart("0.1.0", true))
	createFluxSource(t, ns, name, repo)
	createGitHelmRelease(t, ns, name, name, "chart", "reconcileStrategy: Revision")
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.1.0")
	repo.Commit(t, "drop kept", hookChart("0.2.0", false))
	waitFluxReady(t, reconcilers.HelmRelease, ns, name, "0.2.0")
	for _, cm := range []string{"hooked-migrate", "hooked-kept"} {
		if labels := env.Get(t, cluster.ConfigMap, ns, cm).GetLabels(); labels["helm.toolkit.fluxcd.io/name"] != name {
			t.Fatalf("%s's labels %v: the test expects it live with the HelmRelease's labels", cm, labels)
		}
	}
	if got, want := extraObjects(scan(t, "--from", "flux", "--app", name, "--extra")), []string{"ConfigMap/hooked-kept"}; !slices.Equal(got, want) {
		t.Errorf("driftscan's extra objects %v, want %v", got, want)
	}
}
