package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/report"
)

// webHPA is an autoscaler of Deployment web that wants at least four
// replicas (Git's Deployment has two).
const webHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-hpa
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 4
  maxReplicas: 8
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 70}
`

// The replica war, with the real tools: Git declares replicas 2 and an
// HPA whose minimum is 4, Argo CD v3.5.7 syncs both with self-heal, and
// kube-controller-manager v1.37.2's HPA controller scales the Deployment
// to 4 through the scale subresource (below its minimum it needs no
// metrics). Self-heal puts 2 back, the HPA scales to 4 again: both are
// seen. driftscan's finding names the HPA's controller as the field's
// owner, an operator, and says how to end the war.
func TestArgoCDFightsARealHPA(t *testing.T) {
	needArgo(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	name := "hpa-" + ns[strings.LastIndex(ns, "-")+1:]
	repo := gitServer.NewRepo(t, plainAppWith(map[string]string{"web/hpa.yaml": webHPA}))
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "web", Automated: "{selfHeal: true}"})
	waitArgoApplied(t, name, repo.Head()) // Synced only until the HPA scales

	// Watch spec.replicas: the HPA's 4 (perhaps already there at the
	// sync's end), self-heal's 2, the HPA's 4 again.
	var owner string
	seen := watchReplicas(t, ns, 90*time.Second, func(seen []int32, d *appsv1.Deployment) bool {
		if *d.Spec.Replicas == 4 && owner == "" {
			owner = replicasOwner(d.ManagedFields)
		}
		return len(seen) >= 4
	})
	t.Logf("spec.replicas went %v; the HPA's 4 owned by %s", seen, owner)
	if len(seen) < 4 || slices.ContainsFunc(seen, func(r int32) bool { return r != 2 && r != 4 }) || !slices.Contains(seen[:len(seen)-1][slices.Index(seen, 4):], 2) {
		t.Fatalf("spec.replicas went %v in 90 s: the test expects the HPA's 4, self-heal's 2 and the HPA's 4 again (and Git's 2 between)", seen)
	}
	if owner != "kube-controller-manager (scale)" {
		t.Errorf("the HPA's replicas are owned by %q; the test expects kube-controller-manager through the scale subresource", owner)
	}

	// A scan while the HPA's value is live: once the HPA has scaled
	// again (within its 15 s period, later on a loaded machine), self-heal
	// waits longer each time before it reverts (2 s, 6 s, 18 s, 54 s).
	var got []finding
	for i := 0; i < 5 && len(got) == 0; i++ {
		waitReplicas(t, ns, 4)
		got = activeFindings(scan(t, "--from", "argocd", "--app", name))
	}
	if len(got) != 1 || got[0].Object != "Deployment/web" || got[0].Path != ".spec.replicas" || got[0].Git != "2" || got[0].Live != "4" ||
		got[0].Class != report.ClassOperator || got[0].Manager != "kube-controller-manager" ||
		!strings.Contains(got[0].Hint, "HorizontalPodAutoscaler web-hpa owns spec.replicas") || !strings.Contains(got[0].Hint, "fights the autoscaler") {
		t.Errorf("want one operator finding, replicas 2 in Git and the HPA's 4 live, named for web-hpa; got:\n%s", describe(got))
	}
}

// replicasOwner is the manager (and subresource) whose managedFields
// entry holds spec.replicas, "" when none does.
func replicasOwner(entries []metav1.ManagedFieldsEntry) string {
	for _, e := range entries {
		var fields struct {
			Spec map[string]any `json:"f:spec"`
		}
		if e.FieldsV1 == nil || json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields.Spec["f:replicas"]; ok {
			if e.Subresource != "" {
				return e.Manager + " (" + e.Subresource + ")"
			}
			return e.Manager
		}
	}
	return ""
}

// The fix the finding gives, removing replicas from Git, as Argo CD v3.5.7
// applies it after the real HPA scaled the Deployment to 4. With kubectl's
// client-side apply (Argo CD's default) the three-way merge deletes what
// left the last-applied configuration: replicas falls to its default, 1,
// until the HPA scales it again (the one-time drop the Kubernetes HPA
// documentation warns of). With server-side apply the HPA's scale took the
// field from Argo CD, and the sync leaves it.
func TestArgoCDRemovesReplicasAnHPAScaled(t *testing.T) {
	needArgo(t)
	for _, ssa := range []bool{false, true} {
		t.Run(map[bool]string{false: "client-side apply", true: "server-side apply"}[ssa], func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t, nil)
			name := "unreplicated-" + ns[strings.LastIndex(ns, "-")+1:]
			repo := gitServer.NewRepo(t, plainAppWith(map[string]string{"web/hpa.yaml": webHPA}))
			createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: repo, Path: "web", Automated: "{}", SSA: ssa})
			waitArgoApplied(t, name, repo.Head()) // then OutOfSync: the HPA scales
			waitReplicas(t, ns, 4)

			r := scan(t, "--from", "argocd", "--app", name)
			hint := ""
			if got := activeFindings(r); len(got) == 1 && got[0].Path == ".spec.replicas" {
				hint = got[0].Hint
			}
			warned := strings.Contains(hint, "edit-last-applied")
			if warned == ssa || !strings.Contains(hint, "HorizontalPodAutoscaler web-hpa owns spec.replicas") {
				t.Errorf("the replicas finding's hint is %q: want it to name web-hpa, and to warn of the drop to 1 with client-side apply only", hint)
			}

			head := repo.Commit(t, "replicas are the HPA's", map[string]string{"web/deploy.yaml": strings.Replace(deployment, "  replicas: 2\n", "", 1)})
			refreshArgoApp(t, name)
			// Watch spec.replicas until the drop and the HPA's scale, or,
			// once Argo CD finds the app Synced at the new revision,
			// for longer than the HPA takes to act (15 s).
			start := time.Now()
			seen := watchReplicas(t, ns, time.Minute, func(seen []int32, _ *appsv1.Deployment) bool {
				return len(seen) >= 3 || time.Since(start) > 20*time.Second && argoSyncedAt(t, name, head)
			})
			if ssa {
				// Nothing is left to sync: Argo CD's diff of a server-side
				// applied app leaves out a field it no longer owns.
				if !argoSyncedAt(t, name, head) {
					t.Fatalf("Argo CD does not find the server-side applied app Synced at %s", head)
				}
			} else {
				waitArgoApplied(t, name, head)
			}
			t.Logf("spec.replicas went %v after Git dropped it", seen)
			want := []int32{4}
			if !ssa {
				want = []int32{4, 1, 4}
			}
			if !slices.Equal(seen, want) {
				t.Errorf("spec.replicas went %v after Git dropped it; the test expects %v", seen, want)
			}
			checkClean(t, scan(t, "--from", "argocd", "--app", name), 4)
		})
	}
}

// waitReplicas waits until Deployment web of ns has replicas n.
func waitReplicas(t *testing.T, ns string, n int32) {
	t.Helper()
	if seen := watchReplicas(t, ns, time.Minute, func(seen []int32, _ *appsv1.Deployment) bool { return seen[len(seen)-1] == n }); seen[len(seen)-1] != n {
		t.Fatalf("Deployment web of %s never had %d replicas (it had %v)", ns, n, seen)
	}
}

// watchReplicas reads Deployment web of ns every 50 ms for up to limit,
// until done (given the values so far and the Deployment as read), and
// returns the values spec.replicas took, each change once.
func watchReplicas(t *testing.T, ns string, limit time.Duration, done func(seen []int32, d *appsv1.Deployment) bool) []int32 {
	t.Helper()
	var seen []int32
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		d, err := env.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if r := *d.Spec.Replicas; len(seen) == 0 || seen[len(seen)-1] != r {
			seen = append(seen, r)
		}
		return done(seen, d), nil
	})
	if len(seen) == 0 {
		t.Fatalf("Deployment web of %s: %v", ns, err)
	}
	return seen
}

// waitArgoApplied waits until the last sync of the Application name (of
// the shared Argo CD) Succeeded at revision, whatever Argo CD compares now.
func waitArgoApplied(t *testing.T, name, revision string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u := getArgoAppIn(t, argo.Namespace, name)
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		opRev, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "syncResult", "revision")
		last = phase + " at " + opRev
		return phase == "Succeeded" && opRev == revision, nil
	})
	if err != nil {
		t.Fatalf("Application %s: no sync Succeeded at %s (last: %s)", name, revision, last)
	}
}

// argoSyncedAt says whether Argo CD finds the Application name (of the
// shared Argo CD) Synced at revision.
func argoSyncedAt(t *testing.T, name, revision string) bool {
	t.Helper()
	u := getArgoAppIn(t, argo.Namespace, name)
	status, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
	rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
	return status == "Synced" && rev == revision
}
