package breakglass

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/fixtures/cluster"
)

func TestPruneEndsTheLiftsOfSuspensionsThatExpiredOrEnded(t *testing.T) {
	ns := env.Namespace(t, nil)
	ref := contract.ParamsRef{Namespace: ns, Name: "driftscan-breakglass"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ns},
		Data: map[string]string{"active": "prod-a", "expired": "prod-b", "resumed": "prod-c"}}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	suspensions := []Suspension{
		{Target: Target{Resource: Application, Namespace: "argocd", Name: "active"}, Until: now.Add(time.Hour)},
		{Target: Target{Resource: Application, Namespace: "argocd", Name: "expired"}, Until: now.Add(-time.Minute)},
	}
	gone, err := Prune(t.Context(), env.Dynamic, ref, suspensions, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"expired", "resumed"}, gone); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	live, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"active": "prod-a"}, live.Data); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
	// No ConfigMap, no contract policies: nothing to do, no error.
	if gone, err := Prune(t.Context(), env.Dynamic, contract.ParamsRef{Namespace: ns, Name: "absent"}, nil, now); err != nil || gone != nil {
		t.Errorf("absent ConfigMap: %v, %v", gone, err)
	}
}

func TestLiftNamesTheApplicationsDestination(t *testing.T) {
	env.Need(t)
	installCRDs(t)
	ns := env.Namespace(t, nil)
	env.Apply(t, "argocd-server", ns, cluster.Object(t, application))
	ref := contract.ParamsRef{Namespace: ns, Name: "driftscan-breakglass"}
	target := Target{Resource: Application, Namespace: ns, Name: "payments"}
	// Without the ConfigMap there is nothing to lift.
	if ch, err := Lift(t.Context(), env.Dynamic, ref, target, false); err != nil || ch != nil {
		t.Fatalf("no ConfigMap: %v, %v", ch, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ns}}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Lift(t.Context(), env.Dynamic, ref, target, false); err != nil {
		t.Fatal(err)
	}
	live, _ := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), ref.Name, metav1.GetOptions{})
	if diff := cmp.Diff(map[string]string{"payments": "payments"}, live.Data); diff != "" {
		t.Errorf("lift (-want +got):\n%s", diff)
	}
	if _, err := Unlift(t.Context(), env.Dynamic, ref, target, false); err != nil {
		t.Fatal(err)
	}
	live, _ = env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), ref.Name, metav1.GetOptions{})
	if len(live.Data) != 0 {
		t.Errorf("after unlift: %v", live.Data)
	}
}
