package e2e

import (
	"testing"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// argoInstanceKey is the instance label key Argo CD's documentation
// suggests in argocd-cm's application.instanceLabelKey, so that Argo CD's
// label tracking and the app.kubernetes.io/instance label charts render
// leave each other alone.
const argoInstanceKey = "argocd.argoproj.io/instance"

// labelledConfigs is twoConfigs with the app.kubernetes.io/instance label a
// chart renders for its release shop.
func labelledConfigs(both bool) map[string]string {
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  labels: {app.kubernetes.io/instance: shop}\ndata: {k: v}\n"
	}
	text := cm("cfg-a")
	if both {
		text += "---\n" + cm("cfg-b")
	}
	return map[string]string{"app/cfg.yaml": text}
}

// With argocd-cm's application.instanceLabelKey set, Argo CD writes its
// instance label under that key (label and annotation+label tracking),
// leaves the chart's app.kubernetes.io/instance as Git has it, and with
// label tracking counts what carries that key as the app's own. A clean
// sync scans clean (the label under the custom key is Argo CD's tracking,
// not drift), `--extra` finds what Argo CD would prune, and breakglass
// finds a child Application's self-healing parent by that label.
func TestArgoCDCustomInstanceLabelKey(t *testing.T) {
	needArgo(t)
	setArgoCM(t, "application.instanceLabelKey", argoInstanceKey)
	for _, tracking := range []string{reconcilers.TrackingLabel, reconcilers.TrackingAnnotationAndLabel} {
		t.Run(tracking, func(t *testing.T) {
			useArgoTracking(t, tracking)
			ns := env.Namespace(t, nil)
			name := "instance-key-" + trackingName(tracking)
			repo := gitServer.NewRepo(t, labelledConfigs(true))
			createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "app", Automated: "{selfHeal: true}"})
			waitArgoSynced(t, name, repo.Head())
			checkTrackingBy(t, ns, name, tracking, argoInstanceKey)
			if got := env.Get(t, cluster.ConfigMap, ns, "cfg-a").GetLabels()["app.kubernetes.io/instance"]; got != "shop" {
				t.Fatalf("cfg-a's app.kubernetes.io/instance is %q: the test expects Argo CD to leave Git's shop", got)
			}
			checkClean(t, scan(t, "--from", "argocd", "--app", name), 2)

			// An operator's child that copied its parent's labels, Argo
			// CD's among them.
			env.Create(t, "some-operator", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"copied","labels":{"`+argoInstanceKey+`":"`+name+`"}},"data":{"k":"c"}}`))
			head := repo.Commit(t, "drop cfg-b", labelledConfigs(false))
			checkExtraIsWhatArgoPrunes(t, name, head, map[string][]string{
				reconcilers.TrackingLabel:              {"ConfigMap/cfg-b", "ConfigMap/copied"},
				reconcilers.TrackingAnnotationAndLabel: {"ConfigMap/cfg-b"},
			}[tracking])

			if tracking != reconcilers.TrackingLabel {
				return
			}
			// Under label tracking, only the label under the custom key
			// says which Application deployed a child Application.
			parent, child := name+"-parent", name+"-child"
			createAppOfApps(t, env.Namespace(t, nil), parent, child)
			if got := getArgoApp(t, child).GetLabels()[argoInstanceKey]; got != parent {
				t.Fatalf("the child Application's %s is %q: the test expects Argo CD's label naming %s", argoInstanceKey, got, parent)
			}
			checkSuspendRefused(t, parent, child)
		})
	}
}
