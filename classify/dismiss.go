package classify

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/calricon/driftscan/report"
)

// dismiss decides, before any actor is looked for, whether a change is what
// the API server, a built-in controller or the reconciler itself does on
// every clean sync. It returns the verdict and true when one of these
// mechanisms explains the change; a reconciler's tracking value that names
// another app comes back as drift, with the hint that two apps fight.
//
// The mechanisms, in order:
//   - reconciler metadata: the tracking label or annotation Argo CD, Flux or
//     Helm writes, with the value it writes for this app (reconciler.go);
//   - built-in keys: what the API server, an admission plugin or a built-in
//     controller adds (builtin.go);
//   - a rollout restart's time on a workload's pod template;
//   - zero values: Git writes 0, false or "" where the API type stores
//     nothing, and either the applier still owns the field (it sent it and
//     nobody took it) or the type's own encoding drops the value;
//   - defaults inside atomic values: the applier still owns the value and
//     live holds everything Git declares plus keys the server filled in.
func (c *Classifier) dismiss(o Object, ch Change, f report.Finding) (Result, bool) {
	if r, ok := c.reconcilerMetadata(o, ch, f); ok {
		return r, true
	}
	if r, ok := c.builtinKey(o, ch, f); ok {
		return r, true
	}
	if r, ok := c.restartRecord(o, ch, f); ok {
		return r, true
	}
	owned := ch.Owner != nil && c.appliers[ch.Owner.Manager]
	switch ch.Type {
	case report.TypeAdded:
		if ch.NullGit && owned {
			// A server-side applier owns the default of a field it sent
			// as null; a client-side one keeps the null in its
			// last-applied configuration, which removes nothing.
			return dismissed(f, report.Defaulted, fmt.Sprintf("Git writes null here, which %s sent and owns: a default the API server filled in", ch.Owner.Manager)), true
		}
	case report.TypeRemoved:
		if !ch.ZeroGit {
			return Result{}, false
		}
		switch {
		case owned:
			return dismissed(f, report.ZeroValue, fmt.Sprintf("Git writes the zero value %s, which %s sent and still owns; the API server does not store it", ch.Git, ch.Owner.Manager)), true
		case ch.Omitted:
			return dismissed(f, report.ZeroValue, fmt.Sprintf("Git writes the zero value %s, which the API type does not store", ch.Git)), true
		}
	case report.TypeChanged:
		switch {
		case !ch.Contained || !owned:
		case ch.Filled != "":
			return dismissed(f, report.Defaulted, fmt.Sprintf("the API server filled in %s inside this value, which %s still owns; live holds everything Git declares", ch.Filled, ch.Owner.Manager)), true
		default:
			return dismissed(f, report.ZeroValue, fmt.Sprintf("live holds everything Git declares in this value, which %s still owns, but the zero values, which the API server does not store", ch.Owner.Manager)), true
		}
	}
	return Result{}, false
}

// dismissed is the verdict on a change that is no drift.
func dismissed(f report.Finding, reason report.Reason, detail string) Result {
	return Result{Drift: false, Finding: f, Reason: reason, Detail: detail}
}

// restartedAt is where kubectl rollout restart writes the time it restarted
// a workload's pods; k9s, Lens and Argo CD's restart action write the same
// annotation.
const restartedAt = ".spec.template.metadata.annotations.kubectl.kubernetes.io/restartedAt"

// Stakater Reloader rolls a workload whose ConfigMap or Secret changed by
// writing, as field manager Reloader, into its pod template
// (internal/pkg/handler/upgrade.go, v1.4.22): with the env-vars strategy
// (its default) an env var STAKATER_<NAME>_<CONFIGMAP|SECRET|
// SECRETPROVIDERCLASS> holding the new hash in the container that uses it,
// with the annotations strategy the source as JSON in this annotation.
var reloaderEnv = regexp.MustCompile(`^\.spec\.template\.spec\.(?:initContainers|containers)\[name="[^"]*"\]\.env\[name="(STAKATER_[A-Z0-9_]+_(?:CONFIGMAP|SECRET|SECRETPROVIDERCLASS))"\]$`)

const reloaderAnnotation = ".spec.template.metadata.annotations.reloader.stakater.com/last-reloaded-from"

// restartRecord dismisses what rolls a workload's pods that Git leaves
// out: a rollout restart's time, and what Stakater Reloader writes to roll
// them when a ConfigMap or Secret changed. The pods were rolled, nothing
// was configured, and no reconciler removes it (Argo CD and Flux apply
// only what Git declares, and kustomize-controller takes over only
// kubectl's fields; kubectl apply removes only what its last-applied
// configuration held). Whoever rolled them is named in the dismissal. The
// applier owning it means Git declared it once, and a value Git declares
// that live changed is a finding as any other.
func (c *Classifier) restartRecord(o Object, ch Change, f report.Finding) (Result, bool) {
	if ch.Type != report.TypeAdded || !rolledKind(o) {
		return Result{}, false
	}
	by := "someone"
	if ch.Owner != nil {
		if c.appliers[ch.Owner.Manager] {
			return Result{}, false
		}
		by = ch.Owner.Manager
	}
	switch {
	case ch.Path == restartedAt && o.Group == "apps":
		return dismissed(f, report.Restart, fmt.Sprintf("%s restarted the pods at %s (a rollout restart writes its time on the pod template to roll them): a record of an action, not configuration", by, ch.Live)), true
	case ch.Path == reloaderAnnotation:
		source := "a ConfigMap or Secret"
		var s struct{ Type, Name string }
		if json.Unmarshal([]byte(ch.Live), &s) == nil && s.Name != "" {
			source = strings.ToLower(s.Type) + " " + s.Name
		}
		return dismissed(f, report.Restart, fmt.Sprintf("%s rolled the pods when %s changed (Stakater Reloader's annotations strategy records the source here): a record of an action, not configuration", by, source)), true
	}
	if m := reloaderEnv.FindStringSubmatch(ch.Path); m != nil {
		return dismissed(f, report.Restart, fmt.Sprintf("%s rolled the pods when the ConfigMap or Secret that %s names changed (Stakater Reloader's env-vars strategy writes its hash there): a record of an action, not configuration", by, m[1])), true
	}
	return Result{}, false
}

// rolledKind reports whether o is a workload whose pods a restart or
// Stakater Reloader rolls through its pod template.
func rolledKind(o Object) bool {
	switch {
	case o.Group == "apps":
		return o.Kind == "Deployment" || o.Kind == "StatefulSet" || o.Kind == "DaemonSet"
	case o.Group == "argoproj.io":
		return o.Kind == "Rollout"
	}
	return false
}
