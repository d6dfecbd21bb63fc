package scanner

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/redact"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/source"
)

// pendingSync renders app at its TargetRevision and returns what the next
// sync changes relative to synced, the app rendered at the commit the
// reconciler last applied (syncedCommit). Live is compared with synced
// only: what Git holds beyond it is pending, not drift. A target that does
// not fetch or render is reported in Pending.Error.
func pendingSync(ctx context.Context, cfgDir string, app config.App, src source.Options, ropts render.Options, syncedCommit string, synced []render.Manifest, argoFiles ArgoSourceFilesFunc) *report.Pending {
	p := &report.Pending{Synced: syncedCommit, Target: app.TargetRevision}
	target := app.Source
	target.Revision = app.TargetRevision
	loc, err := source.Resolve(ctx, cfgDir, target, src)
	if err != nil {
		p.Error = redact.Text(fmt.Sprintf("fetch the target revision %s: %v", app.TargetRevision, err))
		return p
	}
	if source.SameRevision(loc.Revision(), syncedCommit) {
		return nil // the target is what was applied
	}
	p.Target = loc.Revision()
	ropts.Dir, ropts.Root, ropts.Helm, ropts.ExtraValues = loc.Dir, loc.Root, loc.Helm, loc.Values
	// The target's own parameter files (a tag Image Updater wrote since).
	merged, _, changed, err := argoFiles.merge(app, loc.Dir, loc.BuildRevision())
	if err != nil {
		p.Error = redact.Text(fmt.Sprintf("the target revision %s: the parameter files Argo CD merges into the source: %v", loc.Revision(), err))
		return p
	}
	if changed {
		ropts.Helm, ropts.Kustomize, ropts.Directory = merged.Helm, merged.Kustomize, merged.Directory
	}
	mfs, err := render.Manifests(ctx, ropts)
	if err == nil {
		_, err = applyAs(app, mfs)
	}
	if err != nil {
		p.Error = redact.Text(fmt.Sprintf("render the target revision %s: %v", loc.Revision(), err))
		return p
	}
	p.Objects = pendingObjects(app.Namespace, synced, mfs)
	return p
}

// pendingObjects compares two renders of an app object by object, and names
// the paths of each changed one (values are never named: they may be a
// Secret's).
func pendingObjects(namespace string, synced, target []render.Manifest) []report.PendingObject {
	type entry struct {
		obj  *unstructured.Unstructured
		seen bool
	}
	key := func(u *unstructured.Unstructured) string {
		ns := u.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		return u.GroupVersionKind().GroupKind().String() + "/" + ns + "/" + u.GetName()
	}
	object := func(u *unstructured.Unstructured, c report.PendingChange) report.PendingObject {
		ns := u.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		return report.PendingObject{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: ns, Name: u.GetName(), Change: c}
	}
	before := map[string]*entry{}
	for _, mf := range synced {
		before[key(mf.Object)] = &entry{obj: mf.Object}
	}
	var out []report.PendingObject
	for _, mf := range target {
		b := before[key(mf.Object)]
		if b == nil {
			out = append(out, object(mf.Object, report.PendingAdded))
			continue
		}
		b.seen = true
		var paths []string
		diffPaths("", normalize(b.obj), normalize(mf.Object), &paths)
		if len(paths) > 0 {
			o := object(mf.Object, report.PendingChanged)
			sort.Strings(paths)
			o.Paths = paths
			out = append(out, o)
		}
	}
	for _, mf := range synced {
		if b := before[key(mf.Object)]; !b.seen {
			out = append(out, object(mf.Object, report.PendingRemoved))
			b.seen = true // declared twice: reported once
		}
	}
	slices.SortStableFunc(out, func(a, b report.PendingObject) int {
		return strings.Compare(a.Kind+"/"+a.Namespace+"/"+a.Name, b.Kind+"/"+b.Namespace+"/"+b.Name)
	})
	return out
}

// diffPaths appends the paths under prefix where a and b differ: maps are
// compared key by key, anything else (lists included) as a whole.
func diffPaths(prefix string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	// A map only one side has is compared with an empty one, so the keys
	// it holds are named.
	if aok && b == nil {
		bm, bok = map[string]any{}, true
	}
	if bok && a == nil {
		am, aok = map[string]any{}, true
	}
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, prefix)
		}
		return
	}
	for k, av := range am {
		diffPaths(childPath(prefix, k), av, bm[k], out)
	}
	for k, bv := range bm {
		if _, ok := am[k]; !ok {
			diffPaths(childPath(prefix, k), nil, bv, out)
		}
	}
}

// childPath is .key, or ["key"] for a key such as an annotation's that
// holds a dot or a slash.
func childPath(prefix, key string) string {
	if strings.ContainsAny(key, "./[]\"") {
		return fmt.Sprintf("%s[%q]", prefix, key)
	}
	return prefix + "." + key
}

// ArgoSourceFilesFunc gives an Argo CD app's source as Argo CD renders it
// at commit from dir (Options.ArgoSourceFiles).
type ArgoSourceFilesFunc func(app config.App, dir, commit string) (config.Source, []string, bool, error)

// merge is the source of app as Argo CD renders it at commit from dir,
// when it is an Argo CD app (Options.ArgoSourceFiles).
func (f ArgoSourceFilesFunc) merge(app config.App, dir, commit string) (config.Source, []string, bool, error) {
	if f == nil || app.ArgoSource == nil {
		return app.Source, nil, false, nil
	}
	return f(app, dir, commit)
}
