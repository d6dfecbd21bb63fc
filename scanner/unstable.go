package scanner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// A chart can render differently each time from the same commit: a
// password from randAlphaNum, a certificate from genCA, a checksum/secret
// annotation over either. Such a field differs from live after every
// render, with nobody having changed anything: it is not drift, and it is
// not to be silenced either. The scan renders every chart twice; the
// fields whose values differ between the two renders are unstable. They
// are left out of the comparison (each counted as an unstableRender
// dismissal) and listed once per app in a warning.
//
// Plain YAML and Kustomize render the same every time, so only charts are
// rendered twice.

// helmRelease returns the release a source folder renders as, "" when it
// renders no chart: the renderer's own choice (render.Manifests).
func helmRelease(opts render.Options) string {
	if opts.Kustomize != nil {
		return ""
	}
	if opts.Helm == nil {
		if _, err := os.Stat(filepath.Join(opts.Dir, "Chart.yaml")); err != nil {
			return ""
		}
	}
	if opts.Helm != nil && opts.Helm.ReleaseName != "" {
		return opts.Helm.ReleaseName
	}
	if opts.Helm == nil && opts.ReleaseName != "" {
		return opts.ReleaseName // a detected chart, named by discovery
	}
	return filepath.Base(opts.Dir)
}

// renderAgain renders a chart a second time, for comparison with first,
// its first render; nil for a source that is not a chart (release, its
// helmRelease, is ""), for a chart the parse cache gave as it rendered
// the same twice before (render.Manifest.Settled: the second render would
// be the same read again), or when the second render fails (the first
// one's result stands).
func renderAgain(ctx context.Context, opts render.Options, release string, first []render.Manifest) []render.Manifest {
	if release == "" || len(first) > 0 && first[0].Settled() {
		return nil
	}
	again, err := render.Manifests(ctx, opts)
	if err != nil {
		return nil
	}
	return again
}

// renderKey names an object as rendered, before the scan gives it a namespace.
type renderKey struct {
	apiVersion, kind, ns, name string
}

func renderKeyOf(u *unstructured.Unstructured) renderKey {
	return renderKey{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()}
}

// twins pairs each object of the first render with the same object of the
// second, by index of first; objects only one render has are returned by
// name (a name generated at render time).
func twins(first, second []render.Manifest) (pairs map[int]*unstructured.Unstructured, alone []string) {
	if second == nil {
		return nil, nil
	}
	byKey := map[renderKey]*unstructured.Unstructured{}
	for _, mf := range second {
		if mf.Object.GetName() != "" {
			byKey[renderKeyOf(mf.Object)] = mf.Object
		}
	}
	pairs = map[int]*unstructured.Unstructured{}
	for i, mf := range first {
		if mf.Object.GetName() == "" {
			continue // named by the API server (generateName): not compared
		}
		k := renderKeyOf(mf.Object)
		if twin, ok := byKey[k]; ok {
			pairs[i] = twin
			delete(byKey, k)
			continue
		}
		alone = append(alone, mf.Object.GetKind()+"/"+mf.Object.GetName())
	}
	for k := range byKey {
		alone = append(alone, k.kind+"/"+k.name)
	}
	sort.Strings(alone)
	return pairs, alone
}

// unstableFields is what differs between the two renders, by app, for the
// warnings: "Kind/name path" of each field, and the objects only one render
// has.
type unstableFields struct {
	byApp map[int][]string
	alone map[int][]string
}

// findUnstable finds, once the schemas are loaded, the fields of every
// object rendered twice that differ between the renders. The second
// render is not needed after that and is let go: a chart's objects are
// not held twice through the LISTs and the compare.
func (s *scan) findUnstable() {
	for i := range s.objects {
		s.objects[i].unstable = s.unstable(s.objects[i])
		s.objects[i].twin = nil
	}
}

// unstable returns the paths of d that differ between its two renders, nil
// when it was rendered once or both renders agree.
func (s *scan) unstable(d desired) *fieldpath.Set {
	if d.twin == nil {
		return nil
	}
	a, b := normalize(d.obj), normalize(d.twin)
	if reflect.DeepEqual(a, b) {
		return nil
	}
	gv := d.mapping.GroupVersionKind.GroupVersion()
	ta, err := s.c.typer.toTyped(a, gv)
	if err != nil {
		return nil
	}
	tb, err := s.c.typer.toTyped(b, gv)
	if err != nil {
		return nil
	}
	cmp, err := ta.Compare(tb)
	if err != nil {
		return nil
	}
	set := cmp.Modified.Union(cmp.Added).Union(cmp.Removed)
	if set.Empty() {
		return nil
	}
	var paths []string
	topmost(set).Iterate(func(p fieldpath.Path) { paths = append(paths, d.obj.GetKind()+"/"+d.obj.GetName()+" "+p.String()) })
	s.unstableSeen.byApp[d.app] = append(s.unstableSeen.byApp[d.app], paths...)
	return set
}

// touches reports whether path is one of set's paths, under one, or above
// one (a Changed atomic value that holds an unstable field).
func touches(set *fieldpath.Set, path fieldpath.Path) bool {
	if set == nil {
		return false
	}
	for i := 1; i <= len(path); i++ {
		if set.Has(path[:i]) {
			return true
		}
	}
	return descend(set, path) != nil
}

// warnUnstable records one warning per app whose chart renders differently
// each time, naming the fields left out of the comparison.
func (s *scan) warnUnstable() {
	apps := map[int]bool{}
	for ai := range s.unstableSeen.byApp {
		apps[ai] = true
	}
	for ai := range s.unstableSeen.alone {
		apps[ai] = true
	}
	for _, ai := range sortedInts(apps) {
		fields := s.unstableSeen.byApp[ai]
		sort.Strings(fields)
		var parts []string
		if len(fields) > 0 {
			parts = append(parts, fmt.Sprintf("%d field(s) differ between two renders of the same commit and are not compared: %s", len(fields), strings.Join(fields, ", ")))
		}
		if alone := s.unstableSeen.alone[ai]; len(alone) > 0 {
			parts = append(parts, fmt.Sprintf("objects named differently by each render: %s", strings.Join(alone, ", ")))
		}
		s.warn(report.Warning{
			Code: report.WarnUnstableRender, App: s.r.Apps[ai].Name,
			Message: "the chart renders differently each time (randAlphaNum, genCA, a checksum of generated values, ...): " + strings.Join(parts, "; ") +
				". Give these values in the chart's values (an explicit password, an existing Secret) to make the render deterministic and compare them again",
		})
	}
}
