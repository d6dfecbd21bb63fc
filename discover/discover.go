// Package discover reads the apps that Argo CD Applications and Flux
// Kustomizations and HelmReleases describe, and turns each into a
// config.App, and their ignore settings (Argo CD's ignoreDifferences, a
// HelmRelease's driftDetection.ignore) into classify.IgnoreRules that are
// debts like any other: an owner, a reason and a review date.
//
// Discovery only reads: one paginated LIST per kind (and per namespace for
// GitRepositories that other namespaces reference), plus one GET per
// ConfigMap or Secret a HelmRelease takes values from, and for Argo CD one
// LIST of the AppProjects. It never reads the reconcilers' own Git
// credentials, and gives a discovered source none of its own: the source is
// fetched with the credential the config binds to its URL's host or prefix
// (config.Git), if any. An Application whose project does not allow its
// repository (sourceRepos) is returned with App.Error set and is never
// fetched; so is one whose path or values file leaves the repository.
//
// Some reconciler settings change what is applied in ways the scanner cannot
// reproduce yet (Kustomize overrides in an Application, Flux post-build
// substitutions, Helm values that are lists, ...). Each is reported in
// Result.Errors, naming the object and the settings; the app is still
// returned, so the objects those settings do not touch are still scanned.
package discover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/redact"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

// The reconcilers discovery reads from.
const (
	FromArgoCD = "argocd"
	FromFlux   = "flux"
)

// DefaultIgnoreFor is how long imported ignore rules stay valid with
// DefaultOptions: after that they show up as expired debts.
const DefaultIgnoreFor = 90 * 24 * time.Hour

// inCluster is the API server URL Argo CD gives the cluster it runs in.
const inCluster = "https://kubernetes.default.svc"

// The reconciler resources discovery lists; breakglass and doctor name the
// same ones.
var (
	Applications     = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	Kustomizations   = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	HelmReleases     = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	GitRepositories  = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	HelmRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"}
	OCIRepositories  = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
	HelmCharts       = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
)

// The resources discovery reads values from.
var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// Options say what to discover. Start from DefaultOptions.
type Options struct {
	// From is FromArgoCD or FromFlux.
	From string
	// Namespace is where the reconciler's objects live. Empty means the
	// tool's default: "argocd" for Argo CD, every namespace for Flux.
	Namespace string
	// AllNamespaces lists Applications in every namespace (Argo CD's
	// "applications in any namespace") and keeps those the Argo CD of
	// Namespace reconciles: its own, and those of the namespaces its
	// argocd-cmd-params-cm enables (application.namespaces); Namespace
	// still holds its AppProjects and argocd-cm.
	AllNamespaces bool
	// Selector is a label selector on the Applications, Kustomizations and
	// HelmReleases (not on GitRepositories).
	Selector string
	// OwnerLabel is the label, or else annotation, on the object that names
	// the app's owner. Without it the owner is an Application's project, or
	// a Flux object's namespace (Flux tenants are namespaces).
	OwnerLabel string
	// ServerURL is the scanned cluster's API server URL. Applications whose
	// destination.server is it or https://kubernetes.default.svc, or whose
	// destination.name is "in-cluster", are kept; the others are skipped.
	ServerURL string
	// ArgoClusters are the other names and server URLs (those with "://")
	// Argo CD knows the scanned cluster by (its cluster secrets'
	// name and server: in-cluster renamed, or the cluster registered by an
	// address of its own). An Application whose destination names one is
	// kept. Read from no Secret: a cluster secret holds the credentials
	// Argo CD deploys with.
	ArgoClusters []string
	// IgnoreExpiry is the review date given to imported ignore rules.
	IgnoreExpiry time.Time
	// PageSize is the LIST page size; 0 means 500.
	PageSize int64
	// Now is the time sync windows are evaluated at; nil is time.Now.
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// DefaultOptions returns Argo CD discovery in namespace argocd, owners from
// the label or annotation "team", and imported rules due for review in
// DefaultIgnoreFor.
func DefaultOptions() Options {
	return Options{
		From:         FromArgoCD,
		OwnerLabel:   "team",
		IgnoreExpiry: time.Now().Add(DefaultIgnoreFor),
		PageSize:     500,
	}
}

// Result is what discovery found.
type Result struct {
	// Apps are the discovered apps, in the order the objects were listed.
	// Each has its GitOps info and the reconciler's applier.
	Apps []config.App
	// Ignore are the imported ignore rules; each passes Validate.
	Ignore []classify.IgnoreRule
	// Skipped says, per object or source, why it gave no app: another
	// cluster, a namespace Argo CD does not reconcile, a source driftscan
	// cannot render (also a report.WarnNotScanned in Warnings).
	Skipped []Skip
	// Errors are per-object problems. An app that has one may still be in
	// Apps (Error.App names it): see the package documentation.
	Errors []*Error
	// Warnings are for the report: the reconciler's settings discovery
	// could not read and went on without, its defaults taken
	// (report.WarnReconcilerSettingsUnreadable), and the objects whose
	// source it cannot render, which nobody compares
	// (report.WarnNotScanned).
	Warnings []report.Warning
}

// Skip is a reconciler object discovery made no app of, or one source of
// it that gave none, and why.
type Skip struct {
	// Object is kind/namespace/name, or a kind alone when its CRD is not
	// served.
	Object string
	// Reason says why, beginning "source N: " for one source of several.
	Reason string
}

func (s Skip) String() string { return s.Object + ": " + s.Reason }

// Names reports whether the skipped object is the one an app named name
// would have come from: named so, or namespace/name (an Application
// outside Argo CD's namespace), or the object itself.
func (s Skip) Names(name string) bool {
	_, rest, _ := strings.Cut(s.Object, "/")
	return name == s.Object || name == rest || strings.Contains(s.Object, "/") && name == objectName(s.Object)
}

// Error is a problem with one reconciler object.
type Error struct {
	// Object is kind/namespace/name, for example Application/argocd/web.
	Object string
	// App is the app the problem concerns, when the object gave one.
	App string
	Err error
}

func (e *Error) Error() string {
	// An app named after the object (web, ns/web, Kind/ns/web) goes unsaid.
	if name := objectName(e.Object); e.App != "" && e.App != name && !strings.HasSuffix(e.App, "/"+name) {
		return fmt.Sprintf("%s (app %s): %v", e.Object, e.App, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Object, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// objectName is the name part of kind/namespace/name.
func objectName(ref string) string {
	return ref[strings.LastIndex(ref, "/")+1:]
}

// Discover lists the reconciler's objects and returns the apps and ignore
// rules they describe. It returns an error only when discovery cannot start
// or nothing could be listed; every problem with one object is in
// Result.Errors and the other objects are still discovered.
func Discover(ctx context.Context, client dynamic.Interface, opts Options) (Result, error) {
	if opts.OwnerLabel == "" {
		opts.OwnerLabel = DefaultOptions().OwnerLabel
	}
	if opts.PageSize == 0 {
		opts.PageSize = 500
	}
	if opts.IgnoreExpiry.IsZero() {
		return Result{}, errors.New("discover: IgnoreExpiry is required: imported ignore rules are debts with a review date")
	}
	d := &discovery{client: client, opts: opts}
	var err error
	switch opts.From {
	case FromArgoCD:
		err = d.argocd(ctx)
	case FromFlux:
		err = d.flux(ctx)
	default:
		return Result{}, fmt.Errorf("discover: from %q: want %s or %s", opts.From, FromArgoCD, FromFlux)
	}
	if err != nil {
		return Result{}, err
	}
	return d.res, nil
}

// discovery is one Discover call.
type discovery struct {
	client dynamic.Interface
	opts   Options
	res    Result
	// fluxListed are the Kustomizations and HelmReleases listed, by ref:
	// the dependencies of one (dependenciesReady).
	fluxListed map[string]*unstructured.Unstructured
}

// listedFlux keeps the listed Flux objects items in fluxListed.
func (d *discovery) listedFlux(items []unstructured.Unstructured) {
	if d.fluxListed == nil {
		d.fluxListed = map[string]*unstructured.Unstructured{}
	}
	for i := range items {
		d.fluxListed[ref(&items[i])] = &items[i]
	}
}

func (d *discovery) fail(object, app string, err error) {
	d.res.Errors = append(d.res.Errors, &Error{Object: object, App: app, Err: err})
}

func (d *discovery) skip(object, format string, args ...any) {
	d.res.Skipped = append(d.res.Skipped, Skip{Object: object, Reason: fmt.Sprintf(format, args...)})
}

// notScanned is skip for a source driftscan cannot render, which the
// reconciler does apply: the report warns of it (report.WarnNotScanned),
// or it would say nothing of objects nobody compared.
func (d *discovery) notScanned(object, format string, args ...any) {
	reason := fmt.Sprintf(format, args...)
	d.res.Skipped = append(d.res.Skipped, Skip{Object: object, Reason: reason})
	d.res.Warnings = append(d.res.Warnings, report.Warning{Code: report.WarnNotScanned, Object: object, Message: "not scanned: " + reason})
}

// settingsUnreadable records that the reconciler's settings in object (a
// ConfigMap, kind/namespace/name) could not be read for err, and what the
// scan does without them.
func (d *discovery) settingsUnreadable(object string, err error, format string, args ...any) {
	d.res.Warnings = append(d.res.Warnings, report.Warning{
		Code:    report.WarnReconcilerSettingsUnreadable,
		Object:  object,
		Message: fmt.Sprintf("could not be read (%v): ", err) + fmt.Sprintf(format, args...),
	})
}

// owner is the value of the owner label, else the owner annotation, else
// fallback.
func (d *discovery) owner(u *unstructured.Unstructured, fallback string) string {
	if v := u.GetLabels()[d.opts.OwnerLabel]; v != "" {
		return v
	}
	if v := u.GetAnnotations()[d.opts.OwnerLabel]; v != "" {
		return v
	}
	return fallback
}

// expires is the review date of imported rules.
func (d *discovery) expires() string { return d.opts.IgnoreExpiry.Format(time.DateOnly) }

// addRule validates an imported rule and keeps it, or records why not.
func (d *discovery) addRule(object string, r classify.IgnoreRule) {
	if err := r.Validate(); err != nil {
		d.fail(object, r.App, fmt.Errorf("not imported: %w", err))
		return
	}
	d.res.Ignore = append(d.res.Ignore, r)
}

// list reads every object of a resource with paginated LISTs, in namespace
// ns ("" for all).
func (d *discovery) list(ctx context.Context, gvr schema.GroupVersionResource, ns, selector string) ([]unstructured.Unstructured, error) {
	items, err := scanner.ListAll(ctx, d.client, gvr, ns, metav1.ListOptions{Limit: d.opts.PageSize, LabelSelector: selector})
	if err != nil {
		return nil, listError(gvr, ns, err)
	}
	return items, nil
}

// errNotServed marks a LIST of a kind the cluster does not serve: its CRD
// is not installed.
var errNotServed = errors.New("the cluster does not serve this API (is its CRD installed?)")

func listError(gvr schema.GroupVersionResource, ns string, err error) error {
	res := gvr.Resource + "." + gvr.Group
	where := "in every namespace"
	if ns != "" {
		where = "in namespace " + ns
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("list %s/%s %s: %w: %w", res, gvr.Version, where, errNotServed, err)
	}
	return fmt.Errorf("list %s %s: %w", res, where, err)
}

// ref names an object the way reports do: Kind/namespace/name.
func ref(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// appNames gives each object an app name: its name when that is unique
// among objs, else namespace/name, else Kind/namespace/name.
func appNames(objs []*unstructured.Unstructured) map[string]string {
	byName := map[string]int{}
	byNSName := map[string]int{}
	for _, u := range objs {
		byName[u.GetName()]++
		byNSName[u.GetNamespace()+"/"+u.GetName()]++
	}
	out := map[string]string{}
	for _, u := range objs {
		nsName := u.GetNamespace() + "/" + u.GetName()
		switch {
		case byName[u.GetName()] == 1:
			out[ref(u)] = u.GetName()
		case byNSName[nsName] == 1:
			out[ref(u)] = nsName
		default:
			out[ref(u)] = ref(u)
		}
	}
	return out
}

// decode reads an object into a struct of the fields discovery uses. Values
// of type any keep numbers as json.Number, so their text is kept exactly.
func decode(u *unstructured.Unstructured, into any) error {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("read %s: %w", u.GetKind(), err)
	}
	return nil
}

// reconcilerMessage is a reconciler's status message as a report may hold
// it, in a hint's one line: URLs' credentials and secrets (the app's values
// from Secrets) masked, then cut to its first line (what follows is detail:
// a CEL parser's caret under the expression, the objects an apply changed)
// and to 300 bytes on a rune.
func reconcilerMessage(msg string, secrets ...string) string {
	msg = redact.Text(msg, redact.Maskable(secrets)...)
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	msg = strings.TrimSpace(msg)
	if len(msg) <= 300 {
		return msg
	}
	cut := 300
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}
