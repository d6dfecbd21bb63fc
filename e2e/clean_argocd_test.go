package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// What a clean sync by the real Argo CD looks like to driftscan: for each
// tracking method and each kind of source, an app that Argo CD synced with
// its default client-side apply and nobody touched scans with zero findings.
//
// Not parallel with the other Argo CD tests: the tracking method is one
// setting of the whole Argo CD (argocd-cm).
func TestArgoCDClientSideSyncsScanClean(t *testing.T) { argoCleanSyncs(t, false) }

// argoCleanSyncs syncs every source with every tracking method, client-side
// or with ServerSideApply=true, and checks that each scans clean.
func argoCleanSyncs(t *testing.T, ssa bool) {
	needArgo(t)
	mode := "client-side"
	if ssa {
		mode = "server-side"
	}
	for _, tracking := range []string{reconcilers.TrackingAnnotation, reconcilers.TrackingLabel, reconcilers.TrackingAnnotationAndLabel} {
		t.Run(tracking, func(t *testing.T) {
			useArgoTracking(t, tracking)
			for _, src := range sources {
				t.Run(src.Name, func(t *testing.T) {
					t.Parallel()
					ns := env.Namespace(t, nil)
					repo := gitServer.NewRepo(t, src.Files)
					name := fmt.Sprintf("clean-%s-%s-%s", trackingName(tracking), src.Name, mode)
					createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: src.Path, SSA: ssa, Automated: "{selfHeal: true, prune: true}"})
					waitArgoSynced(t, name, repo.Head())
					checkTracking(t, ns, name, tracking)
					checkClean(t, scan(t, "--from", "argocd", "--app", name), 3)
				})
			}
		})
	}
}

func trackingName(m string) string {
	return map[string]string{reconcilers.TrackingAnnotation: "ann", reconcilers.TrackingLabel: "label", reconcilers.TrackingAnnotationAndLabel: "both"}[m]
}

// useArgoTracking sets Argo CD's tracking method (one setting of the whole
// Argo CD, argocd-cm's) until the test ends.
func useArgoTracking(t *testing.T, method string) {
	t.Helper()
	if err := argo.SetTracking(t.Context(), method); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = argo.SetTracking(context.Background(), reconcilers.TrackingAnnotation) })
}

// checkTracking checks that Argo CD really tracks the app's ConfigMap with
// the method under test, so the scan saw what that method writes. A switch
// of method reaches the controller through its informer: the first sync may
// still use the old one, so this waits for a re-apply.
func checkTracking(t *testing.T, ns, app, method string) {
	t.Helper()
	checkTrackingBy(t, ns, app, method, "app.kubernetes.io/instance")
}

// checkTrackingBy is checkTracking with Argo CD's instance label under key
// (argocd-cm's application.instanceLabelKey).
func checkTrackingBy(t *testing.T, ns, app, method, key string) {
	t.Helper()
	env.Need(t)
	var ann, label string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, cm := range list.Items {
			if cm.Name == "kube-root-ca.crt" {
				continue
			}
			ann, label = cm.Annotations["argocd.argoproj.io/tracking-id"], cm.Labels[key]
		}
		switch method {
		case reconcilers.TrackingAnnotation:
			return ann != "" && label == "", nil
		case reconcilers.TrackingLabel:
			return ann == "" && label == app, nil
		default:
			return ann != "" && label == app, nil
		}
	})
	if err != nil {
		t.Fatalf("the ConfigMap of %s does not show %s tracking: tracking-id %q, %s %q", app, method, ann, key, label)
	}
}

// checkInSync checks that the scan compared n objects and found each in
// sync: none missing, none extra, none drifted.
func checkInSync(t *testing.T, r *report.Report, n int) {
	t.Helper()
	var states []string
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			states = append(states, fmt.Sprintf("%s %s", o.Ref(), o.Status))
			if o.Status != report.StatusInSync {
				t.Errorf("%s is %s, want InSync", o.Ref(), o.Status)
			}
		}
	}
	if len(states) != n {
		t.Errorf("scanned %d objects, want the %d the reconciler synced: %v", len(states), n, states)
	}
}

func describe(fs []finding) string {
	out := ""
	for _, f := range fs {
		out += fmt.Sprintf("  %s %s %s %s manager=%q git=%q live=%q\n    hint: %s\n", f.Object, f.Path, f.Type, f.Class, f.Manager, f.Git, f.Live, f.Hint)
	}
	return out
}
