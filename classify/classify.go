// Package classify labels each drifted field with the actor that made it:
// a mutating webhook, an operator, a deploy pipeline or a human. It is pure:
// data in, labels out. The scanner reads the cluster and hands it what it
// needs (managedFields, matching webhooks, autoscalers); this package takes no
// Kubernetes client.
package classify

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/calricon/driftscan/report"
)

// Entry is one managedFields entry of the live object, reduced to what
// classification reads.
type Entry struct {
	Manager     string
	Operation   string // Apply or Update
	Subresource string
	Time        time.Time
}

// Object is the live object a change belongs to.
type Object struct {
	Group, Version, Kind, Namespace, Name string
	// Entries are all the object's managedFields entries.
	Entries []Entry
	// Webhooks are the MutatingWebhookConfigurations whose rules and
	// selectors match the object (see MatchWebhooks).
	Webhooks []string
	// Scalers are the autoscalers that target the object.
	Scalers []Scaler
	// Tracking is what reconcilers write on this app's objects.
	Tracking Tracking
}

// Scaler is an autoscaler that targets an object and owns some of its fields.
type Scaler struct {
	Kind string // HorizontalPodAutoscaler, VerticalPodAutoscaler, ScaledObject
	Name string
}

// Change is one raw difference between Git and live, before classification.
type Change struct {
	// Path is the structured-merge-diff path string.
	Path string
	Type report.Type
	// Owner is the managedFields entry that owns Path live, nil when none.
	Owner *Entry
	// NewKey says an Added path is a new keyed list item (a container, a
	// volume) or a new map key (an annotation, a label), rather than a
	// field of a struct Git declares.
	NewKey bool
	// Git and Live are the two values as text, as report.Finding holds
	// them (already masked; the empty string as `""`, absent as "").
	Git, Live string
	// Attribution names the user behind the change, from the audit log;
	// nil when the scan read none. User rules may match it, and it becomes
	// the finding's Attribution.
	Attribution *report.Attribution

	// What the scanner established about the two values, for dismiss:
	// ZeroGit: Git's value is its type's zero value (0, false, "", or a
	// struct of them). Omitted: the API type does not store that value
	// (decoded into the type and encoded again, it is gone). Contained:
	// for a Changed structure, live holds everything Git declares (Git's
	// zero values may be missing) and Git's value is what the applier last
	// sent, as far as the object tells; Filled is then what live has
	// beyond it, as JSON, "" when nothing.
	// InLastApplied: the path is in the live object's
	// kubectl.kubernetes.io/last-applied-configuration (for an Added
	// path, and a Changed one ending in .replicas). NullGit: an Added
	// path is at or under a field Git's object writes as null (a template
	// rendering an unset value): the applier sent no value, and what the
	// server filled in is its default.
	ZeroGit, Omitted bool
	Contained        bool
	Filled           string
	InLastApplied    bool
	NullGit          bool
	// EmptyGit: an Added path is a whole value (an atomic list) that Git
	// declares empty (`rules: []`, Git then "[]") and live fills: the scan
	// compares an empty list as absent, but the applier sends it at every
	// sync.
	EmptyGit bool
	// ContainerImage, for an Added imagePullPolicy, is the live image of
	// its container (the default depends on it); "" for any other path.
	ContainerImage string
}

// Result is the verdict on one change.
type Result struct {
	// Drift is false when the change is no drift at all: a server default,
	// or a field an operator owns that Git leaves out.
	Drift   bool
	Finding report.Finding
	// Reason and Detail say why a change is no drift (Drift false).
	Reason report.Reason
	Detail string
}

// Options configure a Classifier.
type Options struct {
	// Appliers are the field managers that stand for Git.
	Appliers []string
	// Rules are user rules, tried in order before the built-in ones.
	Rules []Rule
}

// Classifier decides the class of each change.
type Classifier struct {
	appliers map[string]bool
	rules    []Rule
}

// New validates the rules and returns a Classifier.
func New(opts Options) (*Classifier, error) {
	c := &Classifier{appliers: map[string]bool{}}
	for _, a := range opts.Appliers {
		c.appliers[a] = true
	}
	for i, r := range opts.Rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
		c.rules = append(c.rules, r)
	}
	c.rules = append(c.rules, builtin...)
	return c, nil
}

// IsApplier reports whether manager stands for Git.
func (c *Classifier) IsApplier(manager string) bool { return c.appliers[manager] }

// ClassOf returns the class of a managedFields entry by the user rules and
// then the built-in ones, and unknown when none matches. Appliers have no
// class of their own: they are Git.
func (c *Classifier) ClassOf(e Entry) report.Class { return c.classOf(e, nil) }

// classOf is ClassOf with the finding's attribution, for the rules that
// match users and groups.
func (c *Classifier) classOf(e Entry, a *report.Attribution) report.Class {
	for _, r := range c.rules {
		if r.MatchesActor(e, a) {
			return r.Class
		}
	}
	return report.ClassUnknown
}

// Classify decides whether a change is drift and, if it is, who made it.
func (c *Classifier) Classify(o Object, ch Change) Result {
	f := report.Finding{Path: ch.Path, Type: ch.Type, Git: ch.Git, Live: ch.Live, Class: report.ClassUnknown, Attribution: ch.Attribution}
	owner := ch.Owner
	fromAudit := false
	if owner == nil && ch.Type != report.TypeAdded {
		// No managedFields entry says who: the audit event that removed (or
		// set) the field does, when there is one.
		owner = entryOf(ch.Attribution)
		fromAudit = owner != nil
	}
	if owner == nil && ch.Type == report.TypeRemoved {
		owner = c.newestTaker(o)
	}
	if owner != nil {
		f.Manager, f.Operation, f.Subresource = owner.Manager, owner.Operation, owner.Subresource
	}
	r := c.verdict(o, ch, owner, fromAudit, f)
	if r.Drift && owner != nil && !owner.Time.IsZero() {
		// Only a finding shows when its owner wrote: most changes a scan
		// meets are dismissed, and the time was formatted for each.
		r.Finding.Time = owner.Time.UTC().Format(time.RFC3339)
	}
	return r
}

// verdict is Classify's answer on ch once its owner is known: dismissed,
// or a finding without the owner's time.
func (c *Classifier) verdict(o Object, ch Change, owner *Entry, fromAudit bool, f report.Finding) Result {
	if r, ok := c.dismiss(o, ch, f); ok {
		return r
	}
	switch ch.Type {
	case report.TypeAdded:
		return c.added(o, ch, owner, f)
	case report.TypeRemoved:
		if owner == nil {
			f.Hint = "Git declares this field and live has none; no manager that changed the object since the applier is on record"
			return Result{Drift: true, Finding: f}
		}
		f.Class = c.classOf(*owner, ch.Attribution)
		if fromAudit {
			f.Hint = fmt.Sprintf("removed live by a %s request of %s (audit ID %s)", ch.Attribution.Verb, owner.Manager, ch.Attribution.AuditID)
		} else {
			f.Hint = fmt.Sprintf("removed live; %s is the newest manager that took fields from the applier", owner.Manager)
		}
		return Result{Drift: true, Finding: f}
	default:
		return c.changed(o, ch, owner, f)
	}
}

// entryOf is the write an attribution names, as a managedFields entry would
// record it; nil unless it names one request (exact, or a single candidate).
func entryOf(a *report.Attribution) *Entry {
	if !a.Known() || len(a.Candidates) > 0 || a.Requester {
		return nil
	}
	e := &Entry{Manager: a.FieldManager, Subresource: a.Subresource}
	if e.Manager == "" {
		return nil // an export without the request URI: the manager is not known
	}
	if a.Verb == "create" || a.Verb == "update" {
		e.Operation = "Update"
	}
	if t, err := time.Parse(time.RFC3339Nano, a.Time); err == nil {
		e.Time = t.Truncate(time.Second)
	}
	return e
}

func (c *Classifier) added(o Object, ch Change, owner *Entry, f report.Finding) Result {
	if owner == nil && ch.Path == ".spec.replicas" && defaultsToOneReplica(o) && ch.Live != "1" {
		return c.unrecordedScale(o, ch, f)
	}
	if owner == nil {
		if !ch.NewKey && !notADefault(o, ch) {
			// A scalar or struct filled in under a parent Git declares:
			// a server default. A webhook's field there reads the same
			// in managedFields (both are owned by nobody); when one
			// matches the object, the explanation says so. Where the
			// server fills nothing in, or would fill in another value
			// (notADefault), it is a mutation.
			detail := "no manager owns it, under a parent Git declares: a default the API server filled in"
			if len(o.Webhooks) > 0 {
				detail += fmt.Sprintf(", or a field MutatingWebhookConfiguration %s set at admission (managedFields do not tell the two apart)", strings.Join(o.Webhooks, ", "))
			}
			return dismissed(f, report.Defaulted, detail)
		}
		if len(o.Webhooks) > 0 {
			f.Class = report.ClassWebhook
			f.Actor = strings.Join(o.Webhooks, ",")
			f.Hint = fmt.Sprintf("no manager owns this field: injected at admission, most likely by MutatingWebhookConfiguration %s; add it to Git or ignore it", strings.Join(o.Webhooks, ", "))
		} else {
			// Admission runs after the field manager has recorded who
			// wrote what, so what it adds is owned by nobody; with no
			// webhook registered for the object, the API server's own
			// admission plugins (or a webhook since removed) added it.
			f.Class = report.ClassUnknown
			f.Actor = "kube-apiserver"
			f.Hint = "no manager owns this field and no MutatingWebhookConfiguration matches the object: the API server or one of its admission plugins added it at admission (or a webhook that is no longer registered); add it to Git or ignore it"
		}
		return Result{Drift: true, Finding: f}
	}
	if c.appliers[owner.Manager] {
		if owner.Operation != "Apply" {
			if ch.InLastApplied {
				// kubectl apply's three-way merge deletes what left the
				// last-applied configuration.
				f.Class = report.ClassUnknown
				f.Hint = fmt.Sprintf("Git no longer declares this field, but %s applied it at the last sync (it is in kubectl.kubernetes.io/last-applied-configuration): the next apply removes it", owner.Manager)
				return Result{Drift: true, Finding: f}
			}
			// Client-side appliers own the defaults of what they created.
			return dismissed(f, report.Defaulted, fmt.Sprintf("the client-side applier %s owns it and never sent it (it is not in its last-applied configuration): a default the API server filled in", owner.Manager))
		}
		// A server-side applier owns only what it sent: Git sent this field
		// at the last sync and no longer declares it.
		f.Class = report.ClassUnknown
		f.Hint = fmt.Sprintf("Git no longer declares this field, but %s applied it at the last sync: the next sync removes it", owner.Manager)
		return Result{Drift: true, Finding: f}
	}
	f.Class = c.classOf(*owner, ch.Attribution)
	if ch.EmptyGit {
		// Git does not leave it out: it declares the whole value empty,
		// and every sync empties what the other manager wrote (seen with
		// Argo CD, Flux and kubectl apply on an aggregated ClusterRole).
		f.Type = report.TypeChanged
		if f.Class == report.ClassOperator {
			f.Hint = c.operatorHint(o, ch, owner.Manager)
		}
		return Result{Drift: true, Finding: f}
	}
	if f.Class == report.ClassOperator {
		// An operator's own field that Git leaves out is not drift.
		return dismissed(f, report.OperatorOwned, fmt.Sprintf("%s owns it and Git leaves it out", owner.Manager))
	}
	return Result{Drift: true, Finding: f}
}

func (c *Classifier) changed(o Object, ch Change, owner *Entry, f report.Finding) Result {
	if owner == nil {
		f.Hint = "no manager owns the live value"
		return Result{Drift: true, Finding: f}
	}
	if c.appliers[owner.Manager] {
		f.Class = report.ClassUnknown
		f.Hint = fmt.Sprintf("the applier %s still owns this field: Git changed and was not applied yet, or the applier normalised the value", owner.Manager)
		if len(o.Webhooks) > 0 {
			f.Hint += fmt.Sprintf(", or MutatingWebhookConfiguration %s rewrote it at admission", strings.Join(o.Webhooks, ", "))
		}
		return Result{Drift: true, Finding: f}
	}
	f.Class = c.classOf(*owner, ch.Attribution)
	if f.Class == report.ClassOperator {
		f.Hint = c.operatorHint(o, ch, owner.Manager)
	}
	return Result{Drift: true, Finding: f}
}

// aggregationController is the field manager of kube-controller-manager's
// clusterrole-aggregation controller, which applies an aggregated
// ClusterRole's rules (pkg/controller/clusterroleaggregation).
const aggregationController = "clusterrole-aggregation-controller"

// operatorHint says how to end a fight between Git and an operator over a
// field both declare: the replica war with an HPA above all.
func (c *Classifier) operatorHint(o Object, ch Change, manager string) string {
	path := ch.Path
	for _, s := range o.Scalers {
		switch {
		case s.Kind == "HorizontalPodAutoscaler" && path == ".spec.replicas":
			return fmt.Sprintf("HorizontalPodAutoscaler %s owns spec.replicas: remove replicas from Git (or ignore /spec/replicas), or every sync fights the autoscaler", s.Name) + c.replicasWarning(o, ch)
		case s.Kind == "VerticalPodAutoscaler" && strings.Contains(path, ".resources"):
			return fmt.Sprintf("VerticalPodAutoscaler %s owns container resources: remove them from Git (or ignore them), or every sync fights the autoscaler", s.Name)
		case s.Kind == "ScaledObject" && path == ".spec.replicas":
			return fmt.Sprintf("KEDA ScaledObject %s owns spec.replicas: remove replicas from Git (or ignore /spec/replicas)", s.Name) + c.replicasWarning(o, ch)
		}
	}
	if o.Group == "rbac.authorization.k8s.io" && o.Kind == "ClusterRole" && path == ".rules" && manager == aggregationController {
		return "kube-controller-manager's clusterrole-aggregation controller builds this ClusterRole's rules from its aggregationRule: leave rules out of Git (or, for Argo CD, set ignoreAggregatedRoles in argocd-cm's resource.compareoptions), or every sync empties the role until the controller fills it again, and whoever it is bound to loses those permissions meanwhile"
	}
	if path == ".spec.replicas" && manager == "kube-controller-manager" {
		return "kube-controller-manager (an autoscaler) owns spec.replicas: remove replicas from Git (or ignore /spec/replicas), or every sync fights the autoscaler" + c.replicasWarning(o, ch)
	}
	return fmt.Sprintf("%s owns this field live: remove it from Git or ignore it, or every sync fights the operator", manager)
}

// replicasWarning says, from how the applier writes, how it fights the
// autoscaler and whether the commit that removes replicas from Git can
// delete them, so that the workload falls to its default, 1 replica, until
// the autoscaler scales it again; "" when nothing says so.
//   - Git's replicas are in the object's last-applied configuration (a
//     client-side apply: kubectl, Argo CD's default): kubectl apply's
//     three-way merge deletes what left that configuration (seen with
//     Argo CD: e2e TestArgoCDRemovesReplicasAnHPAScaled).
//   - A reconciler applies server-side: the autoscaler's scale took the
//     field from it, but each apply of Git's replicas (a reconcile, a
//     self-heal) forces it back until the autoscaler's next pass, and the
//     removal applied in that window deletes it (seen with Flux: e2e
//     TestFluxRemovesReplicasAnHPAScaled).
//   - The helm CLI (e2e TestHelmUpgradesOverARealHPA): server-side, it
//     does not force conflicts, so its upgrades fail rather than fight,
//     and the removal is safe; client-side, its three-way merge deletes
//     the replicas that left the chart, unless that upgrade is
//     server-side.
func (c *Classifier) replicasWarning(o Object, ch Change) string {
	if ch.InLastApplied {
		return "; replicas is in kubectl.kubernetes.io/last-applied-configuration, so the sync that removes it from Git deletes it and the workload falls to 1 replica until the autoscaler scales it again: first remove it there with `kubectl apply edit-last-applied` (and pause auto-sync meanwhile: each sync writes the annotation again)"
	}
	for _, e := range o.Entries {
		if e.Subresource != "" || !c.appliers[e.Manager] {
			continue
		}
		switch {
		case e.Operation == "Apply" && forcesOwnership(e.Manager):
			return fmt.Sprintf("; %s applies server-side, so each apply of Git's replicas (a reconcile, a self-heal) owns the field again until the autoscaler's next pass, and the commit that removes replicas, applied in that window, deletes them: the workload falls to 1 replica until the autoscaler scales it again. Suspend the app first (`driftscan breakglass suspend`), so that nothing applies Git's replicas before that commit, then push it and resume", e.Manager)
		case e.Manager == "helm" && e.Operation == "Apply":
			return "; helm applies server-side without forcing conflicts, so every `helm upgrade` of this release fails while the chart sets replicas (a conflict over .spec.replicas; --force-conflicts would take them and fight): remove them from the chart, an upgrade that leaves the autoscaler's value"
		case e.Manager == "helm" && e.Operation == "Update":
			return "; helm upgrades client-side, so each upgrade sets Git's replicas again, and the upgrade whose chart no longer sets them deletes them (its three-way merge with the release's last manifest): the workload falls to 1 replica until the autoscaler scales it again. Make that upgrade server-side (`helm upgrade --server-side=true`), which leaves the autoscaler's value"
		}
	}
	return ""
}

// unrecordedScale judges replicas Git leaves out, owned by nobody, that are
// not the default 1: a write through the scale subresource (`kubectl
// scale`, an autoscaler) when no manager owned replicas. The API server
// records such a write under no manager: the Scale it updates is built
// from the owners of replicas, so it has no managedFields, and an update
// of an object without them is not tracked (the field manager's
// skipNonApplied; seen with kubectl-scale, scanner
// TestAScaleOfReplicasGitLeavesOutIsNobodys, and with the real HPA after
// Flux deleted the field, e2e TestFluxRemovesReplicasAnHPAScaled). An
// autoscaler of the object is taken to own them, as it would if recorded;
// else it is drift, whose author only the audit log can name.
func (c *Classifier) unrecordedScale(o Object, ch Change, f report.Finding) Result {
	for _, s := range o.Scalers {
		if s.Kind == "HorizontalPodAutoscaler" || s.Kind == "ScaledObject" {
			return dismissed(f, report.OperatorOwned, fmt.Sprintf("%s %s scales it and Git leaves it out (a write through the scale subresource is recorded under no manager when no manager owned replicas)", s.Kind, s.Name))
		}
	}
	if e := entryOf(ch.Attribution); e != nil {
		if e.Operation == "" && e.Subresource == "scale" {
			e.Operation = "Update" // a patch of the Scale, as kubectl scale sends it
		}
		f.Class = c.classOf(*e, ch.Attribution)
		f.Manager, f.Operation, f.Subresource = e.Manager, e.Operation, e.Subresource
	}
	f.Hint = fmt.Sprintf("Git declares no replicas and live has %s, not the default 1: scaled through the scale subresource (kubectl scale, a pipeline, an autoscaler since removed), which the API server records under no manager when no manager owned replicas; add replicas to Git, or scale back to 1", ch.Live)
	return Result{Drift: true, Finding: f}
}

// forcesOwnership reports whether manager is a reconciler whose
// server-side apply forces conflicts, taking a field from whoever owns it:
// Argo CD (gitops-engine's ForceConflicts = serverSideApply), Flux's
// kustomize-controller (fluxcd/pkg/ssa) and helm-controller ("We always
// force conflicts on server-side apply").
func forcesOwnership(manager string) bool {
	switch manager {
	case "argocd-controller", "kustomize-controller", "helm-controller":
		return true
	}
	return false
}

// newestTaker returns the newest Update entry of a manager that is not an
// applier: the likeliest author of a field that Git declares and live lost.
func (c *Classifier) newestTaker(o Object) *Entry {
	var cands []Entry
	for _, e := range o.Entries {
		if e.Operation == "Update" && !c.appliers[e.Manager] && e.Subresource == "" {
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Time.After(cands[j].Time) })
	return &cands[0]
}
