package cleansync_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// stamp is what one reconciler writes on what it applies, for an app
// named app; ns is the object's namespace.
type stamp struct {
	name  string
	write func(obj *unstructured.Unstructured, app, ns string)
	// gitops is how the scan knows the app: from the config (nil) or as
	// discovered from the reconciler's object.
	gitops func(app string) *report.GitOps
}

func setMeta(obj *unstructured.Unstructured, labels, annotations map[string]string) {
	l, a := obj.GetLabels(), obj.GetAnnotations()
	if l == nil {
		l = map[string]string{}
	}
	if a == nil {
		a = map[string]string{}
	}
	for k, v := range labels {
		l[k] = v
	}
	for k, v := range annotations {
		a[k] = v
	}
	obj.SetLabels(l)
	obj.SetAnnotations(a)
}

// argoID is Argo CD's tracking id of obj for app
// (<app>:<group>/<kind>:<namespace>/<name>).
func argoID(obj *unstructured.Unstructured, app, ns string) string {
	return app + ":" + obj.GroupVersionKind().Group + "/" + obj.GetKind() + ":" + ns + "/" + obj.GetName()
}

var stamps = []stamp{
	{name: "argocd-annotation", write: func(obj *unstructured.Unstructured, app, ns string) {
		setMeta(obj, nil, map[string]string{"argocd.argoproj.io/tracking-id": argoID(obj, app, ns)})
	}},
	{name: "argocd-label", write: func(obj *unstructured.Unstructured, app, ns string) {
		setMeta(obj, map[string]string{"app.kubernetes.io/instance": app}, nil)
	}},
	{name: "argocd-discovered", write: func(obj *unstructured.Unstructured, app, ns string) {
		// An Application outside Argo CD's namespace is tracked as ns_name.
		setMeta(obj, map[string]string{"app.kubernetes.io/instance": "team-apps_" + app},
			map[string]string{"argocd.argoproj.io/tracking-id": argoID(obj, "team-apps_"+app, ns), "argocd.argoproj.io/installation-id": "prod-1"})
	}, gitops: func(app string) *report.GitOps {
		return &report.GitOps{Tool: "argocd", Object: "Application/team-apps/" + app}
	}},
	{name: "flux-kustomization", write: func(obj *unstructured.Unstructured, app, ns string) {
		setMeta(obj, map[string]string{"kustomize.toolkit.fluxcd.io/name": app, "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil)
	}, gitops: func(app string) *report.GitOps {
		return &report.GitOps{Tool: "flux", Object: "Kustomization/flux-system/" + app}
	}},
	{name: "flux-helmrelease", write: func(obj *unstructured.Unstructured, app, ns string) {
		setMeta(obj, map[string]string{"helm.toolkit.fluxcd.io/name": app, "helm.toolkit.fluxcd.io/namespace": "flux-system", "app.kubernetes.io/managed-by": "Helm"},
			map[string]string{"meta.helm.sh/release-name": app, "meta.helm.sh/release-namespace": ns})
	}, gitops: func(app string) *report.GitOps {
		return &report.GitOps{Tool: "flux", Object: "HelmRelease/flux-system/" + app}
	}},
	{name: "helm-install", write: func(obj *unstructured.Unstructured, app, ns string) {
		setMeta(obj, map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			map[string]string{"meta.helm.sh/release-name": app, "meta.helm.sh/release-namespace": ns})
	}},
}

// TestReconcilerMetadataForThisAppIsNotDrift syncs a chart the way each
// reconciler does, with the tracking metadata it writes for this app: the
// scan is clean, and says it dismissed that metadata. When another app then
// syncs the same object, its tracking value is real drift: two apps fight.
func TestReconcilerMetadataForThisAppIsNotDrift(t *testing.T) {
	for _, st := range stamps {
		for _, m := range modes {
			t.Run(st.name+"/"+m.name, func(t *testing.T) {
				ns := env.Namespace(t, nil)
				a := prepare(t, "tracked", ns)
				asApp := func(ca *config.App) {
					ca.Source.Helm = &config.HelmSource{ReleaseName: "shop"}
					if st.gitops != nil {
						ca.GitOps = st.gitops("shop")
					}
				}
				stamped := func(app string) []*unstructured.Unstructured {
					var out []*unstructured.Unstructured
					for _, obj := range a.objects {
						obj = obj.DeepCopy()
						obj.SetNamespace(ns)
						st.write(obj, app, ns)
						out = append(out, obj)
					}
					return out
				}
				for _, obj := range stamped("shop") {
					m.apply(t, ns, obj)
				}
				r := a.scan(t, m, ns, asApp)
				clean(t, r)
				if r.Stats.Dismissed[report.ReconcilerMetadata] == 0 {
					t.Errorf("no reconciler metadata dismissed:\n%s", strings.Join(dismissedBy(r), "\n"))
				}

				// App billing syncs the same ConfigMap (as the same
				// controller), writing its own tracking values.
				for _, other := range stamped("billing") {
					if other.GetKind() == "ConfigMap" {
						resync(t, m, ns, other)
					}
				}
				r = a.scan(t, m, ns, asApp)
				if len(rows(r)) == 0 {
					t.Fatalf("another app's tracking value is not reported")
				}
				for _, ap := range r.Apps {
					for _, o := range ap.Objects {
						if len(o.Findings) > 0 && o.Kind+"/"+o.Name != "ConfigMap/settings" {
							t.Errorf("finding on %s, which billing never synced", o.Ref())
						}
						for _, f := range o.Findings {
							fight := "two apps fight over it"
							if strings.HasPrefix(f.Path, ".metadata.annotations.meta.helm.sh/") {
								fight = "two releases claim it" // Helm refuses, rather than fights
							}
							if f.Class != report.ClassPipeline || !strings.Contains(f.Hint, fight) || !strings.Contains(f.Actor, "billing") {
								t.Errorf("%s: class %s, actor %q, hint %q; want pipeline, billing, %q", f.Path, f.Class, f.Actor, f.Hint, fight)
							}
							if strings.Contains(f.Hint, "next sync removes it") {
								t.Errorf("%s: hint says the next sync removes a tracking value the reconciler writes at every sync: %q", f.Path, f.Hint)
							}
						}
					}
				}
			})
		}
	}
}

// resync writes obj again as m's applier, the way a later sync does:
// server-side apply, or kubectl apply's update with obj as last-applied.
func resync(t *testing.T, m mode, ns string, obj *unstructured.Unstructured) {
	t.Helper()
	if m.name == "server-side" {
		env.Apply(t, m.manager, ns, obj)
		return
	}
	// kubectl apply records what it sent as the new last-applied state.
	sent, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	env.Update(t, m.manager, obj.GroupVersionKind(), ns, obj.GetName(), func(u *unstructured.Unstructured) {
		for k, v := range obj.Object {
			if k != "metadata" {
				u.Object[k] = v
			}
		}
		u.SetLabels(obj.GetLabels())
		ann := map[string]string{}
		for k, v := range obj.GetAnnotations() {
			ann[k] = v
		}
		ann[lastApplied] = string(sent) + "\n"
		u.SetAnnotations(ann)
	})
}

// TestAHumanLabelIsStillFoundOnATrackedObject: dismissing the tracking
// metadata hides nothing else on the same object.
func TestAHumanLabelIsStillFoundOnATrackedObject(t *testing.T) {
	m := modes[0]
	ns := env.Namespace(t, nil)
	a := prepare(t, "tracked", ns)
	for _, obj := range a.objects {
		obj = obj.DeepCopy()
		obj.SetNamespace(ns)
		stamps[0].write(obj, "shop", ns)
		m.apply(t, ns, obj)
	}
	env.Patch(t, "kubectl-label", cluster.ConfigMap, ns, "settings", types.MergePatchType, `{"metadata":{"labels":{"oncall":"alice"}}}`)
	r := a.scan(t, m, ns, func(ca *config.App) { ca.Source.Helm = &config.HelmSource{ReleaseName: "shop"} })
	want := []row{{Object: "ConfigMap/settings", Path: ".metadata.labels.oncall", Type: report.TypeAdded, Class: report.ClassHuman, Manager: "kubectl-label"}}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
