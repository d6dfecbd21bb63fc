package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/internal/sourceignore"
	"github.com/calricon/driftscan/redact"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/strvals"
)

// renderHelm renders the chart in opts.Dir as `helm template --include-crds`
// does, with the Helm SDK and without a cluster:
//   - values: the chart's values.yaml (none when the values files replace
//     it: ValuesFilesReplaceDefaults), then opts.Helm.ValuesFiles in order
//     (relative to the chart folder), then opts.Helm.Set in key order, then
//     opts.Helm.SetString (`--set-string`) in key order. A Set
//     key is a strvals path (image.tag, env[0].name); commas in its value are
//     literal unless the value is a {a,b} list, as Argo CD passes parameters
//     (argo-cd reposerver/repository: cleanSetParameters);
//   - the release is opts.Helm.ReleaseName (default the folder's name) in
//     opts.Namespace (default "default");
//   - .Capabilities.KubeVersion is opts.KubeVersion when set; opts.APIVersions
//     are added to Helm's built-in API versions. Without a KubeVersion Helm
//     assumes one from its client-go version (v1.20.0 inside `go test`);
//   - the CRDs under crds/ are desired objects and are included; hooks
//     (the helm.sh/hook annotation, so tests too) are not and are left out, and
//     so is NOTES.txt;
//   - dependencies must be vendored under charts/, or name a folder of the
//     same repository (file://), which is read as `helm dependency build`
//     copies it there (withLocalDependencies): nothing is downloaded, and a
//     dependency from a chart repository missing under charts/ is an error.
//
// A Manifest's File is its template's path relative to opts.Dir
// (templates/deploy.yaml, crds/crd.yaml, charts/db/templates/sts.yaml), and
// its Line is 0. A chart that does not load or render returns no manifests;
// an object without kind or name in the output is an error of its own. No
// error shows a value of opts.Helm.Secret.
func renderHelm(ctx context.Context, opts Options) ([]Manifest, error) {
	if h := opts.Helm; h != nil {
		// The source's own capabilities replace the cluster's, as Argo
		// CD's helm.kubeVersion and helm.apiVersions do.
		if h.KubeVersion != "" {
			opts.KubeVersion = h.KubeVersion
		}
		if len(h.APIVersions) > 0 {
			opts.APIVersions = h.APIVersions
		}
	}
	if opts.APIVersions == nil && opts.DiscoverAPIVersions != nil {
		opts.APIVersions = opts.DiscoverAPIVersions()
	}
	ms, err := renderChart(ctx, opts)
	if opts.Helm != nil && len(opts.Helm.Secret) > 0 {
		// A template may print a value into its error (fail, required,
		// a type error): never one that came from a Secret.
		err = redact.Error(err, redact.Maskable(opts.Helm.Secret)...)
	}
	return ms, err
}

func renderChart(ctx context.Context, opts Options) ([]Manifest, error) {
	src, err := openRoot(opts)
	if err != nil {
		return nil, fmt.Errorf("helm chart %s: %w", opts.Dir, err)
	}
	defer src.Close()
	if h := opts.Helm; h != nil && h.FluxArtifact {
		if src.artifact, err = sourceignore.Matcher(src.root.FS(), h.SourceIgnore); err != nil {
			return nil, fmt.Errorf("helm chart %s: the Flux artifact's ignore patterns: %w", opts.Dir, err)
		}
	}
	files, err := chartFiles(src)
	var moved map[string]string
	if err == nil {
		files, moved, err = withLocalDependencies(src, files)
	}
	if err != nil {
		return nil, fmt.Errorf("helm chart %s: %w", opts.Dir, err)
	}
	cache := opts.Parsed
	if opts.Helm != nil && len(opts.Helm.Secret) > 0 {
		// The output may hold the values anywhere, not only in Secrets.
		cache = nil
	}
	if h := opts.Helm; h != nil && len(h.PostRenderers)+len(h.CommonLabels)+len(h.CommonAnnotations) > 0 {
		cache = nil // its key is the chart's inputs, not the post-renderers'
	}
	// Its inputs are read for the text check even without a cache: a
	// chart whose text settles is rendered once (Manifest.Settled).
	in, keyed := chartInputs(src, files, opts)
	if keyed && cache != nil {
		if ms, ok := cache.rendered(in.key, opts.Lazy); ok {
			relocate(ms, moved)
			return ms, nil
		}
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("helm chart %s: %w", opts.Dir, err)
	}
	if h := opts.Helm; h != nil && h.ChartVersion != "" {
		ch.Metadata.Version = h.ChartVersion // as the reconciler released it
	} else if h != nil && h.VersionMetadata != "" {
		v, _, _ := strings.Cut(ch.Metadata.Version, "+")
		ch.Metadata.Version = v + "+" + h.VersionMetadata
	}
	s := mayDiffer
	if keyed {
		s = in.settlement(ch)
	}
	manifest, err := helmTemplate(ctx, ch, src, opts)
	if err == nil && opts.Helm != nil {
		manifest, err = postRender(ctx, manifest, opts.Helm)
	}
	if err != nil {
		return nil, fmt.Errorf("helm chart %s: %w", opts.Dir, err)
	}
	ms, docs, err := helmManifests(cache, manifest)
	relocate(ms, moved)
	if err != nil {
		return ms, err
	}
	if s == settles {
		for i := range ms {
			ms[i].settled = true
		}
	}
	if keyed {
		cache.rendering(in.key, manifest, docs, s)
	}
	return ms, nil
}

// releaseName is the release a chart renders as: the source's, or the
// chart folder's name.
func releaseName(opts Options) string {
	if opts.Helm != nil && opts.Helm.ReleaseName != "" {
		return opts.Helm.ReleaseName
	}
	return filepath.Base(opts.Dir)
}

// ReleaseNamespace is the namespace a chart renders in (.Release.Namespace):
// the source's, else the app's, else default.
func (opts Options) ReleaseNamespace() string {
	if opts.Helm != nil && opts.Helm.Namespace != "" {
		return opts.Helm.Namespace
	}
	if opts.Namespace == "" {
		return "default"
	}
	return opts.Namespace
}

// helmTemplate renders ch as `helm template --include-crds` does (Helm's
// client-only install: action.Install.RunWithContext and renderResources),
// with the SDK's chart, engine and manifest-sorting packages alone. The
// action package would link Helm's cluster client, registry, storage drivers
// and kubectl into every scan, and their package initialisers cost every run
// tens of milliseconds before a request is made.
//
// The manifest is Helm's: each CRD under crds/, then every other document in
// install order, each after "---\n# Source: <chart>/<path>". Hooks and
// NOTES.txt are left out.
func helmTemplate(ctx context.Context, ch *chart.Chart, root *sourceRoot, opts Options) (string, error) {
	if t := ch.Metadata.Type; t != "" && t != "application" {
		return "", fmt.Errorf("%s charts are not installable", t)
	}
	if err := vendoredDependencies(ch); err != nil {
		return "", err
	}
	src := opts.Helm
	if src == nil {
		src = &config.HelmSource{}
	}
	if src.ValuesFilesReplaceDefaults && len(src.ValuesFiles)+len(opts.ExtraValues) > 0 {
		// The chart's values.yaml is what the files merge to, as
		// source-controller packages it: its own defaults are gone.
		ch.Values = map[string]any{}
	}
	vals, err := helmValues(root, src, opts.ExtraValues)
	if err != nil {
		return "", err
	}
	name, namespace := releaseName(opts), opts.ReleaseNamespace()
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return "", fmt.Errorf("release name check failed: release name %q: %w", name, err)
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return "", fmt.Errorf("chart dependencies processing failed: %w", err)
	}
	caps := common.DefaultCapabilities.Copy()
	if opts.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(opts.KubeVersion)
		if err != nil {
			return "", fmt.Errorf("kube version %q: %w", opts.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	// Copy shares its APIVersions with DefaultCapabilities. Helm builds
	// that slice at its exact length, so an append copies it; were it built
	// with room to spare, an append would write into the global from every
	// chart rendering at once. A new slice does not depend on which.
	caps.APIVersions = slices.Concat(caps.APIVersions, opts.APIVersions)
	release := common.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}
	values, err := util.ToRenderValuesWithSchemaValidation(ch, vals, release, caps, src.SkipSchemaValidation)
	if err != nil {
		return "", err
	}
	if want := ch.Metadata.KubeVersion; want != "" && !chartutil.IsCompatibleRange(want, caps.KubeVersion.String()) {
		return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", want, caps.KubeVersion.Version)
	}
	var e engine.Engine
	if opts.Lookup != nil {
		e.CustomTemplateFuncs = template.FuncMap{"lookup": opts.Lookup}
	}
	files, err := e.RenderWithContext(ctx, ch, values)
	if err != nil {
		return "", err
	}
	for f := range files {
		if strings.HasSuffix(f, "NOTES.txt") {
			delete(files, f)
		}
	}
	manifests, err := helmSorted(files)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, crd := range ch.CRDObjects() {
		if src.SkipCRDs {
			break
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", crd.Filename, crd.File.Data)
	}
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String(), nil
}

// ChartCRDsFile reports whether file, a Manifest's File of a chart, is in
// the crds/ folder of the chart or of one of its subcharts (crds/x.yaml,
// charts/db/crds/x.yaml): what Helm installs as it reads it, before the
// templates, and never renders.
func ChartCRDsFile(file string) bool {
	for {
		if strings.HasPrefix(file, "crds/") {
			return true
		}
		rest, ok := strings.CutPrefix(file, "charts/")
		if !ok {
			return false
		}
		if _, file, ok = strings.Cut(rest, "/"); !ok {
			return false
		}
	}
}

// vendoredDependencies is an error naming each dependency in Chart.yaml
// that is not under charts/, as Helm's action.CheckDependencies is.
func vendoredDependencies(ch *chart.Chart) error {
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	var missing []string
	for _, d := range ch.Metadata.Dependencies {
		if !have[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s (vendor them with `helm dependency build`)", strings.Join(missing, ", "))
	}
	return nil
}

// helmValues merges the values files and set values of src, as `helm
// template -f ... --set ...` does. The chart's own values.yaml is merged
// later by the install. A values file is relative to the chart folder, and
// must lie inside the root (the repository): one that climbs out, or is a
// symlink out, is refused.
func helmValues(root *sourceRoot, src *config.HelmSource, extra [][]byte) (map[string]any, error) {
	vals := map[string]any{}
	files, err := root.valuesFiles(src)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		m, err := loader.LoadValues(bytes.NewReader(f.data))
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", f.name, err)
		}
		vals = loader.MergeMaps(vals, m)
	}
	for i, data := range extra {
		m, err := loader.LoadValues(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("extra values %d: %w", i, err)
		}
		vals = loader.MergeMaps(vals, m)
	}
	if inline, err := inlineValues(src); err != nil || inline != nil {
		if err != nil {
			return nil, err
		}
		m, err := loader.LoadValues(bytes.NewReader(inline))
		if err != nil {
			return nil, fmt.Errorf("values: %w", err)
		}
		vals = loader.MergeMaps(vals, m)
	}
	keys := make([]string, 0, len(src.Set))
	for k := range src.Set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := strvals.ParseInto(k+"="+escapeSetValue(src.Set[k]), vals); err != nil {
			return nil, fmt.Errorf("set %s: %w", k, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(src.SetString)) {
		if err := strvals.ParseIntoString(k+"="+escapeSetValue(src.SetString[k]), vals); err != nil {
			return nil, fmt.Errorf("set string %s: %w", k, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(src.SetFiles)) {
		data, err := setFile(root, src.SetFiles[k])
		if err != nil {
			return nil, fmt.Errorf("set file %s: %w", k, err)
		}
		read := func([]rune) (any, error) { return string(data), nil }
		if err := strvals.ParseIntoFile(k+"="+src.SetFiles[k], vals, read); err != nil {
			return nil, fmt.Errorf("set file %s: %w", k, err)
		}
	}
	return vals, nil
}

// setFile reads a --set-file file, relative to the chart folder, through
// the root: one that leaves the repository is refused.
func setFile(root *sourceRoot, f string) ([]byte, error) {
	p, err := root.inside(f)
	if err != nil {
		return nil, fmt.Errorf("%w: refused", err)
	}
	return root.root.ReadFile(p)
}

// inlineValues is src.Values as the values document Argo CD and
// helm-controller hand Helm (read back as a values file is, so numbers and
// lists come out as from one); nil when there are none. JSON writes a
// map's keys sorted, so the same values give the same bytes (the render
// cache's key).
func inlineValues(src *config.HelmSource) ([]byte, error) {
	if len(src.Values) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(src.Values)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	return data, nil
}

// escapeSetValue makes the commas in a set value literal, unless the value
// is a strvals list ({a,b}) or the comma is escaped already.
func escapeSetValue(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == ',' && (i == 0 || v[i-1] != '\\') {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// helmManifests splits the manifest of a release into objects. Helm writes
// every document after a "# Source: <chart>/<path>" comment. A document
// that cache holds is read from it, and one that parses without an error
// is kept there. held are the documents by file and cache key, nil when
// one of them is not in the cache (or there is none).
func helmManifests(cache *ParseCache, manifest string) (_ []Manifest, held []renderedDoc, _ error) {
	var out []Manifest
	var errs []error
	kept := cache != nil
	file := "."
	for _, c := range SplitYAMLDocuments([]byte(manifest)) {
		if src := sourceComment(c.Data); src != "" {
			file = src
		}
		var key cacheKey
		if cache != nil {
			key = keyOf(cacheHelm, c.Data)
			if ms, ok := cache.lookup(key, file, false); ok {
				out = append(out, ms...)
				held = append(held, renderedDoc{file: file, key: key})
				continue
			}
		}
		var chunk []Manifest
		docs, docErrs := splitYAML(c.Data)
		clean := len(docErrs) == 0
		for _, e := range docErrs {
			e.File, e.Line = file, 0
			errs = append(errs, e)
		}
		for _, doc := range docs {
			ms, docErrs := doc.manifests(file)
			clean = clean && len(docErrs) == 0
			for _, e := range docErrs {
				e.Line = 0
				errs = append(errs, e)
			}
			for _, m := range ms {
				m.Line = 0
				chunk = append(chunk, m)
			}
		}
		cache.name(key, chunk)
		stored := clean && cache.store(key, chunk)
		kept = kept && stored
		held = append(held, renderedDoc{file: file, key: key})
		out = append(out, chunk...)
	}
	if !kept {
		held = nil
	}
	return out, held, errors.Join(errs...)
}

// sourceComment is the template path that a "# Source: web/templates/x.yaml"
// comment before a document's content names, relative to the chart folder
// ("templates/x.yaml"); "" when the chunk has no such comment.
func sourceComment(data []byte) string {
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || IsYAMLDocumentMarker([]byte(line)) {
			continue
		}
		src, ok := strings.CutPrefix(line, "# Source: ")
		if !ok {
			if strings.HasPrefix(line, "#") {
				continue
			}
			return ""
		}
		src = path.Clean(filepath.ToSlash(src))
		if _, rest, ok := strings.Cut(src, "/"); ok {
			return rest
		}
		return src
	}
	return ""
}
