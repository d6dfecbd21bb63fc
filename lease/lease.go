// Package lease keeps two driftscan runs from doing the same work at once: a
// scan takes a coordination.k8s.io/v1 Lease before it notifies and gives it
// back after it has saved its state, so a manual run and the CronJob (or two
// CronJob runs that overlap in spite of concurrencyPolicy: Forbid) never
// notify twice.
//
// A Lease is free when it has no holder, or when its holder stopped renewing
// it: renewTime + leaseDurationSeconds lies in the past. Every write carries
// the resourceVersion it read
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions),
// so of two runs that race for the same Lease exactly one wins; the other
// reads the winner's Lease and gets ErrHeld.
//
// Work that may outlast the Lease's Duration runs under Keep, which renews
// it and ends the work's context before the Lease could be taken over.
//
// It needs get and update on the Lease (both can be limited by
// resourceNames), and create on leases in its namespace unless the Lease
// already exists: Release clears the holder and keeps the object.
package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// DefaultDuration is how long a Lease stays taken without a renewal, with
// DefaultOptions.
const DefaultDuration = 5 * time.Minute

// Options name the Lease and who takes it. Start from DefaultOptions.
type Options struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Holder is written to spec.holderIdentity and named to whoever finds
	// the Lease taken: DefaultHolder is the host (a pod's name) and the
	// process id.
	Holder string
	// Duration is how long the Lease stays taken without a renewal: after
	// that another holder may take it over. It is stored in whole seconds,
	// rounded up.
	Duration time.Duration
	// Now is the clock.
	Now func() time.Time
}

// DefaultOptions returns a Lease held by DefaultHolder for DefaultDuration.
// Namespace and Name are left to the caller.
func DefaultOptions() Options {
	return Options{Holder: DefaultHolder(), Duration: DefaultDuration, Now: time.Now}
}

// DefaultHolder is the host name (in a pod, the pod's name) and the process
// id, as host/pid.
func DefaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// ErrHeld is returned by Acquire when another holder has the Lease and it
// has not expired. The error is a *HeldError that names the holder.
var ErrHeld = errors.New("lease is held by another holder")

// ErrLost is returned by Renew and Release when the Lease is no longer
// ours: it expired and another holder took it, or it was deleted.
var ErrLost = errors.New("lease is no longer ours")

// HeldError says who holds a Lease and until when.
type HeldError struct {
	Namespace, Name string
	Holder          string
	// Expires is when the holder's Lease runs out unless renewed.
	Expires time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease %s/%s is held by %q until %s", e.Namespace, e.Name, e.Holder, e.Expires.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lease is a Lease this process holds.
type Lease struct {
	client kubernetes.Interface
	opts   Options
	// Expires is when the Lease runs out unless renewed.
	Expires time.Time
}

// Holder is the holder identity written to the Lease.
func (l *Lease) Holder() string { return l.opts.Holder }

// String is namespace/name.
func (l *Lease) String() string { return l.opts.Namespace + "/" + l.opts.Name }

// attempts bounds how often Acquire reads again after losing a race on
// create or update.
const attempts = 5

// Acquire takes the Lease: it creates it when absent and takes it over when
// it has no holder, when it is ours already, or when it has expired. A Lease
// another holder has and that has not expired gives a *HeldError (ErrHeld).
// When two callers race, the one whose write lands first wins; the other
// reads the Lease again and gets ErrHeld.
func Acquire(ctx context.Context, client kubernetes.Interface, opts Options) (*Lease, error) {
	if opts.Namespace == "" || opts.Name == "" {
		return nil, errors.New("lease: namespace and name are required")
	}
	if opts.Holder == "" {
		return nil, fmt.Errorf("lease %s/%s: holder is required", opts.Namespace, opts.Name)
	}
	if opts.Duration <= 0 {
		opts.Duration = DefaultDuration
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Lease{client: client, opts: opts}
	leases := client.CoordinationV1().Leases(opts.Namespace)
	for attempt := 1; ; attempt++ {
		cur, err := leases.Get(ctx, opts.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			now := opts.Now()
			obj := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name:      opts.Name,
					Namespace: opts.Namespace,
					Labels:    map[string]string{"app.kubernetes.io/managed-by": "driftscan"},
				},
			}
			l.take(obj, now)
			_, err = leases.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
			if err == nil {
				return l, nil
			}
			if apierrors.IsAlreadyExists(err) && attempt < attempts {
				continue // another holder created it first: read who
			}
			return nil, fmt.Errorf("create lease %s: %w", l, err)
		}
		if err != nil {
			return nil, fmt.Errorf("get lease %s: %w", l, err)
		}
		now := opts.Now()
		if holder := holderOf(cur); holder != "" && holder != opts.Holder {
			if exp, ok := expiry(cur); ok && !exp.Before(now) {
				return nil, &HeldError{Namespace: opts.Namespace, Name: opts.Name, Holder: holder, Expires: exp}
			}
		}
		l.take(cur, now)
		_, err = leases.Update(ctx, cur, metav1.UpdateOptions{FieldManager: fieldManager})
		if err == nil {
			return l, nil
		}
		if apierrors.IsConflict(err) && attempt < attempts {
			continue // someone wrote it since we read it: read again
		}
		return nil, fmt.Errorf("update lease %s: %w", l, err)
	}
}

// fieldManager is the field manager of every write to a Lease.
const fieldManager = "driftscan"

// take makes obj ours from now, counting a transition when the holder
// changes.
func (l *Lease) take(obj *coordinationv1.Lease, now time.Time) {
	prev := holderOf(obj)
	holder := l.opts.Holder
	secs := int32((l.opts.Duration + time.Second - 1) / time.Second)
	t := metav1.NewMicroTime(now)
	obj.Spec.HolderIdentity = &holder
	obj.Spec.LeaseDurationSeconds = &secs
	obj.Spec.RenewTime = &t
	if prev != holder {
		obj.Spec.AcquireTime = &t
		if obj.ResourceVersion != "" {
			n := int32(1)
			if obj.Spec.LeaseTransitions != nil {
				n = *obj.Spec.LeaseTransitions + 1
			}
			obj.Spec.LeaseTransitions = &n
		}
	}
	l.Expires = now.Add(time.Duration(secs) * time.Second)
}

// holderOf is the Lease's holder, "" when it has none.
func holderOf(obj *coordinationv1.Lease) string {
	if obj.Spec.HolderIdentity == nil {
		return ""
	}
	return *obj.Spec.HolderIdentity
}

// expiry is renewTime (else acquireTime) + leaseDurationSeconds; false when
// the Lease has neither time, which makes it free.
func expiry(obj *coordinationv1.Lease) (time.Time, bool) {
	t := obj.Spec.RenewTime
	if t == nil {
		t = obj.Spec.AcquireTime
	}
	if t == nil {
		return time.Time{}, false
	}
	var secs int32
	if obj.Spec.LeaseDurationSeconds != nil {
		secs = *obj.Spec.LeaseDurationSeconds
	}
	return t.Add(time.Duration(secs) * time.Second), true
}

// Renew moves the Lease's renewTime to now, so it runs out Duration from
// now. It returns ErrLost when the Lease is no longer ours.
func (l *Lease) Renew(ctx context.Context) error {
	return l.write(ctx, "renew", func(obj *coordinationv1.Lease) { l.take(obj, l.opts.Now()) })
}

// Release gives the Lease back: it clears the holder, so the next Acquire
// takes it at once, and keeps the object. When the Lease is no longer ours
// (it expired and another holder took it) it is left alone and ErrLost is
// returned.
func (l *Lease) Release(ctx context.Context) error {
	return l.write(ctx, "release", func(obj *coordinationv1.Lease) {
		obj.Spec.HolderIdentity = nil
		l.Expires = time.Time{}
	})
}

// write changes the Lease with change while it is still ours, reading it
// again on a conflict.
func (l *Lease) write(ctx context.Context, verb string, change func(*coordinationv1.Lease)) error {
	leases := l.client.CoordinationV1().Leases(l.opts.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := leases.Get(ctx, l.opts.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("it was deleted: %w", ErrLost)
		}
		if err != nil {
			return err
		}
		if holder := holderOf(cur); holder != l.opts.Holder {
			if holder == "" {
				return fmt.Errorf("it has no holder: %w", ErrLost)
			}
			return fmt.Errorf("%q holds it now: %w", holder, ErrLost)
		}
		change(cur)
		_, err = leases.Update(ctx, cur, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s lease %s: %w", verb, l, err)
	}
	return nil
}
