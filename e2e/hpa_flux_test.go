package e2e

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// The replica war with the real Flux, and the fix the finding gives.
// kustomize-controller v1.9.6 applies server-side and forces ownership:
// each reconcile that finds the HPA's 4 puts Git's 2 back and owns
// spec.replicas again, until the HPA's next pass (every 15 s) takes it.
// A commit removing replicas applied in that window deletes the field,
// and the Deployment falls to its default, 1, until the HPA scales it
// again. Applied while driftscan's break-glass holds the Kustomization
// suspended, after the HPA's value is live, it leaves 4. The finding's
// hint says so before either.
func TestFluxRemovesReplicasAnHPAScaled(t *testing.T) {
	needFlux(t)
	for _, suspend := range []bool{false, true} {
		t.Run(map[bool]string{false: "right after a revert", true: "suspended"}[suspend], func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t, nil)
			repo := gitServer.NewRepo(t, plainAppWith(map[string]string{"web/hpa.yaml": webHPA}))
			app := "scaled-" + ns[strings.LastIndex(ns, "-")+1:]
			createFluxSource(t, ns, app, repo)
			createKustomizationOf(t, ns, app, "web", "1h") // reconciled on request only
			waitFluxReady(t, reconcilers.Kustomization, ns, app, repo.Head())
			waitReplicas(t, ns, 4)

			got := activeFindings(scan(t, "--from", "flux", "--app", app))
			if len(got) != 1 || got[0].Path != ".spec.replicas" || got[0].Git != "2" || got[0].Live != "4" || got[0].Class != report.ClassOperator ||
				!strings.Contains(got[0].Hint, "HorizontalPodAutoscaler web-hpa owns spec.replicas") ||
				!strings.Contains(got[0].Hint, "kustomize-controller applies server-side") || !strings.Contains(got[0].Hint, "driftscan breakglass suspend") ||
				strings.Contains(got[0].Hint, "edit-last-applied") {
				t.Errorf("want one operator finding, Git's 2 and the HPA's 4, naming web-hpa and warning that kustomize-controller's next apply owns replicas again; got:\n%s", describe(got))
			}

			// The war: a reconcile puts Git's 2 back, and kustomize-controller
			// owns the field until the HPA's next pass.
			hpa, flux := "4 by kube-controller-manager (scale)", "2 by kustomize-controller"
			replicas := recordReplicas(t, ns)
			reconcileKustomization(t, ns, app)
			waitReplicas(t, ns, 4)
			if seen := replicas(); !slices.Equal(seen, []string{hpa, flux, hpa}) {
				t.Fatalf("a reconcile took spec.replicas %q: the test expects kustomize-controller's 2, then the HPA's 4", seen)
			}

			fixed := strings.Replace(deployment, "  replicas: 2\n", "", 1)
			replicas = recordReplicas(t, ns)
			if suspend {
				bg := []string{"--from", "flux", "-n", ns}
				if res := runDriftscan(t, append([]string{"breakglass", "suspend", app, "--reason", "replicas are the HPA's", "--ttl", "1h"}, bg...)...); res.Code != 0 {
					t.Fatalf("breakglass suspend: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
				}
				head := repo.Commit(t, "replicas are the HPA's", map[string]string{"web/deploy.yaml": fixed})
				waitFluxArtifact(t, ns, app, head)
				if res := runDriftscan(t, append([]string{"breakglass", "resume", app}, bg...)...); res.Code != 0 {
					t.Fatalf("breakglass resume: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
				}
				waitFluxReady(t, reconcilers.Kustomization, ns, app, head)
			} else {
				// Git's 2 again, kustomize-controller's; the commit that
				// removes replicas is fetched and applied before the HPA's
				// next pass.
				reconcileKustomization(t, ns, app)
				head := repo.Commit(t, "replicas are the HPA's", map[string]string{"web/deploy.yaml": fixed})
				reconcileFlux(t, reconcilers.GitRepository, ns, app)
				waitFluxReady(t, reconcilers.Kustomization, ns, app, head)
			}
			// Longer than the HPA takes to act.
			time.Sleep(20 * time.Second)
			waitReplicas(t, ns, 4)
			seen := replicas()
			t.Logf("spec.replicas went %q after Git dropped it", seen)
			want := []string{hpa}
			if !suspend {
				// Deleted, the field is the server's default and nobody's,
				// and the HPA's scale after that is recorded under no
				// manager (the Scale it updates has no managedFields): the
				// scan takes replicas that are nobody's, not 1, under an
				// HPA as the HPA's.
				want = []string{hpa, flux, "1 by nobody", "4 by nobody"}
			}
			if !slices.Equal(seen, want) {
				t.Errorf("spec.replicas went %q after Git dropped it; the test expects %q", seen, want)
			}
			checkClean(t, scan(t, "--from", "flux", "--app", app), 4)
		})
	}
}

// recordReplicas reads Deployment web of ns every 50 ms from now until the
// function it returns is called, which returns the values spec.replicas
// took, each change once, with their owners ("2 by kustomize-controller").
func recordReplicas(t *testing.T, ns string) func() []string {
	t.Helper()
	var seen []string
	stop, done := make(chan struct{}), make(chan struct{})
	read := func() {
		if d, err := env.Client.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{}); err == nil {
			owner := cmp.Or(replicasOwner(d.ManagedFields), "nobody")
			if r := fmt.Sprintf("%d by %s", *d.Spec.Replicas, owner); len(seen) == 0 || seen[len(seen)-1] != r {
				seen = append(seen, r)
			}
		}
	}
	go func() {
		defer close(done)
		for tick := time.NewTicker(50 * time.Millisecond); ; {
			read()
			select {
			case <-stop:
				tick.Stop()
				read() // what the caller saw before it stopped the record
				return
			case <-tick.C:
			}
		}
	}()
	return func() []string {
		close(stop)
		<-done
		return seen
	}
}
