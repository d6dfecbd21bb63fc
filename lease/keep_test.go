package lease

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// realOpts is a Lease named scan in ns held by holder for d, on the real
// clock: Keep's renewals are timed.
func realOpts(ns, holder string, d time.Duration) Options {
	o := DefaultOptions()
	o.Namespace, o.Name, o.Holder, o.Duration = ns, "scan", holder, d
	return o
}

// TestKeepHoldsTheLeaseWhileWorkRuns: the Lease was taken once and never
// renewed, so work under it that outlasted Duration (a slow PagerDuty, many
// messages) ran while a second run could take the Lease over and notify
// the same drift. Keep renews it: past Duration another holder is still
// refused.
func TestKeepHoldsTheLeaseWhileWorkRuns(t *testing.T) {
	ns := env.Namespace(t, nil)
	l, err := Acquire(t.Context(), env.Client, realOpts(ns, "cronjob/1", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	held, stop := l.Keep(t.Context())
	time.Sleep(3 * time.Second) // longer than the Lease lasts unrenewed
	if _, err := Acquire(t.Context(), env.Client, realOpts(ns, "manual/2", 2*time.Second)); !errors.Is(err, ErrHeld) {
		t.Errorf("a second holder past Duration: %v, want ErrHeld", err)
	}
	if err := context.Cause(held); err != nil {
		t.Errorf("the work's context ended: %v", err)
	}
	stop()
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestKeepEndsTheWorkWhenTheLeaseIsLost: another holder took the Lease
// (it ran out while this process was stopped): the work's context ends.
func TestKeepEndsTheWorkWhenTheLeaseIsLost(t *testing.T) {
	ns := env.Namespace(t, nil)
	l, err := Acquire(t.Context(), env.Client, realOpts(ns, "cronjob/1", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	held, stop := l.Keep(t.Context())
	defer stop()
	cur, err := env.Client.CoordinationV1().Leases(ns).Get(t.Context(), "scan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	thief := "manual/2"
	cur.Spec.HolderIdentity = &thief
	if _, err := env.Client.CoordinationV1().Leases(ns).Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the work's context did not end after the Lease was taken")
	}
	if err := context.Cause(held); !errors.Is(err, ErrLost) {
		t.Errorf("cause %v, want ErrLost", err)
	}
}

// TestKeepEndsTheWorkBeforeTheLeaseRunsOut: when no renewal gets through
// (the API server away), the work's context ends while the Lease is still
// this process's: no other holder can have taken it yet.
func TestKeepEndsTheWorkBeforeTheLeaseRunsOut(t *testing.T) {
	ns := env.Namespace(t, nil)
	var down atomic.Bool
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			if down.Load() {
				return nil, errors.New("connection refused")
			}
			return rt.RoundTrip(r)
		})
	})
	flaky, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(t.Context(), flaky, realOpts(ns, "cronjob/1", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	held, stop := l.Keep(t.Context())
	defer stop()
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the work's context did not end while no renewal got through")
	}
	if err := context.Cause(held); !errors.Is(err, ErrExpiring) {
		t.Errorf("cause %v, want ErrExpiring", err)
	}
	if _, err := Acquire(t.Context(), env.Client, realOpts(ns, "manual/2", 3*time.Second)); !errors.Is(err, ErrHeld) {
		t.Errorf("when the work stopped, another holder could take the Lease already: %v", err)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
