// Package breakglass pauses GitOps reconciliation of one app with a deadline,
// so that a live hotfix survives until it is carried back to Git, and
// restores exactly what it paused. It is the only part of driftscan that
// writes to the cluster, and it writes only the fields it names: a merge
// patch with field manager driftscan-breakglass, conditional on the object's
// resourceVersion, so a concurrent change makes it fail rather than
// overwrite.
package breakglass

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/discover"
)

// FieldManager is the manager of every write breakglass makes.
const FieldManager = "driftscan-breakglass"

// Annotations breakglass writes on the paused object.
const (
	AnnotationBy    = "driftscan.dev/breakglass-by"
	AnnotationWhy   = "driftscan.dev/breakglass-reason"
	AnnotationSince = "driftscan.dev/breakglass-since"
	AnnotationUntil = "driftscan.dev/breakglass-until"
	// AnnotationSaved keeps what suspend changed as it was, as JSON, so
	// resume restores it exactly: Argo CD's spec.syncPolicy.automated, or
	// Flux's spec.suspend (null when it was absent).
	AnnotationSaved = "driftscan.dev/breakglass-saved-automated"
	// AnnotationBackportPR asks the scheduled scan to carry the hotfix back
	// to Git as a pull request as soon as it is made (suspend
	// --backport-pr).
	AnnotationBackportPR = "driftscan.dev/breakglass-backport-pr"
)

var annotations = []string{AnnotationBy, AnnotationWhy, AnnotationSince, AnnotationUntil, AnnotationSaved, AnnotationBackportPR}

// Kinds breakglass can pause.
var (
	Application   = discover.Applications
	Kustomization = discover.Kustomizations
	HelmRelease   = discover.HelmReleases
)

// Target is the reconciler object of one app.
type Target struct {
	Resource        schema.GroupVersionResource
	Namespace, Name string
}

func (t Target) String() string { return t.Kind() + "/" + t.Namespace + "/" + t.Name }

// Kind is the kind of the target's resource.
func (t Target) Kind() string {
	return map[string]string{"applications": "Application", "kustomizations": "Kustomization", "helmreleases": "HelmRelease", "configmaps": "ConfigMap"}[t.Resource.Resource]
}

func (t Target) argo() bool { return t.Resource == Application }

// SuspendOptions say why and for how long.
type SuspendOptions struct {
	Reason string
	TTL    time.Duration
	// MaxTTL bounds TTL; default 12h.
	MaxTTL time.Duration
	// Who is the identity that suspends (from the kubeconfig).
	Who    string
	Now    func() time.Time
	DryRun bool
	// BackportPR asks the scheduled scan to open the pull request that
	// carries the hotfix back to Git once it is made (AnnotationBackportPR).
	BackportPR bool
	// ArgoNamespace is Argo CD's own namespace: where argocd-cm is, and
	// a parent Application its tracking names without <namespace>_ (an
	// Application in another namespace is tracked as <namespace>_<name>).
	// "" for the Application's own.
	ArgoNamespace string
}

// DefaultSuspendOptions returns the defaults: a 12h cap.
func DefaultSuspendOptions() SuspendOptions {
	return SuspendOptions{MaxTTL: 12 * time.Hour, Now: time.Now}
}

// Change says exactly what a command changed (or, with DryRun, would change).
type Change struct {
	Target Target
	// Patch is the merge patch sent.
	Patch json.RawMessage
	// Fields lists what the patch changes, for people.
	Fields []string
	DryRun bool
	// requestedAt is the reconcile.fluxcd.io/requestedAt a Flux suspension
	// set, for Settle.
	requestedAt string
}

// ErrRefused marks a refusal (a missing reason, a TTL over the cap, drift
// that resume would revert): nothing was written.
var ErrRefused = errors.New("refused")

// Suspend pauses automated reconciliation of t until now+TTL.
func Suspend(ctx context.Context, client dynamic.Interface, t Target, opts SuspendOptions) (Change, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxTTL == 0 {
		opts.MaxTTL = 12 * time.Hour
	}
	switch {
	case opts.Reason == "":
		return Change{}, fmt.Errorf("%w: suspend %s: --reason is required (an incident, a ticket)", ErrRefused, t)
	case opts.TTL <= 0:
		return Change{}, fmt.Errorf("%w: suspend %s: --ttl must be positive", ErrRefused, t)
	case opts.TTL > opts.MaxTTL:
		return Change{}, fmt.Errorf("%w: suspend %s: --ttl %s is above --max-ttl %s", ErrRefused, t, opts.TTL, opts.MaxTTL)
	}
	return onConflict(ctx, func() (Change, error) { return suspend(ctx, client, t, opts) })
}

// suspend is one attempt of Suspend, from a fresh read of the object.
func suspend(ctx context.Context, client dynamic.Interface, t Target, opts SuspendOptions) (Change, error) {
	obj, err := client.Resource(t.Resource).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return Change{}, fmt.Errorf("get %s: %w", t, err)
	}
	if _, ok := obj.GetAnnotations()[AnnotationUntil]; ok {
		return Change{}, fmt.Errorf("%w: %s is already suspended until %s", ErrRefused, t, obj.GetAnnotations()[AnnotationUntil])
	}
	now := opts.Now().UTC().Truncate(time.Second)
	ann := map[string]any{
		AnnotationBy:    opts.Who,
		AnnotationWhy:   opts.Reason,
		AnnotationSince: now.Format(time.RFC3339),
		AnnotationUntil: now.Add(opts.TTL).Format(time.RFC3339),
	}
	fields := []string{"metadata.annotations (who, why, since, until)"}
	if opts.BackportPR {
		ann[AnnotationBackportPR] = "true"
		fields[0] = "metadata.annotations (who, why, since, until, backport-pr)"
	}
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion(), "annotations": ann}}
	requestedAt := ""
	if t.argo() {
		automated, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "syncPolicy", "automated")
		if !found {
			return Change{}, fmt.Errorf("%w: %s has no automated sync to suspend", ErrRefused, t)
		}
		why, err := restorer(ctx, client, obj, cmp.Or(opts.ArgoNamespace, t.Namespace))
		if err != nil {
			return Change{}, fmt.Errorf("suspend %s: %w", t, err)
		}
		if why != "" {
			return Change{}, fmt.Errorf("%w: suspend %s would not last: %s", ErrRefused, t, why)
		}
		saved, err := json.Marshal(automated)
		if err != nil {
			return Change{}, err
		}
		ann[AnnotationSaved] = string(saved)
		patch["spec"] = map[string]any{"syncPolicy": map[string]any{"automated": nil}}
		fields = append(fields, "spec.syncPolicy.automated removed (saved in "+AnnotationSaved+")")
	} else {
		was, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "suspend")
		if was == true {
			return Change{}, fmt.Errorf("%w: %s is already suspended (spec.suspend: true), not by driftscan", ErrRefused, t)
		}
		if !found {
			was = nil
		}
		saved, _ := json.Marshal(was)
		ann[AnnotationSaved] = string(saved)
		// Flux's controllers copy this annotation to
		// status.lastHandledReconcileAt each time they handle the object,
		// suspended or not: Settle waits for it.
		requestedAt = opts.Now().UTC().Format(time.RFC3339Nano)
		ann[fluxRequestedAt] = requestedAt
		patch["spec"] = map[string]any{"suspend": true}
		fields = append(fields, "spec.suspend set to true", "metadata.annotations "+fluxRequestedAt+" (the controller answers when it has seen the suspension)")
	}
	ch, err := apply(ctx, client, t, patch, fields, opts.DryRun)
	ch.requestedAt = requestedAt
	return ch, err
}

// ResumeOptions say whether to resume over unbackported drift.
type ResumeOptions struct {
	// Blocking are findings that the next sync would revert (pipeline and
	// human drift that Git does not contain). Resume refuses while there are
	// any, unless Force.
	Blocking []string
	// OpenPullRequest names the hotfix's pull request while it is open and
	// not merged: resuming then would revert what it carries, so Resume
	// refuses, unless Force.
	OpenPullRequest string
	Force           bool
	DryRun          bool
	// Now stamps the Flux reconcile request; nil means time.Now.
	Now func() time.Time
}

// Resume restores exactly what Suspend saved and removes its annotations.
func Resume(ctx context.Context, client dynamic.Interface, t Target, opts ResumeOptions) (Change, error) {
	if opts.OpenPullRequest != "" && !opts.Force {
		return Change{}, fmt.Errorf("%w: resume %s: its pull request %s is open and not merged: merge it first, so that the next sync applies the hotfix instead of reverting it (or use --force)",
			ErrRefused, t, opts.OpenPullRequest)
	}
	if len(opts.Blocking) > 0 && !opts.Force {
		return Change{}, fmt.Errorf("%w: resume %s would revert drift that is not in Git yet (backport it or use --force):\n  %s",
			ErrRefused, t, joinLines(opts.Blocking))
	}
	return onConflict(ctx, func() (Change, error) { return resume(ctx, client, t, opts) })
}

// resume is one attempt of Resume, from a fresh read of the object.
func resume(ctx context.Context, client dynamic.Interface, t Target, opts ResumeOptions) (Change, error) {
	obj, err := client.Resource(t.Resource).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return Change{}, fmt.Errorf("get %s: %w", t, err)
	}
	current := obj.GetAnnotations()
	if _, ok := current[AnnotationUntil]; !ok {
		return Change{}, fmt.Errorf("%w: %s is not suspended by driftscan", ErrRefused, t)
	}
	ann := map[string]any{}
	for _, a := range annotations {
		if _, ok := current[a]; ok {
			ann[a] = nil
		}
	}
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion(), "annotations": ann}}
	fields := []string{"metadata.annotations (breakglass) removed"}
	var saved any
	if err := json.Unmarshal([]byte(current[AnnotationSaved]), &saved); err != nil {
		return Change{}, fmt.Errorf("%s: annotation %s: %w", t, AnnotationSaved, err)
	}
	if t.argo() {
		patch["spec"] = map[string]any{"syncPolicy": map[string]any{"automated": saved}}
		fields = append(fields, "spec.syncPolicy.automated restored")
	} else {
		patch["spec"] = map[string]any{"suspend": saved}
		// As `flux resume` does: reconcile now, not at the next interval.
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		ann[fluxRequestedAt] = now().UTC().Format(time.RFC3339Nano)
		fields = append(fields, "spec.suspend restored", "metadata.annotations "+fluxRequestedAt+" (reconcile now, as flux resume does)")
	}
	return apply(ctx, client, t, patch, fields, opts.DryRun)
}

func apply(ctx context.Context, client dynamic.Interface, t Target, patch map[string]any, fields []string, dryRun bool) (Change, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return Change{}, err
	}
	ch := Change{Target: t, Patch: data, Fields: fields, DryRun: dryRun}
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = client.Resource(t.Resource).Namespace(t.Namespace).Patch(ctx, t.Name, types.MergePatchType, data, opts)
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)) {
		return Change{}, fmt.Errorf("patch %s timed out (a slow admission webhook?): %s: %w", t, whatHappened(ctx, client, t, patch), err)
	}
	if apierrors.IsConflict(err) {
		return Change{}, fmt.Errorf("%s changed while breakglass was writing it; nothing was changed, run the command again: %w", t, err)
	}
	if err != nil {
		return Change{}, fmt.Errorf("patch %s: %w", t, err)
	}
	return ch, nil
}

// onConflict runs attempt again, from a fresh read, when the object changed
// between its read and its conditional write. A reconciler writes its
// object's status all the time (the real Argo CD does so right after it
// self-heals, which is when a person reaches for breakglass), and that is
// no reason to give up; each attempt still writes only over what it read.
func onConflict(ctx context.Context, attempt func() (Change, error)) (Change, error) {
	var ch Change
	var err error
	delay := 100 * time.Millisecond
	for i := 0; i < 6; i++ {
		ch, err = attempt()
		if !apierrors.IsConflict(err) {
			return ch, err
		}
		select {
		case <-ctx.Done():
			return ch, err
		case <-time.After(delay):
		}
		delay *= 2
	}
	return ch, err
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

// Suspension is one app paused by breakglass.
type Suspension struct {
	Target       Target
	By, Reason   string
	Since, Until time.Time
	// BackportPR: the scheduled scan opens the hotfix's pull request.
	BackportPR bool
}

// Expired reports whether the suspension is past its deadline at now.
func (s Suspension) Expired(now time.Time) bool { return !now.Before(s.Until) }

// Left is the time left at now (negative when expired).
func (s Suspension) Left(now time.Time) time.Duration { return s.Until.Sub(now) }

// List returns every object of the given kinds that breakglass suspended,
// with one LIST per kind, in namespace ns ("" for all).
func List(ctx context.Context, client dynamic.Interface, ns string, resources ...schema.GroupVersionResource) ([]Suspension, error) {
	var out []Suspension
	var errs []error
	for _, gvr := range resources {
		list, err := client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // the kind is not installed
			}
			errs = append(errs, fmt.Errorf("list %s: %w", gvr.Resource, err))
			continue
		}
		for _, item := range list.Items {
			if item.GetAnnotations()[AnnotationUntil] == "" {
				continue
			}
			s, err := suspensionOf(Target{Resource: gvr, Namespace: item.GetNamespace(), Name: item.GetName()}, item.GetAnnotations())
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target.String() < out[j].Target.String() })
	return out, errors.Join(errs...)
}

// whatHappened looks, after a timeout, at whether the write landed: the
// patch was conditional on the resourceVersion it names.
func whatHappened(ctx context.Context, client dynamic.Interface, t Target, patch map[string]any) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	obj, err := client.Resource(t.Resource).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return "could not check whether it was applied; run `driftscan breakglass status`"
	}
	rv, _, _ := unstructured.NestedString(patch, "metadata", "resourceVersion")
	if obj.GetResourceVersion() == rv {
		return "nothing was changed"
	}
	return "the object has changed since (perhaps by this write); check with `driftscan breakglass status`"
}

// suspensionOf reads the suspension of t from its annotations.
func suspensionOf(t Target, a map[string]string) (Suspension, error) {
	s := Suspension{Target: t, By: a[AnnotationBy], Reason: a[AnnotationWhy], BackportPR: a[AnnotationBackportPR] == "true"}
	var err error
	if s.Until, err = time.Parse(time.RFC3339, a[AnnotationUntil]); err != nil {
		return s, fmt.Errorf("%s: annotation %s: %w", t, AnnotationUntil, err)
	}
	if s.Since, err = time.Parse(time.RFC3339, a[AnnotationSince]); err != nil {
		return s, fmt.Errorf("%s: annotation %s: %w", t, AnnotationSince, err)
	}
	return s, nil
}

// Read is the suspension of t; an error matching ErrRefused when t is not
// suspended by driftscan.
func Read(ctx context.Context, client dynamic.Interface, t Target) (Suspension, error) {
	obj, err := client.Resource(t.Resource).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return Suspension{}, fmt.Errorf("get %s: %w", t, err)
	}
	if obj.GetAnnotations()[AnnotationUntil] == "" {
		return Suspension{}, fmt.Errorf("%w: %s is not suspended by driftscan", ErrRefused, t)
	}
	return suspensionOf(t, obj.GetAnnotations())
}
