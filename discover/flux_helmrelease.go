package discover

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"helm.sh/helm/v4/pkg/strvals"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/source"
)

// helmRelease holds the fields of a Flux HelmRelease that discovery reads.
// See https://fluxcd.io/flux/components/helm/helmreleases/
type helmRelease struct {
	Spec struct {
		Chart *struct {
			Spec chartSpec `json:"spec"`
		} `json:"chart"`
		ChartRef        *sourceRef        `json:"chartRef"`
		DependsOn       []fluxDependency  `json:"dependsOn"`
		ReleaseName     string            `json:"releaseName"`
		TargetNamespace string            `json:"targetNamespace"`
		Suspend         bool              `json:"suspend"`
		KubeConfig      map[string]any    `json:"kubeConfig"`
		Values          map[string]any    `json:"values"`
		ValuesFrom      []valuesReference `json:"valuesFrom"`
		CommonMetadata  *struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"commonMetadata"`
		PostRenderers []struct {
			Kustomize *struct {
				Patches []struct {
					Patch  string         `json:"patch"`
					Target map[string]any `json:"target"`
				} `json:"patches"`
				Images []config.FluxImage `json:"images"`
			} `json:"kustomize"`
		} `json:"postRenderers"`
		DriftDetection *struct {
			Mode   string           `json:"mode"`
			Ignore []fluxIgnoreRule `json:"ignore"`
		} `json:"driftDetection"`
		// The CRD policies (Skip, Create, CreateReplace) and how Helm
		// applies: serverSideApply, true unless false at install;
		// enabled, disabled or auto (the last release's) at upgrade.
		Install struct {
			CRDs                    string `json:"crds"`
			ServerSideApply         *bool  `json:"serverSideApply"`
			DisableSchemaValidation bool   `json:"disableSchemaValidation"`
		} `json:"install"`
		Upgrade struct {
			CRDs                    string `json:"crds"`
			ServerSideApply         string `json:"serverSideApply"`
			DisableSchemaValidation bool   `json:"disableSchemaValidation"`
		} `json:"upgrade"`
	} `json:"spec"`
	Status struct {
		// History holds the releases helm-controller made, the newest
		// first.
		History []struct {
			ChartName    string `json:"chartName"`
			ChartVersion string `json:"chartVersion"`
		} `json:"history"`
		Conditions []fluxCondition `json:"conditions"`
	} `json:"status"`
}

// helmReleaseBlocked says why helm-controller corrects no drift of the
// HelmRelease u as things stand, or "": its Ready condition, for its
// current spec, is False because it waits for the HelmReleases it
// dependsOn (DependencyNotReady: each reconcile stops before the chart is
// even fetched until they are Ready; InvalidCELExpression: for good, while
// a readyExpr of dependsOn does not compile); or it is Stalled for its current
// spec because its install, upgrade or remediation ran out of retries
// (RetriesExceeded, MissingRollbackTarget). Each reconcile then stops
// before drift detection (AtomicRelease: ErrExceededMaxRetries) until the
// chart or values change (MustResetFailures), or someone asks for a reset
// or a forced release.
func helmReleaseBlocked(u *unstructured.Unstructured, hr *helmRelease, depsReady bool, secrets []string) syncBlock {
	if ready := currentCondition(u, hr.Status.Conditions, "Ready"); ready != nil && ready.Status == "False" {
		if b := dependencyBlock(u, ready, depsReady, "helm-controller installs, upgrades and corrects nothing of it", secrets); b.text != "" {
			return b
		}
	}
	stalled := currentCondition(u, hr.Status.Conditions, "Stalled")
	if stalled == nil || stalled.Status != "True" || (stalled.Reason != "RetriesExceeded" && stalled.Reason != "MissingRollbackTarget") {
		return syncBlock{}
	}
	return syncBlock{reason: stalled.Reason, text: fmt.Sprintf("helm-controller has given up on %s (Stalled, %s: %s) and corrects no drift until its chart or values change, or someone resets it (flux reconcile helmrelease --reset, or --force)", ref(u), stalled.Reason, reconcilerMessage(stalled.Message, secrets...))}
}

// chartSpec is a HelmRelease's spec.chart.spec.
type chartSpec struct {
	Chart             string    `json:"chart"`
	Version           string    `json:"version"`
	SourceRef         sourceRef `json:"sourceRef"`
	ValuesFiles       []string  `json:"valuesFiles"`
	ValuesFile        string    `json:"valuesFile"`
	ReconcileStrategy string    `json:"reconcileStrategy"`
}

// helmChart holds the fields of a Flux HelmChart that discovery reads, for
// a HelmRelease's chartRef: the chart a spec.chart would template. See
// https://fluxcd.io/flux/components/source/helmcharts/
type helmChart struct {
	Spec chartSpec `json:"spec"`
}

// withHelmCharts turns each HelmRelease whose chartRef names a HelmChart
// into one with that HelmChart's spec as its spec.chart, as helm-controller
// reads the chart it built, so that the rest of discovery reads it as any
// other: its source is the HelmChart's (in the HelmChart's namespace).
func (d *discovery) withHelmCharts(ctx context.Context, objs []fluxObject) ([]fluxObject, error) {
	charts, err := fluxSources[helmChart](ctx, d, objs, "HelmChart", HelmCharts)
	if err != nil {
		return nil, err
	}
	out := objs[:0]
	for _, o := range objs {
		if o.source.Kind != "HelmChart" {
			out = append(out, o)
			continue
		}
		hc := charts[o.source.Namespace+"/"+o.source.Name]
		if hc == nil {
			d.fail(ref(o.u), "", fmt.Errorf("chartRef %s not found", o.source))
			continue
		}
		spec := hc.Spec
		spec.SourceRef.Namespace = o.source.Namespace
		if k := spec.SourceRef.Kind; k != "GitRepository" && k != "HelmRepository" {
			d.notScanned(ref(o.u), "chartRef %s: its chart comes from %s: driftscan renders charts from GitRepositories and HelmRepositories only", o.source, spec.SourceRef)
			continue
		}
		o.hr.Spec.Chart = &struct {
			Spec chartSpec `json:"spec"`
		}{Spec: spec}
		o.source = spec.SourceRef
		out = append(out, o)
	}
	return out, nil
}

// helmRepository holds the fields of a Flux HelmRepository that discovery
// reads. See https://fluxcd.io/flux/components/source/helmrepositories/
type helmRepository struct {
	Spec struct {
		URL      string `json:"url"`
		Type     string `json:"type"`
		Insecure bool   `json:"insecure"`
	} `json:"spec"`
}

// chartSource is the scanner source of hr's chart in the repository: the
// chart version helm-controller last released (status.history), else the
// version spec.chart.spec.version allows (default the newest); and target,
// what the spec asks for ("*" for the newest). A newer version the target
// allows than the one released is pending, as for Argo CD
// (App.TargetRevision).
func (r *helmRepository) chartSource(hr *helmRelease) (src config.Source, target string, err error) {
	oci := r.Spec.Type == "oci"
	if oci != strings.HasPrefix(r.Spec.URL, "oci://") {
		return config.Source{}, "", fmt.Errorf("url %s and type %q do not go together: an OCI HelmRepository has an oci:// URL", source.SafeURL(r.Spec.URL), r.Spec.Type)
	}
	chart := hr.Spec.Chart.Spec
	target = chart.Version
	if target == "" {
		target = "*"
	}
	// insecure: plain HTTP to an OCI registry, as source-controller reads it.
	src = config.Source{Repo: r.Spec.URL, Chart: chart.Chart, Revision: chart.Version, PlainHTTP: oci && r.Spec.Insecure}
	src.Revision = hr.released(src.Chart, src.Revision)
	if version, gen, ok := strings.Cut(src.Revision, "+"); ok && chart.hasValuesFiles() && generation.MatchString(gen) {
		// source-controller gave the chart it built with valuesFiles
		// the HelmChart's generation as build metadata: the repository
		// lists the version without it.
		src.Revision = version
		src.Helm = &config.HelmSource{ChartVersion: version + "+" + gen}
	}
	return src, target, nil
}

// generation is the build metadata source-controller gives a chart it
// builds with valuesFiles: the HelmChart's generation.
var generation = regexp.MustCompile(`^[0-9]+$`)

// hasValuesFiles says whether the chart is built with values files of the
// source's, which source-controller marks in its version.
func (c chartSpec) hasValuesFiles() bool { return len(c.ValuesFiles) > 0 || c.ValuesFile != "" }

// releasedVersion is the chart version helm-controller last released
// (status.history[0]), split at its "+": the version, and the build
// metadata of a chart from Git (source-controller's commit and generation
// marks, which the chart's templates may print: the helm.sh/chart label);
// "" for what it has not.
func (hr *helmRelease) releasedVersion() (version, metadata string) {
	if h := hr.Status.History; len(h) > 0 {
		version, metadata, _ = strings.Cut(h[0].ChartVersion, "+")
	}
	return version, metadata
}

// released is the chart version helm-controller last released of chart
// (status.history[0]), else otherwise.
func (hr *helmRelease) released(chart, otherwise string) string {
	if h := hr.Status.History; len(h) > 0 && h[0].ChartName == chart && h[0].ChartVersion != "" {
		return h[0].ChartVersion
	}
	return otherwise
}

// ociRepository holds the fields of a Flux OCIRepository that discovery
// reads, for a HelmRelease's chartRef or a Kustomization's sourceRef. See
// https://fluxcd.io/flux/components/source/ocirepositories/
type ociRepository struct {
	Spec struct {
		URL string `json:"url"`
		Ref *struct {
			Tag          string `json:"tag"`
			SemVer       string `json:"semver"`
			SemverFilter string `json:"semverFilter"`
			Digest       string `json:"digest"`
		} `json:"ref"`
		LayerSelector *struct {
			MediaType string `json:"mediaType"`
			Operation string `json:"operation"`
		} `json:"layerSelector"`
		Ignore   *string `json:"ignore"`
		Insecure bool    `json:"insecure"`
	} `json:"spec"`
	Status struct {
		Artifact *struct {
			Revision string `json:"revision"`
		} `json:"artifact"`
	} `json:"status"`
}

// artifactSource is the scanner source of the artifact an OCIRepository
// names, for a Kustomization: read as source-controller reads it (its
// layerSelector's media type, else the first layer), at the revision of
// its artifact (<tag>@sha256:<digest>) when source-controller has pulled
// one, else at its spec.ref (digest, semver, tag; Flux's default, the tag
// latest). problems says what of it driftscan does not reproduce.
func (r *ociRepository) artifactSource() (src config.Source, problems []string, err error) {
	if !config.IsOCI(r.Spec.URL) {
		return config.Source{}, nil, fmt.Errorf("url %s: want oci://host/path", source.SafeURL(r.Spec.URL))
	}
	src = config.Source{Repo: r.Spec.URL, FluxArtifact: true, PlainHTTP: r.Spec.Insecure, Revision: "latest"}
	if l := r.Spec.LayerSelector; l != nil {
		src.Layer = l.MediaType
	}
	if a := r.Status.Artifact; a != nil && source.ArtifactDigest(a.Revision) != "" {
		src.Revision = a.Revision
		return src, nil, nil
	}
	if ref := r.Spec.Ref; ref != nil {
		switch {
		case ref.Digest != "":
			src.Revision = ref.Digest
		case ref.SemVer != "":
			src.Revision = ref.SemVer
			if ref.SemverFilter != "" {
				problems = append(problems, "OCIRepository ref.semverFilter is not applied by driftscan: source-controller has pulled no artifact yet, and the newest tag of the range is read")
			}
		case ref.Tag != "":
			src.Revision = ref.Tag
		}
	}
	return src, problems, nil
}

// copied says the layer is kept as it is (layerSelector operation copy):
// the artifact is the layer's tarball, no ignore rule applied to it.
func (r *ociRepository) copied() bool {
	return r.Spec.LayerSelector != nil && r.Spec.LayerSelector.Operation == "copy"
}

// chartSource is the scanner source of the chart an OCIRepository names
// (its URL is the chart's repository in the registry, oci://host/path/<chart>):
// the version helm-controller last released (status.history), else the
// tag or semver range of spec.ref (Flux's default tag, latest). A digest
// pin is read through the released version's tag, and is its own target.
func (r *ociRepository) chartSource(hr *helmRelease) (src config.Source, target string, err error) {
	u := strings.TrimRight(r.Spec.URL, "/")
	i := strings.LastIndex(u, "/")
	if !strings.HasPrefix(u, "oci://") || i <= len("oci://") {
		return config.Source{}, "", fmt.Errorf("url %s: want oci://host/path/<chart>", source.SafeURL(r.Spec.URL))
	}
	src = config.Source{Repo: u[:i], Chart: u[i+1:], PlainHTTP: r.Spec.Insecure}
	target = "latest"
	if ref := r.Spec.Ref; ref != nil {
		switch {
		case ref.Digest != "":
			target = ""
		case ref.SemVer != "":
			target = ref.SemVer
		case ref.Tag != "":
			target = strings.ReplaceAll(ref.Tag, "_", "+")
		}
	}
	if src.Revision = hr.released(src.Chart, target); src.Revision == "" {
		return config.Source{}, "", fmt.Errorf("ref.digest %s: the chart is pinned by digest and helm-controller has released no version of it yet", r.Spec.Ref.Digest)
	}
	if version, digest, ok := strings.Cut(src.Revision, "+"); ok && src.Revision != target {
		// helm-controller renders a chart from an OCIRepository with the
		// artifact's digest as the version's build metadata, and releases
		// it so: the registry's tag is the version without it.
		src.Revision = version
		src.Helm = &config.HelmSource{ChartVersion: version + "+" + digest}
	}
	return src, target, nil
}

// valuesReference is one entry of a HelmRelease's spec.valuesFrom.
type valuesReference struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	ValuesKey  string `json:"valuesKey"`
	TargetPath string `json:"targetPath"`
	Optional   bool   `json:"optional"`
}

// listHelmReleases lists the HelmReleases and keeps those whose chart is in
// a GitRepository and that apply to this cluster.
func (d *discovery) listHelmReleases(ctx context.Context) ([]fluxObject, error) {
	items, err := d.list(ctx, HelmReleases, d.opts.Namespace, d.opts.Selector)
	if err != nil {
		return nil, err
	}
	d.listedFlux(items)
	var out []fluxObject
	for i := range items {
		u := &items[i]
		var hr helmRelease
		if err := decode(u, &hr); err != nil {
			d.fail(ref(u), "", err)
			continue
		}
		if reason := otherFluxCluster(hr.Spec.KubeConfig); reason != "" {
			d.skip(ref(u), "%s", reason)
			continue
		}
		if r := hr.Spec.ChartRef; r != nil {
			if r.Namespace == "" {
				r.Namespace = u.GetNamespace()
			}
			if r.Kind != "OCIRepository" && r.Kind != "HelmChart" {
				d.skip(ref(u), "chartRef %s: a chartRef names an OCIRepository or a HelmChart", r)
				continue
			}
			out = append(out, fluxObject{u: u, hr: &hr, source: *r})
			continue
		}
		if hr.Spec.Chart == nil {
			d.fail(ref(u), "", fmt.Errorf("the HelmRelease has neither spec.chart nor spec.chartRef"))
			continue
		}
		chart := hr.Spec.Chart.Spec
		src := chart.SourceRef
		if src.Namespace == "" {
			src.Namespace = u.GetNamespace()
		}
		if src.Kind != "GitRepository" && src.Kind != "HelmRepository" {
			d.notScanned(ref(u), "chart %s comes from %s: driftscan renders charts from GitRepositories and HelmRepositories only", chart.Chart, src)
			continue
		}
		out = append(out, fluxObject{u: u, hr: &hr, source: src})
	}
	return out, nil
}

// helmReleaseApp is the app of a HelmRelease whose chart is a folder of a
// GitRepository:
//   - the release is spec.releaseName, else Flux's default
//     [targetNamespace-]name, in targetNamespace, else the HelmRelease's
//     namespace;
//   - chart.spec.valuesFiles (relative to the repository root) become the
//     scanner's values files (relative to the chart folder);
//   - valuesFrom ConfigMaps and Secrets are read from the HelmRelease's
//     namespace, in order, then spec.values merged on top, as Flux does; the
//     result goes to the scanner as inline values (HelmSource.Values).
//     Secret values appear in no error.
//
// helm-controller reverts live changes only with driftDetection.mode
// enabled: that is when GitOps.SelfHeal is set. A Helm upgrade deletes what
// left the chart, so Prune is always set.
func (d *discovery) helmReleaseApp(ctx context.Context, u *unstructured.Unstructured, hr *helmRelease, src config.Source, cache map[string]cached) (config.App, []string) {
	var chart chartSpec // empty for a chartRef
	if hr.Spec.Chart != nil {
		chart = hr.Spec.Chart.Spec
	}
	if src.Chart == "" {
		src.Path = cleanPath(chart.Chart)
	}
	// helm-controller installs and upgrades with a client of the
	// cluster: the chart's lookup reads it.
	hs := &config.HelmSource{ReleaseName: hr.Spec.ReleaseName, Lookup: true}
	if src.Helm != nil {
		hs.ChartVersion = src.Helm.ChartVersion
	}
	// source-controller packages the chart with the valuesFiles merged
	// in place of its values.yaml.
	hs.ValuesFilesReplaceDefaults = chart.hasValuesFiles()
	if src.Chart == "" {
		// A chart in Git: source-controller marks its version with the
		// commit (reconcileStrategy Revision) and the HelmChart's
		// generation (valuesFiles), and helm-controller renders it so.
		var version string
		version, hs.VersionMetadata = hr.releasedVersion()
		if chart.ReconcileStrategy != "Revision" {
			// source-controller builds it again only for a new version
			// (helmchart_controller.go, BuildOptions.CachedChart).
			hs.KeptChartVersion = version
		}
	}
	if hs.ReleaseName == "" {
		hs.ReleaseName = u.GetName()
		if hr.Spec.TargetNamespace != "" {
			hs.ReleaseName = hr.Spec.TargetNamespace + "-" + u.GetName()
		}
	}
	files := chart.ValuesFiles
	if chart.ValuesFile != "" {
		files = append([]string{chart.ValuesFile}, files...)
	}
	for _, f := range files {
		if src.Chart != "" {
			// In the chart, as source-controller merges them.
			hs.ChartValues = append(hs.ChartValues, config.ValuesFile{Path: cleanPath(f)})
			continue
		}
		hs.ValuesFiles = append(hs.ValuesFiles, relPath(src.Path, cleanPath(f)))
	}
	values, secretValues, problems := d.helmReleaseValues(ctx, u, hr, cache)
	hs.Secret = secretValues
	if len(values) > 0 {
		// As helm-controller hands them to Helm: one map.
		hs.Values = values
	}
	for _, pr := range hr.Spec.PostRenderers {
		if pr.Kustomize == nil {
			continue
		}
		r := config.PostRenderer{Images: pr.Kustomize.Images}
		for _, p := range pr.Kustomize.Patches {
			r.Patches = append(r.Patches, config.FluxPatch{Patch: p.Patch, Target: p.Target})
		}
		hs.PostRenderers = append(hs.PostRenderers, r)
	}
	if m := hr.Spec.CommonMetadata; m != nil {
		hs.CommonLabels, hs.CommonAnnotations = m.Labels, m.Annotations
	}
	// helm-controller's CRD policies (internal/action crdPolicyOrDefault):
	// Create when unset, for install and upgrade alike.
	install, upgrade := cmp.Or(hr.Spec.Install.CRDs, "Create"), cmp.Or(hr.Spec.Upgrade.CRDs, "Create")
	for _, p := range []struct{ field, policy string }{{"install", install}, {"upgrade", upgrade}} {
		if p.policy != "Skip" && p.policy != "Create" && p.policy != "CreateReplace" {
			problems = append(problems, fmt.Sprintf("spec.%s.crds %q is not Skip, Create or CreateReplace: helm-controller fails the release", p.field, p.policy))
		}
	}
	hs.SkipCRDs = install == "Skip" && upgrade == "Skip"
	// The release exists, so the action that made it validated its values
	// against the chart's schema, or was told not to.
	hs.SkipSchemaValidation = hr.Spec.Install.DisableSchemaValidation || hr.Spec.Upgrade.DisableSchemaValidation
	hs.UpgradeCRDs = upgrade
	// Create goes through Helm's Create, which with server-side apply
	// updates a CRD that exists and without it skips it (AlreadyExists).
	ssa := hr.Spec.Install.ServerSideApply == nil || *hr.Spec.Install.ServerSideApply
	switch hr.Spec.Upgrade.ServerSideApply {
	case "enabled":
		ssa = true
	case "disabled":
		ssa = false
	}
	hs.CRDsKept = upgrade == "Skip" || upgrade == "Create" && !ssa
	src.Helm = hs
	ns := hr.Spec.TargetNamespace
	if ns == "" {
		ns = u.GetNamespace()
	}
	dd := hr.Spec.DriftDetection
	app := config.App{
		Owner: d.owner(u, u.GetNamespace()), Namespace: ns, Source: src,
		Appliers: []string{helmApplier},
		GitOps:   fluxGitOps(u, dd != nil && dd.Mode == "enabled", true, hr.Spec.Suspend),
	}
	if !hr.Spec.Suspend {
		depsReady := d.dependenciesReady(u, hr.Spec.DependsOn, func(*unstructured.Unstructured) bool { return true })
		helmReleaseBlocked(u, hr, depsReady, hs.Secret).set(app.GitOps)
	}
	return app, problems
}

// cached is a ConfigMap or Secret read for valuesFrom.
type cached struct {
	obj *unstructured.Unstructured
	err error
}

// helmReleaseValues merges a HelmRelease's valuesFrom and values, and
// lists the values that came from Secrets (config.HelmSource.Secret).
func (d *discovery) helmReleaseValues(ctx context.Context, u *unstructured.Unstructured, hr *helmRelease, cache map[string]cached) (values map[string]any, secretValues, problems []string) {
	values = map[string]any{}
	ns := u.GetNamespace()
	for _, vf := range hr.Spec.ValuesFrom {
		what := fmt.Sprintf("valuesFrom %s %s/%s", vf.Kind, ns, vf.Name)
		key := vf.ValuesKey
		if key == "" {
			key = "values.yaml"
		}
		obj, err := d.getValuesSource(ctx, cache, vf.Kind, ns, vf.Name)
		if apierrors.IsNotFound(err) {
			if !vf.Optional {
				problems = append(problems, what+" not found")
			}
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", what, err))
			continue
		}
		data, ok, err := valuesData(obj, vf.Kind, key)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s key %s: %v", what, key, err))
			continue
		}
		if !ok {
			if !vf.Optional {
				problems = append(problems, fmt.Sprintf("%s has no key %s", what, key))
			}
			continue
		}
		secret := vf.Kind == "Secret"
		if secret {
			secretValues = append(secretValues, data)
		}
		if vf.TargetPath != "" {
			if err := strvals.ParseInto(vf.TargetPath+"="+escapeSetValue(data), values); err != nil {
				if secret {
					problems = append(problems, fmt.Sprintf("%s key %s: cannot set targetPath %s", what, key, vf.TargetPath))
				} else {
					problems = append(problems, fmt.Sprintf("%s key %s: targetPath %s: %v", what, key, vf.TargetPath, err))
				}
			}
			continue
		}
		m, err := yamlMap([]byte(data))
		if err != nil {
			if secret {
				// YAML errors may quote the document.
				problems = append(problems, fmt.Sprintf("%s key %s is not a YAML map of values", what, key))
			} else {
				problems = append(problems, fmt.Sprintf("%s key %s: %v", what, key, err))
			}
			continue
		}
		if secret {
			secretValues = append(secretValues, leafTexts(m)...)
		}
		values = mergeValues(values, m)
	}
	return mergeValues(values, hr.Spec.Values), secretValues, problems
}

// leafTexts are the texts of the scalars in v, as --set carries them.
func leafTexts(v any) []string {
	switch t := v.(type) {
	case map[string]any:
		var out []string
		for _, x := range t {
			out = append(out, leafTexts(x)...)
		}
		sort.Strings(out)
		return out
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, leafTexts(x)...)
		}
		return out
	case nil:
		return nil
	case string:
		return []string{t}
	}
	return []string{fmt.Sprint(v)}
}

// getValuesSource reads a ConfigMap or Secret once per discovery.
func (d *discovery) getValuesSource(ctx context.Context, cache map[string]cached, kind, ns, name string) (*unstructured.Unstructured, error) {
	key := kind + "/" + ns + "/" + name
	if c, ok := cache[key]; ok {
		return c.obj, c.err
	}
	var c cached
	switch kind {
	case "ConfigMap":
		c.obj, c.err = d.client.Resource(configMaps).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	case "Secret":
		c.obj, c.err = d.client.Resource(secrets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	default:
		c.err = fmt.Errorf("kind %q: want ConfigMap or Secret", kind)
	}
	cache[key] = c
	return c.obj, c.err
}

// valuesData is the text under key in a ConfigMap's data or a Secret's
// (decoded) data.
func valuesData(obj *unstructured.Unstructured, kind, key string) (string, bool, error) {
	s, ok, _ := unstructured.NestedString(obj.Object, "data", key)
	if !ok || kind != "Secret" {
		return s, ok, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", false, fmt.Errorf("not base64")
	}
	return string(b), true, nil
}

// escapeSetValue makes a value literal for strvals: backslashes and commas
// escaped.
func escapeSetValue(v string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(v)
}
