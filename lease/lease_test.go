package lease

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/fixtures/cluster"
)

var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

// t0 is the injected clock's start, truncated to the Lease's microseconds.
var t0 = time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)

// opts is a Lease named scan in ns held by holder, on a clock fixed at now.
func opts(ns, holder string, now time.Time) Options {
	o := DefaultOptions()
	o.Namespace, o.Name, o.Holder = ns, "scan", holder
	o.Duration = time.Minute
	o.Now = func() time.Time { return now }
	return o
}

// holderInCluster is spec.holderIdentity as the API server has it.
func holderInCluster(t *testing.T, ns string) string {
	t.Helper()
	env.Need(t)
	l, err := env.Client.CoordinationV1().Leases(ns).Get(t.Context(), "scan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestASecondHolderIsRefusedAndNamesTheFirst(t *testing.T) {
	ns := env.Namespace(t, nil)
	first, err := Acquire(t.Context(), env.Client, opts(ns, "cronjob-28xk/1", t0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := first.Expires, t0.Add(time.Minute); !got.Equal(want) {
		t.Errorf("Expires = %s, want %s", got, want)
	}
	if got := holderInCluster(t, ns); got != "cronjob-28xk/1" {
		t.Errorf("holderIdentity = %q, want cronjob-28xk/1", got)
	}

	_, err = Acquire(t.Context(), env.Client, opts(ns, "laptop/4242", t0.Add(30*time.Second)))
	var held *HeldError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &held) {
		t.Fatalf("second Acquire: %v, want ErrHeld", err)
	}
	if held.Holder != "cronjob-28xk/1" || !held.Expires.Equal(t0.Add(time.Minute)) {
		t.Errorf("HeldError = %+v, want holder cronjob-28xk/1 until %s", held, t0.Add(time.Minute))
	}
	want := fmt.Sprintf(`lease %s/scan is held by "cronjob-28xk/1" until 2026-03-01T03:01:00Z`, ns)
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	// The holder itself may take it again: that renews it.
	again, err := Acquire(t.Context(), env.Client, opts(ns, "cronjob-28xk/1", t0.Add(50*time.Second)))
	if err != nil {
		t.Fatalf("the holder acquiring again: %v", err)
	}
	if !again.Expires.Equal(t0.Add(110 * time.Second)) {
		t.Errorf("Expires after re-acquire = %s, want %s", again.Expires, t0.Add(110*time.Second))
	}
}

func TestAnExpiredLeaseIsTakenOver(t *testing.T) {
	ns := env.Namespace(t, nil)
	if _, err := Acquire(t.Context(), env.Client, opts(ns, "crashed/1", t0)); err != nil {
		t.Fatal(err)
	}
	// Exactly at renewTime + duration it is still held; a moment later not.
	if _, err := Acquire(t.Context(), env.Client, opts(ns, "next/2", t0.Add(time.Minute))); !errors.Is(err, ErrHeld) {
		t.Fatalf("at the expiry instant: %v, want ErrHeld", err)
	}
	next, err := Acquire(t.Context(), env.Client, opts(ns, "next/2", t0.Add(time.Minute+time.Millisecond)))
	if err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if got := holderInCluster(t, ns); got != "next/2" {
		t.Errorf("holderIdentity = %q, want next/2", got)
	}
	l, err := env.Client.CoordinationV1().Leases(ns).Get(t.Context(), "scan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
		t.Errorf("leaseTransitions = %v, want 1", l.Spec.LeaseTransitions)
	}

	// The crashed holder, back, has lost it: it cannot renew or release it.
	crashed := &Lease{client: env.Client, opts: opts(ns, "crashed/1", t0.Add(2*time.Minute))}
	if err := crashed.Renew(t.Context()); !errors.Is(err, ErrLost) {
		t.Errorf("Renew by the old holder: %v, want ErrLost", err)
	}
	if err := crashed.Release(t.Context()); !errors.Is(err, ErrLost) {
		t.Errorf("Release by the old holder: %v, want ErrLost", err)
	}
	if got := holderInCluster(t, ns); got != "next/2" {
		t.Errorf("after the old holder's Release: holderIdentity = %q, want next/2", got)
	}
	if err := next.Release(t.Context()); err != nil {
		t.Errorf("Release by the holder: %v", err)
	}
}

func TestReleaseLetsTheNextHolderIn(t *testing.T) {
	ns := env.Namespace(t, nil)
	first, err := Acquire(t.Context(), env.Client, opts(ns, "cronjob/1", t0))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := holderInCluster(t, ns); got != "" {
		t.Errorf("after Release: holderIdentity = %q, want none", got)
	}
	// Long before the old renewTime + duration.
	if _, err := Acquire(t.Context(), env.Client, opts(ns, "manual/2", t0.Add(time.Second))); err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	if got := holderInCluster(t, ns); got != "manual/2" {
		t.Errorf("holderIdentity = %q, want manual/2", got)
	}
}

func TestRenewMovesTheExpiry(t *testing.T) {
	ns := env.Namespace(t, nil)
	o := opts(ns, "cronjob/1", t0)
	now := t0
	o.Now = func() time.Time { return now }
	l, err := Acquire(t.Context(), env.Client, o)
	if err != nil {
		t.Fatal(err)
	}
	now = t0.Add(50 * time.Second)
	if err := l.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Past the first expiry, before the renewed one: still held.
	_, err = Acquire(t.Context(), env.Client, opts(ns, "manual/2", t0.Add(100*time.Second)))
	var held *HeldError
	if !errors.As(err, &held) || !held.Expires.Equal(t0.Add(110*time.Second)) {
		t.Errorf("Acquire after Renew: %v, want held until %s", err, t0.Add(110*time.Second))
	}
}

// TestRacingAcquiresHaveExactlyOneWinner races two holders, on a Lease that
// does not exist yet (both create) and on one that has expired (both
// update the same resourceVersion).
func TestRacingAcquiresHaveExactlyOneWinner(t *testing.T) {
	env.Need(t)
	for _, start := range []string{"absent", "expired"} {
		t.Run(start, func(t *testing.T) {
			for round := range 10 {
				ns := env.Namespace(t, nil)
				if start == "expired" {
					if _, err := Acquire(t.Context(), env.Client, opts(ns, "crashed/0", t0.Add(-time.Hour))); err != nil {
						t.Fatal(err)
					}
				}
				holders := []string{"cronjob/1", "manual/2"}
				errs := make([]error, len(holders))
				var ready, done sync.WaitGroup
				gate := make(chan struct{})
				for i, h := range holders {
					ready.Add(1)
					done.Add(1)
					go func() {
						defer done.Done()
						ready.Done()
						<-gate
						_, errs[i] = Acquire(t.Context(), env.Client, opts(ns, h, t0))
					}()
				}
				ready.Wait()
				close(gate)
				done.Wait()

				var winners []string
				for i, err := range errs {
					switch {
					case err == nil:
						winners = append(winners, holders[i])
					case !errors.Is(err, ErrHeld):
						t.Errorf("round %d: %s: %v, want success or ErrHeld", round, holders[i], err)
					}
				}
				if len(winners) != 1 {
					t.Fatalf("round %d: winners %v, want exactly one (errors %v)", round, winners, errs)
				}
				if got := holderInCluster(t, ns); got != winners[0] {
					t.Errorf("round %d: holderIdentity = %q, want the winner %s", round, got, winners[0])
				}
				for i, err := range errs {
					var held *HeldError
					if errors.As(err, &held) && held.Holder != winners[0] {
						t.Errorf("round %d: %s was told %q holds it, want %s", round, holders[i], held.Holder, winners[0])
					}
				}
			}
		})
	}
}

func TestOptionsAreChecked(t *testing.T) {
	env.Need(t)
	for name, o := range map[string]Options{
		"no name":   {Namespace: "x", Holder: "h"},
		"no holder": {Namespace: "x", Name: "scan"},
	} {
		if _, err := Acquire(t.Context(), env.Client, o); err == nil {
			t.Errorf("%s: Acquire succeeded", name)
		}
	}
}
