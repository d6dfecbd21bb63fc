package breakglass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/report"
)

// kinds maps the kind in report.GitOps.Object to its resource.
var kinds = map[string]schema.GroupVersionResource{
	"Application":   Application,
	"Kustomization": Kustomization,
	"HelmRelease":   HelmRelease,
}

// ListForApps returns the suspensions of the apps' reconciler objects
// (report.App.GitOps.Object, "Kind/namespace/name"), with one LIST per kind
// and namespace those objects live in: never cluster-wide, so an identity
// that may read Applications only in the namespaces it was given (the
// chart's rbac.scope: namespaces) can still tell which apps are paused.
//
// A LIST the identity may not make is a warning on each app it concerns,
// not an error: the apps are scanned all the same, only their breakglass
// state is unknown, and the warning names the right that would tell it.
// Other failures are errors.
func ListForApps(ctx context.Context, client dynamic.Interface, apps []report.App) (suspensions []Suspension, warnings []report.Warning, err error) {
	type where struct {
		gvr schema.GroupVersionResource
		ns  string
	}
	var lists []where
	appsIn := map[where][]report.App{}
	for _, a := range apps {
		if a.GitOps == nil {
			continue
		}
		kind, rest, ok := strings.Cut(a.GitOps.Object, "/")
		ns, _, ok2 := strings.Cut(rest, "/")
		gvr, known := kinds[kind]
		if !ok || !ok2 || !known {
			continue
		}
		w := where{gvr, ns}
		if !slices.Contains(lists, w) {
			lists = append(lists, w)
		}
		appsIn[w] = append(appsIn[w], a)
	}
	slices.SortFunc(lists, func(a, b where) int {
		return strings.Compare(a.gvr.Resource+"/"+a.ns, b.gvr.Resource+"/"+b.ns)
	})
	var errs []error
	for _, w := range lists {
		got, err := List(ctx, client, w.ns, w.gvr)
		switch {
		case apierrors.IsForbidden(err):
			for _, a := range appsIn[w] {
				warnings = append(warnings, report.Warning{Code: report.WarnBreakglassUnreadable, App: a.Name, Object: a.GitOps.Object,
					Message: fmt.Sprintf("may not list %s.%s in namespace %s, so whether breakglass suspended this app is not known (grant get and list there; the chart does with rbac.namespaces)", w.gvr.Resource, w.gvr.Group, w.ns)})
			}
		case err != nil:
			errs = append(errs, err)
		}
		suspensions = append(suspensions, got...)
	}
	slices.SortFunc(suspensions, func(a, b Suspension) int { return strings.Compare(a.Target.String(), b.Target.String()) })
	return suspensions, warnings, errors.Join(errs...)
}
