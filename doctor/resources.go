package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/source"
)

// AppOptions say how to render the apps of a config. Start from
// DefaultAppOptions.
type AppOptions struct {
	// Mapper maps each kind to its resource and scope, as the scan's
	// discovery does.
	Mapper meta.RESTMapper
	// KubeVersion and APIVersions are the cluster's, for Helm's
	// .Capabilities (render.Options).
	KubeVersion string
	APIVersions []string
	// GitCacheDir is where Git sources are cloned; Getenv reads the
	// credentials the config names.
	GitCacheDir string
	Getenv      func(string) string
	// GitMaxBytes bounds a checked-out Git tree, as the scan's
	// --git-max-size does; 0 is no bound.
	GitMaxBytes int64
}

// DefaultAppOptions returns the Git cache and environment a scan uses; the
// caller sets Mapper and the cluster's versions.
func DefaultAppOptions() AppOptions {
	return AppOptions{GitCacheDir: source.DefaultCacheDir(), Getenv: os.Getenv}
}

// AppResources renders every app of cfg as the scan does (Git sources are
// fetched, Helm charts and kustomizations rendered in process) and returns
// the resources its objects map to, one per resource and namespace, sorted
// by namespace and resource, with the apps and kind that declare them.
// Namespaced objects that name no namespace are in their app's namespace,
// else "default", as the scan puts them.
//
// An app that does not render, and a kind the cluster does not serve, is an
// error that names the app; the errors are joined, and the resources of
// everything else are still returned.
func AppResources(ctx context.Context, cfg *config.Config, opts AppOptions) ([]Resource, error) {
	if opts.Mapper == nil {
		return nil, errors.New("app resources: no RESTMapper")
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	type key struct {
		gvr schema.GroupVersionResource
		ns  string
	}
	byKey := map[key]*Resource{}
	var errs []error
	cache := source.NewCache(opts.GitCacheDir)
	for _, app := range cfg.Apps {
		manifests, err := renderApp(ctx, cfg, app, cache, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", app.Name, err))
		}
		for _, mf := range manifests {
			gvk := mf.Object.GroupVersionKind()
			m, err := opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				if meta.IsNoMatchError(err) {
					err = fmt.Errorf("kind %s is not served by the cluster (is its CRD installed?)", gvk.GroupKind())
				}
				errs = append(errs, fmt.Errorf("app %s: %s %s: %w", app.Name, gvk.Kind, mf.Object.GetName(), err))
				continue
			}
			ns := ""
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ns = mf.Object.GetNamespace()
				if ns == "" {
					ns = app.Namespace
				}
				if ns == "" {
					ns = "default"
				}
			}
			k := key{gvr: m.Resource.GroupResource().WithVersion(""), ns: ns}
			r := byKey[k]
			if r == nil {
				r = &Resource{Group: m.Resource.Group, Resource: m.Resource.Resource, Namespace: ns, Kind: gvk.Kind}
				byKey[k] = r
			}
			if !slices.Contains(r.Apps, app.Name) {
				r.Apps = append(r.Apps, app.Name)
			}
		}
	}
	out := make([]Resource, 0, len(byKey))
	for _, r := range byKey {
		sort.Strings(r.Apps)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].String() < out[j].String()
	})
	return out, errors.Join(errs...)
}

// renderApp renders one app's source as the scan does: source.Resolve
// fetches it from Git when it has a repo (within opts.GitMaxBytes).
func renderApp(ctx context.Context, cfg *config.Config, app config.App, cache *source.Cache, opts AppOptions) ([]render.Manifest, error) {
	if app.Error != "" {
		return nil, errors.New(app.Error) // discovery refused the source: never fetched
	}
	loc, err := source.Resolve(ctx, cfg.Dir, app.Source, source.Options{Cache: cache, MaxBytes: opts.GitMaxBytes, Getenv: opts.Getenv, Git: cfg.Git})
	if err != nil {
		return nil, err
	}
	return render.Manifests(ctx, render.Options{
		Dir: loc.Dir, Root: loc.Root, Namespace: app.Namespace, Helm: loc.Helm, ExtraValues: loc.Values, Kustomize: app.Source.Kustomize, ReleaseName: app.Source.ReleaseName,
		KubeVersion: opts.KubeVersion, APIVersions: opts.APIVersions,
	})
}
