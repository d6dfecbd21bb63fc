package classify

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/calricon/driftscan/report"
)

// Tracking is what each reconciler writes on the objects of the app being
// scanned, so that its own tracking metadata can be told from another
// app's. The scanner fills it from the app's config or from the Argo CD
// Application or Flux object it was discovered from.
type Tracking struct {
	// ArgoApps are the names Argo CD may write for the app: the
	// Application's name, and <namespace>_<name> for an Application
	// outside Argo CD's own namespace. Empty: no Argo CD tracking is
	// expected, and any names another app.
	ArgoApps []string
	// FluxKind is Kustomization or HelmRelease when the app was discovered
	// from Flux, "" when it could be either; FluxName and FluxNamespace name
	// the object (FluxNamespace "" matches any namespace).
	FluxKind, FluxName, FluxNamespace string
	// HelmRelease and HelmNamespace are the Helm release the app renders,
	// "" when it renders no chart. HelmNamespace "" means the object's own.
	HelmRelease, HelmNamespace string
	// ArgoLabel: Argo CD tracks by its instance label (argocd-cm's
	// application.resourceTrackingMethod label), not by its tracking id
	// annotation (annotation, and annotation+label: the label is only
	// written there).
	ArgoLabel bool
	// ArgoLabelKey is the key of Argo CD's instance label (argocd-cm's
	// application.instanceLabelKey), "" for app.kubernetes.io/instance.
	// Under another key, app.kubernetes.io/instance is a chart's label
	// like any other.
	ArgoLabelKey string
	// ArgoInstallationID is argocd-cm's installationID, "" when Argo CD
	// has none; nil when it is not known. Argo CD writes it in
	// argocd.argoproj.io/installation-id next to its tracking id, and with
	// annotation tracking counts as an app's own only an object that
	// carries its own id, none when it has none (util/argo
	// resource_tracking.go, getAppInstanceValue): what carries another id
	// is another Argo CD installation's. Unknown, any id is taken for
	// this app's Argo CD.
	ArgoInstallationID *string
}

// argoInstallation reports whether the installation id on an object ("":
// none) is that of the app's Argo CD.
func (t Tracking) argoInstallation(id string) bool {
	return t.ArgoInstallationID == nil || id == *t.ArgoInstallationID
}

// ArgoInstallationOf is the installation id Argo CD wrote on an object
// with its tracking id ("" for none), and whether it is that of the app's
// Argo CD (ArgoInstallationID; any id when that is not known).
func (t Tracking) ArgoInstallationOf(annotations map[string]string) (id string, ours bool) {
	id = annotations[argoInstallationID]
	return id, t.argoInstallation(id)
}

// ArgoInstanceLabel is the key of the instance label Argo CD writes with
// label and annotation+label tracking.
func (t Tracking) ArgoInstanceLabel() string {
	if t.ArgoLabelKey == "" {
		return argoInstance
	}
	return t.ArgoLabelKey
}

// The keys reconcilers write, with what writes them.
//   - Argo CD: https://argo-cd.readthedocs.io/en/stable/user-guide/resource_tracking/
//     (util/argo/resource_tracking.go: the annotation's value is
//     <app>:<group>/<kind>:<namespace>/<name>, the label's the app name cut
//     to 63 characters);
//   - Flux kustomize-controller and helm-controller: <kind>.toolkit.fluxcd.io/name
//     and /namespace labels naming the Kustomization or HelmRelease;
//   - Helm, at install and upgrade (not at template): the
//     meta.helm.sh/release-name and -namespace annotations and the
//     app.kubernetes.io/managed-by=Helm label (pkg/action/validate.go,
//     setMetadataVisitor).
const (
	argoTrackingID     = "argocd.argoproj.io/tracking-id"
	argoInstallationID = "argocd.argoproj.io/installation-id"
	argoInstance       = "app.kubernetes.io/instance"
	helmReleaseName    = "meta.helm.sh/release-name"
	helmReleaseNS      = "meta.helm.sh/release-namespace"
	managedBy          = "app.kubernetes.io/managed-by"
)

// metadataKey splits a path into .metadata.labels or .metadata.annotations
// and the key; ok is false for any other path.
func metadataKey(path string) (where, key string, ok bool) {
	for _, w := range []string{"labels", "annotations"} {
		if k, found := strings.CutPrefix(path, ".metadata."+w+"."); found {
			return w, k, true
		}
	}
	return "", "", false
}

// verdict is what one reconciler key says of a live value.
type verdict struct {
	tool string
	// mine: the value is what tool writes for this app.
	mine bool
	// other names whom the value claims the object for, when not mine.
	other string
	// detail says what was checked.
	detail string
}

// reconcilerMetadata dismisses the tracking metadata a reconciler writes on
// this app's objects, and reports a tracking value that names another app
// as two apps fighting over the object. A key a person set by hand (owned
// by a manager that is neither an applier nor the tool) that names another
// app is left to the ordinary rules.
func (c *Classifier) reconcilerMetadata(o Object, ch Change, f report.Finding) (Result, bool) {
	if ch.Type == report.TypeRemoved {
		return Result{}, false
	}
	where, key, ok := metadataKey(ch.Path)
	if !ok {
		return Result{}, false
	}
	v, ok := o.Tracking.judge(o, where, key, ch.Live)
	if !ok {
		return Result{}, false
	}
	if v.mine {
		return dismissed(f, report.ReconcilerMetadata, v.detail), true
	}
	if ch.Owner != nil && !c.appliers[ch.Owner.Manager] && !toolManager(ch.Owner.Manager) {
		return Result{}, false
	}
	f.Class = report.ClassPipeline
	f.Actor = v.other
	if v.tool == "Helm" {
		// Helm checks these annotations before it writes anything
		// (pkg/action/validate.go, checkOwnership).
		f.Hint = fmt.Sprintf("%s owns this object, not this app's release: two releases claim it, and a helm install or upgrade of this one fails with \"invalid ownership metadata\" until one gives it up (or takes it with --take-ownership)", v.other)
	} else {
		f.Hint = fmt.Sprintf("%s claims this object, not this app: two apps fight over it, and each sync of one takes it from the other; keep the object in one app only", v.other)
	}
	return Result{Drift: true, Finding: f}, true
}

// toolManager reports whether manager is one of the reconcilers' own field
// managers.
func toolManager(manager string) bool {
	switch manager {
	case "argocd-controller", "argocd-application-controller", "kustomize-controller", "helm-controller", "helm":
		return true
	}
	return false
}

// judge reads one metadata key; ok is false for a key no reconciler writes.
func (t Tracking) judge(o Object, where, key, live string) (verdict, bool) {
	switch {
	case where == "annotations" && key == argoTrackingID:
		return t.argoTrackingID(o, live), true
	case where == "annotations" && key == argoInstallationID:
		// The Argo CD installation's own id: the same on every app it syncs.
		if len(t.ArgoApps) > 0 && t.argoInstallation(live) {
			return verdict{tool: "Argo CD", mine: true, detail: "the Argo CD installation id " + live}, true
		}
		return verdict{tool: "Argo CD", other: fmt.Sprintf("Argo CD installation %q", live), detail: fmt.Sprintf("the Argo CD installation id %q is not this app's Argo CD's", live)}, true
	case where == "labels" && key == t.ArgoInstanceLabel():
		for _, a := range t.ArgoApps {
			if live == argoLabelValue(a) {
				return verdict{tool: "Argo CD", mine: true, detail: fmt.Sprintf("Argo CD's tracking label for application %s", a)}, true
			}
		}
		return verdict{tool: "Argo CD", other: "Argo CD application " + live, detail: fmt.Sprintf("the tracking label names application %q", live)}, true
	case where == "labels" && (key == "kustomize.toolkit.fluxcd.io/name" || key == "kustomize.toolkit.fluxcd.io/namespace"):
		return t.flux(o, "Kustomization", key, live), true
	case where == "labels" && (key == "helm.toolkit.fluxcd.io/name" || key == "helm.toolkit.fluxcd.io/namespace"):
		return t.flux(o, "HelmRelease", key, live), true
	case where == "annotations" && key == helmReleaseName:
		if t.HelmRelease != "" && live == t.HelmRelease {
			return verdict{tool: "Helm", mine: true, detail: "Helm's release annotation for release " + live}, true
		}
		return verdict{tool: "Helm", other: "Helm release " + live, detail: fmt.Sprintf("the Helm release annotation names release %q", live)}, true
	case where == "annotations" && key == helmReleaseNS:
		want := t.HelmNamespace
		if want == "" {
			want = o.Namespace
		}
		if t.HelmRelease != "" && (live == want || want == "") {
			return verdict{tool: "Helm", mine: true, detail: "Helm's release namespace annotation " + live}, true
		}
		return verdict{tool: "Helm", other: "a Helm release in namespace " + live, detail: fmt.Sprintf("the Helm release namespace annotation names namespace %q", live)}, true
	case where == "labels" && key == managedBy && live == "Helm" && t.HelmRelease != "":
		return verdict{tool: "Helm", mine: true, detail: "the label Helm writes on what it installs"}, true
	}
	return verdict{}, false
}

// argoTrackingID judges Argo CD's annotation
// <app>:<group>/<kind>:<namespace>/<name>, where namespace is the
// Application's destination namespace for a cluster-scoped object.
func (t Tracking) argoTrackingID(o Object, live string) verdict {
	v := verdict{tool: "Argo CD"}
	app, rest, ok := strings.Cut(live, ":")
	gk, nsName, ok2 := strings.Cut(rest, ":")
	group, kind, ok3 := strings.Cut(gk, "/")
	ns, name, ok4 := strings.Cut(nsName, "/")
	if !ok || !ok2 || !ok3 || !ok4 {
		v.other, v.detail = "an unreadable Argo CD tracking id", fmt.Sprintf("the Argo CD tracking id %q is not <app>:<group>/<kind>:<namespace>/<name>", live)
		return v
	}
	if !slices.Contains(t.ArgoApps, app) {
		v.other, v.detail = "Argo CD application "+app, fmt.Sprintf("the Argo CD tracking id names application %q", app)
		return v
	}
	if group != o.Group || kind != o.Kind || name != o.Name || (o.Namespace != "" && ns != o.Namespace) {
		v.other, v.detail = "the object "+nsName+" of Argo CD application "+app, fmt.Sprintf("the Argo CD tracking id %q names another object (copied from another manifest?)", live)
		return v
	}
	v.mine, v.detail = true, "Argo CD's tracking id for application "+app
	return v
}

// flux judges the name and namespace labels of kind (Kustomization or
// HelmRelease).
func (t Tracking) flux(o Object, kind, key, live string) verdict {
	v := verdict{tool: "Flux"}
	field := key[strings.LastIndex(key, "/")+1:]
	want := t.FluxName
	if field == "namespace" {
		want = t.FluxNamespace
	}
	if (t.FluxKind == "" || t.FluxKind == kind) && t.FluxName != "" && (live == want || want == "") {
		v.mine, v.detail = true, fmt.Sprintf("Flux's %s %s label", kind, field)
		return v
	}
	v.other, v.detail = fmt.Sprintf("Flux %s %s %s", kind, field, live), fmt.Sprintf("the Flux %s label %s names %q", kind, key, live)
	return v
}

// fluxLabelPrefix is the prefix of the name and namespace labels Flux
// writes on what a Kustomization or a HelmRelease (kind) applies.
func fluxLabelPrefix(kind string) string {
	if kind == "HelmRelease" {
		return "helm.toolkit.fluxcd.io/"
	}
	return "kustomize.toolkit.fluxcd.io/"
}

// argoLabelValue is the label value Argo CD writes for an application name:
// cut to 63 characters, not ending in a special character.
func argoLabelValue(app string) string {
	if len(app) <= 63 {
		return app
	}
	v := app[:63]
	for len(v) > 1 && !okEnd.MatchString(v) {
		v = v[:len(v)-1]
	}
	return v
}

var okEnd = regexp.MustCompile(`[a-zA-Z0-9]$`)

// Tracks reports whether a live object's labels and annotations carry the
// tracking the app's reconciler writes on what it applies, by which that
// reconciler counts the object as the app's own (and, when Git no longer
// declares it, as one to prune): Argo CD's tracking id naming this object
// (annotation tracking, Argo CD 3's default) with its installation id
// (ArgoInstallationID), or with ArgoLabel its
// instance label; the name and namespace labels of the Flux Kustomization
// or HelmRelease (FluxKind). A chart's or an operator's copy of the
// app.kubernetes.io/instance label is no Argo CD tracking unless Argo CD
// tracks by that label. False for an app of neither tool.
func (t Tracking) Tracks(o Object, labels, annotations map[string]string) bool {
	switch {
	case t.FluxKind != "":
		prefix := fluxLabelPrefix(t.FluxKind)
		return t.FluxName != "" && labels[prefix+"name"] == t.FluxName && labels[prefix+"namespace"] == t.FluxNamespace
	case len(t.ArgoApps) == 0:
		return false
	case t.ArgoLabel:
		v, ok := labels[t.ArgoInstanceLabel()]
		return ok && slices.ContainsFunc(t.ArgoApps, func(a string) bool { return v == argoLabelValue(a) })
	default:
		v, ok := annotations[argoTrackingID]
		return ok && t.argoTrackingID(o, v).mine && t.argoInstallation(annotations[argoInstallationID])
	}
}

// Keys name the app as a reconciler's tracking names it: each instance
// name Argo CD may write, or the Flux object. An index of apps by their
// Keys finds, by ClaimKeys, the apps whose Tracks a live object may pass,
// without asking every app.
func (t Tracking) Keys() []string {
	if t.FluxKind != "" {
		return []string{"flux " + t.FluxKind + "/" + t.FluxNamespace + "/" + t.FluxName}
	}
	keys := make([]string, 0, len(t.ArgoApps))
	for _, a := range t.ArgoApps {
		keys = append(keys, "argo "+a)
	}
	return keys
}

// ClaimKeys are the Keys of the apps a live object's tracking metadata
// names: the instance of Argo CD's tracking id and of its instance label
// under each of argoLabels (the apps' ArgoInstanceLabel), and the
// Kustomization and HelmRelease of Flux's labels. Tracks says which of
// them really track it.
func ClaimKeys(labels, annotations map[string]string, argoLabels []string) []string {
	var keys []string
	if id, ok := annotations[argoTrackingID]; ok {
		instance, _, _ := strings.Cut(id, ":")
		keys = append(keys, "argo "+instance)
	}
	for _, k := range argoLabels {
		if v, ok := labels[k]; ok {
			keys = append(keys, "argo "+v)
		}
	}
	for _, kind := range []string{"Kustomization", "HelmRelease"} {
		prefix := fluxLabelPrefix(kind)
		if name, ok := labels[prefix+"name"]; ok {
			keys = append(keys, "flux "+kind+"/"+labels[prefix+"namespace"]+"/"+name)
		}
	}
	return keys
}
