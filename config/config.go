// Package config is the ScanConfig file: which apps to scan, where their
// sources live, how findings are judged, and who is told about them. It
// decodes and validates; it fetches, renders and reads nothing else.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/report"
)

// APIVersion and Kind identify a scan configuration file.
const (
	APIVersion = "driftscan.dev/v1alpha1"
	Kind       = "ScanConfig"
)

// DefaultAppliers are the field managers of the usual GitOps appliers: what
// they own stands for Git. Each call returns a new slice.
func DefaultAppliers() []string {
	return []string{"argocd-controller", "kustomize-controller", "helm-controller"}
}

// Config is a ScanConfig file: which apps to scan and how to judge what is found.
type Config struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Appliers are the field managers that stand for Git.
	Appliers []string `yaml:"appliers"`
	Apps     []App    `yaml:"apps"`
	// Rules classify findings by field manager before the built-in rules.
	Rules []classify.Rule `yaml:"rules"`
	// Ignore rules hide findings; each is a debt with an owner and a review date.
	Ignore []classify.IgnoreRule `yaml:"ignore"`
	// Redact rules mask the values of matching findings like Secret data.
	Redact []RedactRule `yaml:"redact"`
	// SensitiveEnvNames are regular expressions on environment variable
	// names whose values are masked like Secret data wherever a container
	// declares them; empty means DefaultSensitiveEnvNames.
	SensitiveEnvNames []string `yaml:"sensitiveEnvNames"`
	// Owners say where each owner is told about drift; Notify configures
	// the channels. Both are read by package notify.
	Owners Owners  `yaml:"owners"`
	Notify *Notify `yaml:"notify"`
	// Audit says where the cluster's audit log is, to name the user behind
	// each finding.
	Audit *Audit `yaml:"audit"`
	// Git holds the credentials Git sources are fetched with.
	Git Git `yaml:"git"`
	// Forge is where backports open their pull requests (backport --pr).
	Forge *Forge `yaml:"forge"`
	// Contracts say per group of namespaces who may change live state;
	// every finding is judged against them (package contract).
	Contracts []contract.Contract `yaml:"contracts"`

	// Dir is the folder of the config file; relative source paths start there.
	Dir string `yaml:"-"`
}

// App is one application: a Git source and who owns it.
type App struct {
	Name  string `yaml:"name"`
	Owner string `yaml:"owner"`
	// Namespace is given to namespaced objects that name none.
	Namespace string `yaml:"namespace"`
	Source    Source `yaml:"source"`
	// Appliers are field managers that stand for Git for this app only, in
	// addition to the config's (kustomize-controller for a Flux app).
	Appliers []string `yaml:"appliers"`
	// AppliedAs says how the app's applier rewrites the rendered objects
	// before it applies them, so that Git is compared as it was applied.
	// Discovery sets AppliedAsFlux for a Flux Kustomization; a config file
	// may set it for an app kustomize-controller applies.
	AppliedAs AppliedAs `yaml:"appliedAs"`
	// Decryption, "sops", says Git holds SOPS-encrypted objects that the
	// applier decrypts before it applies them (a Flux Kustomization's
	// spec.decryption; discovery sets it). driftscan never holds the key:
	// an encrypted value is compared by who wrote it live (an applier, or
	// someone else), and never shown.
	Decryption Decryption `yaml:"decryption"`
	// TargetRevision, set by discovery, is the commit the reconciler is told
	// to reach when Git has moved past the one it last applied, which is
	// then Source.Revision: the scan compares live with what was applied
	// and reports the difference to TargetRevision as pending sync, not as
	// drift.
	TargetRevision string `yaml:"-"`
	// GitOps is set for apps discovered from Argo CD or Flux.
	GitOps *report.GitOps `yaml:"-"`
	// KustomizeBuild, set by discovery from Argo CD's argocd-cm
	// kustomize.buildOptions, is how the reconciler runs `kustomize build`;
	// nil builds as driftscan does (helmCharts inflated, files only inside
	// each kustomization's folder).
	KustomizeBuild *KustomizeBuild `yaml:"-"`
	// ExcludedKinds, set by discovery for an Argo CD Application, are the
	// kinds Argo CD drops from its Git before it compares or syncs it
	// (argocd-cm's resource.exclusions and resource.inclusions, and the
	// kinds it always excludes): the scan does not compare such an object
	// and warns that Argo CD never applies it.
	ExcludedKinds *KindFilter `yaml:"-"`
	// ArgoProject, set by discovery for an Argo CD Application, are the
	// kinds its AppProject lets it sync: an object the project does not
	// permit is an error of the scan, since Argo CD fails every sync of an
	// app that declares one.
	ArgoProject *ProjectResources `yaml:"-"`
	// ArgoLabelTracking, set by discovery for an Argo CD Application, says
	// Argo CD tracks what it applies by its instance label (argocd-cm's
	// application.resourceTrackingMethod: label), not by its tracking-id
	// annotation (annotation, Argo CD 3's default, or annotation+label).
	ArgoLabelTracking bool `yaml:"-"`
	// ArgoInstanceLabel, set by discovery for an Argo CD Application, is
	// the key of Argo CD's instance label (argocd-cm's
	// application.instanceLabelKey), "" for app.kubernetes.io/instance.
	ArgoInstanceLabel string `yaml:"-"`
	// ArgoInstance, set by discovery for an Argo CD Application, is the
	// name Argo CD gives it in its tracking, its build environment
	// ($ARGOCD_APP_NAME) and its parameter files
	// (.argocd-source-<instance>.yaml): the Application's name in Argo
	// CD's own namespace, <namespace>_<name> outside it.
	ArgoInstance string `yaml:"-"`
	// ArgoInstallationID, set by discovery for an Argo CD Application, is
	// argocd-cm's installationID ("" when it sets none): the id that tells
	// two Argo CD installations on one cluster apart. nil when discovery
	// could not read argocd-cm.
	ArgoInstallationID *string `yaml:"-"`
	// ArgoManagedNamespace, set by discovery for an Argo CD Application
	// that syncs with CreateNamespace=true and sets
	// spec.syncPolicy.managedNamespaceMetadata, is that metadata: Argo CD
	// applies it to the app's namespace (Namespace) with server-side apply
	// at each sync, unless the app's own manifests declare that
	// namespace, and never compares it. Where names the field, for
	// reports.
	ArgoManagedNamespace *NamespaceMetadata `yaml:"-"`
	// ArgoSource, set by discovery for an Argo CD Application's source in
	// Git, is what Argo CD's repo server merges the parameter files in the
	// source's folder into (.argocd-source.yaml and
	// .argocd-source-<app>.yaml, which Argo CD Image Updater writes back)
	// and in whose values it substitutes its build environment
	// ($ARGOCD_APP_NAME, $ARGOCD_APP_REVISION, ...): the scanner asks
	// Options.ArgoSourceFiles for the source as Argo CD renders it.
	ArgoSource *ArgoSource `yaml:"-"`
	// Error, set by discovery, says why the app's source must not be
	// fetched (a repository its AppProject does not allow, a path that
	// leaves the repository): the app is reported with this error and its
	// source is never read.
	Error string `yaml:"-"`
}

// ArgoSource is an Application's source as Argo CD holds it, for the
// parameter files its repo server merges into it.
type ArgoSource struct {
	// Source is the Application's source, and Refs its sources with a
	// ref (for $ref/ values files), as their JSON.
	Source []byte
	Refs   []byte
	// Name is the release name Argo CD gives a chart: the Application's.
	Name string
	// Project and Namespace (the destination's) are the Application's,
	// for Argo CD's build environment ($ARGOCD_APP_PROJECT_NAME, ...).
	Project, Namespace string
}

// AppliedAs names an applier that rewrites objects before it applies them.
type AppliedAs string

const (
	// AppliedAsIs: the applier sends the rendered objects unchanged
	// (Argo CD, helm-controller, kubectl).
	AppliedAsIs AppliedAs = ""
	// AppliedAsFlux: Flux's kustomize-controller normalises every object
	// before its server-side apply (a typed round trip, default port
	// protocols, a Secret's stringData moved to data): see scanner's
	// applied_flux.go.
	AppliedAsFlux AppliedAs = "flux"
)

// Decryption names how an applier decrypts what Git holds.
type Decryption string

// DecryptionSOPS: values encrypted by SOPS, as kustomize-controller
// decrypts them (scanner's sops.go).
const DecryptionSOPS Decryption = "sops"

// Validate says whether d is a known decryption.
func (d Decryption) Validate() error {
	if d == "" || d == DecryptionSOPS {
		return nil
	}
	return fmt.Errorf("decryption %q: want %q or nothing", string(d), string(DecryptionSOPS))
}

// Validate says whether a is one of the known appliers.
func (a AppliedAs) Validate() error {
	switch a {
	case AppliedAsIs, AppliedAsFlux:
		return nil
	}
	return fmt.Errorf("appliedAs %q: want %q or nothing", string(a), string(AppliedAsFlux))
}

// Source says where an app's desired state lives and how to render it.
type Source struct {
	// Path is the folder, relative to the config file's folder, or to the
	// repository root when Repo is set.
	Path string `yaml:"path"`
	// Repo is a Git URL (https://, ssh://, git@, file://). Empty means Path
	// is a local folder.
	Repo string `yaml:"repo"`
	// Revision is a branch, tag or commit SHA; default the remote HEAD.
	// For a Chart, the chart's version or a semver constraint ("^1.2");
	// default the newest version that is not a pre-release.
	Revision string `yaml:"revision"`
	// Chart, when set, makes Repo a Helm chart repository (an https:// or
	// http:// URL with an index.yaml, or an oci:// registry path holding
	// the chart as `helm push` stores it) and names the chart in it, as an Argo
	// CD Application's chart source and a Flux HelmRepository do: the chart
	// is fetched, checked against the index's digest, and rendered with
	// Helm. Path is not used; helm.valuesFiles are then the config
	// author's, relative to the config file's folder, as `helm install -f`
	// reads them.
	Chart string `yaml:"chart"`
	// PlainHTTP, for a Chart from an oci:// registry or an OCI artifact,
	// speaks HTTP rather than HTTPS to it; no token is sent then.
	PlainHTTP bool `yaml:"plainHTTP"`
	// An oci:// Repo without a Chart is an OCI artifact: a tarball of
	// manifests pushed to a registry (`flux push artifact`, an Argo CD OCI
	// source), unpacked, Path relative to its root. Revision is a tag, a
	// semver constraint over the tags, or a digest (sha256:<hex>, or
	// <tag>@sha256:<hex> as Flux records it); default the tag latest.
	// Layer is the media type of the layer that holds the files; default
	// the artifact's one content layer (a tar or tar+gzip layer; the
	// chart's layer in a Helm chart), as Argo CD picks it.
	Layer string `yaml:"layer"`
	// FluxArtifact reads an OCI artifact as source-controller does for an
	// OCIRepository: the first layer (or the first of type Layer), a gzip
	// tarball. Set by discovery.
	FluxArtifact bool `yaml:"-"`
	// RecurseSubmodules checks out the Git repository's submodules, at the
	// commits it records, from the URLs its .gitmodules names (relative
	// ones against Repo), as a Flux GitRepository with recurseSubmodules
	// does; without it a submodule's folder is empty.
	RecurseSubmodules bool `yaml:"recurseSubmodules"`
	// Includes are a Flux GitRepository's spec.include: the artifacts of
	// other GitRepositories that source-controller copies into this
	// repository's files before anything is built from them. Set by
	// discovery.
	Includes []Include `yaml:"-"`
	// Auth names where Git credentials come from; values are never printed.
	Auth      GitAuth          `yaml:"auth"`
	Helm      *HelmSource      `yaml:"helm"`
	Kustomize *KustomizeSource `yaml:"kustomize"`
	// Directory narrows a folder of plain manifests as an Argo CD
	// directory source does; nil reads every file in every subfolder.
	Directory *DirectorySource `yaml:"directory"`
	// ReleaseName names the Helm release when Helm is not set and Path
	// turns out to be a chart (it holds a Chart.yaml); default the folder's
	// name. Not read from config files: discovery from Argo CD sets it to
	// the Application's name, because that is what Argo CD names the release
	// of every chart it renders.
	ReleaseName string `yaml:"-"`
}

// Include is one GitRepository whose artifact source-controller copies into
// another's (spec.include): its files as its own artifact holds them (its
// includes copied in, what its ignore rules match left out), FromPath of
// them copied to ToPath of the including repository.
type Include struct {
	// Source is the included repository: its Repo, the Revision of the
	// artifact included, and its own Includes.
	Source Source
	// Ignore is the included GitRepository's spec.ignore.
	Ignore *string
	// FromPath is the folder (or file) of its artifact copied, "" the
	// whole; ToPath is where, relative to the including repository's root.
	FromPath, ToPath string
}

// GitAuth names environment variables or files that hold Git credentials.
type GitAuth struct {
	// TokenEnv is an environment variable holding an HTTPS token.
	TokenEnv string `yaml:"tokenEnv"`
	// Username goes with the token; default "git".
	Username string `yaml:"username"`
	// SSHKeyFile is a private key file for ssh:// and git@ URLs.
	SSHKeyFile string `yaml:"sshKeyFile"`
	// SSHKeyEnv is an environment variable holding a private key.
	SSHKeyEnv string `yaml:"sshKeyEnv"`
}

// HelmSource renders a chart with the Helm SDK.
type HelmSource struct {
	ReleaseName string `yaml:"releaseName"`
	// FluxArtifact says the chart is read from a Flux GitRepository's
	// artifact: what its .sourceignore files and SourceIgnore (its
	// spec.ignore) match is not in the chart (internal/sourceignore). Set
	// by discovery.
	FluxArtifact bool     `yaml:"-"`
	SourceIgnore *string  `yaml:"-"`
	ValuesFiles  []string `yaml:"valuesFiles"`
	// Values are inline values, merged after the values files and before
	// Set, as Argo CD's helm.values / valuesObject and a Flux
	// HelmRelease's values are: lists and typed values kept as written.
	Values map[string]any    `yaml:"values"`
	Set    map[string]string `yaml:"set"`
	// SetString sets each key to its value as a string, after Set (`helm
	// --set-string`; Argo CD's parameters with forceString).
	SetString map[string]string `yaml:"setString"`
	// SetFiles sets each key to the text of a file, relative to the chart
	// folder and inside the repository, after Set (`helm --set-file`,
	// Argo CD's helm.fileParameters).
	SetFiles map[string]string `yaml:"setFiles"`
	// Secret are values that came from Secrets (a Flux HelmRelease's
	// valuesFrom): a render error never shows them.
	Secret []string `yaml:"-"`
	// PostRenderers, set by discovery for a Flux HelmRelease, run over the
	// chart's output in order, as helm-controller's kustomize post-renderer
	// does: a kustomization of the output with these patches and images.
	PostRenderers []PostRenderer `yaml:"-"`
	// CommonLabels and CommonAnnotations, set by discovery from a Flux
	// HelmRelease's spec.commonMetadata, are set on every object's
	// metadata after the post-renderers, as helm-controller's common
	// renderer sets them.
	CommonLabels, CommonAnnotations map[string]string `yaml:"-"`
	// Lookup says the chart's applier renders it against the cluster
	// (helm install and upgrade, Flux's helm-controller): Helm's lookup
	// reads the live object there, and so does the scan (a GET, or a LIST
	// without a name; never a write). False, lookup gives an empty map, as
	// `helm template` and Argo CD render. Set by discovery for a Flux
	// HelmRelease.
	Lookup bool `yaml:"lookup"`
	// SkipCRDs leaves out the chart's crds/ folder (Argo CD's
	// helm.skipCrds, `helm template --skip-crds`; discovery sets it for a
	// Flux HelmRelease whose install.crds and upgrade.crds are Skip).
	SkipCRDs bool `yaml:"skipCrds"`
	// SkipSchemaValidation renders the chart without checking the values
	// against its values.schema.json (Argo CD's helm.skipSchemaValidation,
	// `helm template --skip-schema-validation`; discovery sets it for a
	// Flux HelmRelease whose install or upgrade disableSchemaValidation).
	SkipSchemaValidation bool `yaml:"skipSchemaValidation"`
	// UpgradeCRDs, set by discovery for a Flux HelmRelease, is its
	// spec.upgrade.crds (Create when unset): whether helm-controller
	// applies the chart's CRDs at an upgrade (Create, with server-side
	// apply, and CreateReplace do; Skip does not). "" for any other app.
	// helm-controller applies only the CustomResourceDefinitions of a
	// chart's crds/ folder, and its drift detection does not cover them.
	UpgradeCRDs string `yaml:"-"`
	// CRDsKept, set by discovery for a Flux HelmRelease, says helm-controller
	// never updates a CRD of the chart's crds/ once it exists: upgrade.crds
	// Skip, or Create applied with client-side apply (install.serverSideApply
	// false, or upgrade.serverSideApply disabled), which skips what exists.
	CRDsKept bool `yaml:"-"`
	// Namespace is the release's namespace when it is not the app's
	// (Argo CD's helm.namespace): what .Release.Namespace renders as.
	Namespace string `yaml:"namespace"`
	// KubeVersion and APIVersions replace the cluster's in the chart's
	// .Capabilities (Argo CD's helm.kubeVersion and helm.apiVersions).
	KubeVersion string   `yaml:"kubeVersion"`
	APIVersions []string `yaml:"apiVersions"`
	// ChartVersion, set by discovery, is the version the chart renders as
	// (.Chart.Version) when the reconciler changes it: helm-controller
	// appends the digest of an OCIRepository's artifact ("1.1.0+f57c38d97ca9").
	ChartVersion string `yaml:"-"`
	// VersionMetadata, set by discovery, replaces the build metadata of
	// the chart's own version (.Chart.Version <version>+<metadata>): as
	// source-controller builds a HelmChart from Git (the commit's first 12
	// hex digits with reconcileStrategy Revision) or with valuesFiles
	// (the HelmChart's generation).
	VersionMetadata string `yaml:"-"`
	// KeptChartVersion, set by discovery, is the version helm-controller
	// last released of a chart that source-controller builds from Git with
	// reconcileStrategy ChartVersion (the default): source-controller keeps
	// the chart it built for a version, so a change to the chart in Git
	// that keeps this version is never released.
	KeptChartVersion string `yaml:"-"`
	// ValuesFilesReplaceDefaults: the values files (ValuesFiles, and a
	// chart repository's ChartValues) replace the chart's values.yaml
	// instead of merging over it, as source-controller builds a Flux
	// HelmChart with valuesFiles: values.yaml counts only when listed.
	// Set by discovery.
	ValuesFilesReplaceDefaults bool `yaml:"-"`
	// IgnoreMissingValuesFiles leaves out a values file that does not
	// exist, as Argo CD's helm.ignoreMissingValueFiles does (one values
	// file per environment, not every environment having one).
	IgnoreMissingValuesFiles bool `yaml:"ignoreMissingValuesFiles"`
	// ArgoValueFiles, set by discovery for an Argo CD Application, resolves
	// ValuesFiles as argocd-repo-server v3.5 resolves its valueFiles: a
	// glob is the files it matches, and each file counts once, at its
	// first place (render's valuesFiles).
	ArgoValueFiles bool `yaml:"-"`
	// ChartValues, set by discovery for a chart from a Helm repository,
	// are the reconciler's values files in its order: files of the chart
	// itself (Repo empty), or of a Git repository at a revision (an Argo
	// CD `$ref` source). They come before ValuesFiles.
	ChartValues []ValuesFile `yaml:"-"`
}

// ValuesFile is a values file in a chart (Repo empty) or at Path in a Git
// repository at Revision.
type ValuesFile struct {
	Repo, Revision, Path string
}

// DirectorySource is an Argo CD directory source's settings: only the
// folder's own files unless Recurse, those whose path (relative to the
// folder) matches Include and not Exclude, as Argo CD's glob matches them
// ('*' crosses folders, {a,b} is either), none holding the text
// +argocd:skip-file-rendering.
type DirectorySource struct {
	Recurse bool   `yaml:"recurse"`
	Include string `yaml:"include"`
	Exclude string `yaml:"exclude"`
}

// KustomizeBuild are the `kustomize build` flags a reconciler passes that
// change what a build makes.
type KustomizeBuild struct {
	// EnableHelm is --enable-helm: helmCharts are inflated.
	EnableHelm bool
	// LoadRestrictionsNone is --load-restrictor LoadRestrictionsNone: a
	// kustomization may read files outside its folder (still inside the
	// repository here).
	LoadRestrictionsNone bool
}

// KustomizeSource renders a kustomization with krusty.
type KustomizeSource struct {
	// Flux, set by discovery for every Flux Kustomization, builds the
	// folder as kustomize-controller does (render's flux.go), from the
	// files of its source's artifact.
	Flux *FluxBuild `yaml:"-"`
	// Argo, set by discovery for an Application's spec.source.kustomize,
	// is applied to the folder's kustomization as Argo CD applies it, with
	// `kustomize edit` before it builds (render's kustomize_argo.go).
	Argo *ArgoKustomize `yaml:"-"`
	// KubeVersion and APIVersions are the .Capabilities the kustomization's
	// helmCharts render with, in place of the cluster's: Argo CD's
	// kustomize.kubeVersion and kustomize.apiVersions, which it passes to
	// kustomize as --helm-kube-version and --helm-api-versions.
	KubeVersion string   `yaml:"kubeVersion"`
	APIVersions []string `yaml:"apiVersions"`
}

// ArgoKustomize are the overrides of an Application's spec.source.kustomize.
type ArgoKustomize struct {
	NamePrefix, NameSuffix, Namespace string
	// Images are `kustomize edit set image` arguments: [name=]newName[:tag][@digest].
	Images                                      []string
	Replicas                                    []KustomizeReplica
	CommonLabels, CommonAnnotations             map[string]string
	ForceCommonLabels, ForceCommonAnnotations   bool
	LabelWithoutSelector, LabelIncludeTemplates bool
	// Patches are kustomize patches (path or patch, target, options).
	Patches                 []map[string]any
	Components              []string
	IgnoreMissingComponents bool
}

// KustomizeReplica is a replica count override.
type KustomizeReplica struct {
	Name  string
	Count int64
}

// FluxBuild is what kustomize-controller adds to a build: the overrides of
// a Kustomization's spec, which it writes into the folder's kustomization
// (one it generates for a folder without), and its post-build variables.
type FluxBuild struct {
	// SourceIgnore is the GitRepository's spec.ignore: gitignore patterns
	// of files source-controller leaves out of the artifact, besides the
	// repository's .sourceignore files (internal/sourceignore).
	SourceIgnore *string
	// Unfiltered says the artifact is an OCI layer kept as it is (an
	// OCIRepository's layerSelector operation copy): no ignore rule, not
	// even the defaults, leaves a file out.
	Unfiltered                              bool
	TargetNamespace, NamePrefix, NameSuffix string
	Patches                                 []FluxPatch
	Images                                  []FluxImage
	Components                              []string
	IgnoreMissingComponents                 bool
	// Labels and Annotations are spec.commonMetadata, set on every object.
	Labels, Annotations map[string]string
	// PostBuild says spec.postBuild is set: the variables below are
	// substituted only then, and only when there are some or
	// SubstituteAlways.
	PostBuild        bool
	SubstituteAlways bool
	// Vars are the variables: those of substituteFrom's ConfigMaps and
	// Secrets in order, then spec.postBuild.substitute over them, each
	// with its newlines removed, as Flux loads them.
	Vars map[string]string
	// Secret are the values that came from Secrets: masked wherever a
	// finding, an error or a log would show them.
	Secret []string
}

// FluxPatch is a patch of a Kustomization's spec.patches: its text and
// target (kustomize's selector fields).
type FluxPatch struct {
	Patch  string
	Target map[string]any
}

// PostRenderer is a HelmRelease's spec.postRenderers[].kustomize.
type PostRenderer struct {
	Patches []FluxPatch
	Images  []FluxImage
}

// FluxImage is an image override of a Kustomization's spec.images.
type FluxImage struct {
	Name, NewName, NewTag, Digest string
}

// Load reads a ScanConfig file. Unknown fields are an error that names
// the field and its line.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	abs, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg.Dir = abs
	return cfg, nil
}

// Parse decodes and validates a ScanConfig document.
func Parse(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if cfg.APIVersion != APIVersion || cfg.Kind != Kind {
		return nil, fmt.Errorf("want apiVersion %s and kind %s, got %q and %q", APIVersion, Kind, cfg.APIVersion, cfg.Kind)
	}
	if len(cfg.Appliers) == 0 {
		cfg.Appliers = DefaultAppliers()
	}
	var errs []error
	seen := map[string]bool{}
	for i, app := range cfg.Apps {
		switch {
		case app.Name == "":
			errs = append(errs, fmt.Errorf("apps[%d]: name is required", i))
		case seen[app.Name]:
			errs = append(errs, fmt.Errorf("apps[%d]: app %q is defined twice", i, app.Name))
		}
		seen[app.Name] = true
		if app.Source.Chart != "" && app.Source.Repo == "" {
			errs = append(errs, fmt.Errorf("app %q: source.chart needs source.repo, the Helm chart repository's URL", app.Name))
		} else if app.Source.Path == "" && app.Source.Repo == "" {
			errs = append(errs, fmt.Errorf("app %q: source.path or source.repo is required", app.Name))
		}
		if app.Source.Helm != nil && app.Source.Kustomize != nil {
			errs = append(errs, fmt.Errorf("app %q: source has both helm and kustomize", app.Name))
		}
		if err := app.Source.validate(); err != nil {
			errs = append(errs, fmt.Errorf("app %q: %w", app.Name, err))
		}
		if err := app.AppliedAs.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("app %q: %w", app.Name, err))
		}
		if err := app.Decryption.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("app %q: %w", app.Name, err))
		}
	}
	for i, c := range cfg.Git.Credentials {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("git.credentials[%d]: %w", i, err))
		}
	}
	for i, r := range cfg.Rules {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("rules[%d]: %w", i, err))
		}
	}
	for i, r := range cfg.Ignore {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("ignore[%d]: %w", i, err))
		}
	}
	for i, r := range cfg.Redact {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("redact[%d]: %w", i, err))
		}
	}
	for i, expr := range cfg.SensitiveEnvNames {
		if _, err := regexp.Compile(expr); err != nil {
			errs = append(errs, fmt.Errorf("sensitiveEnvNames[%d] %q: %w", i, expr, err))
		}
	}
	if cfg.Notify != nil || len(cfg.Owners) > 0 {
		var nc Notify
		if cfg.Notify != nil {
			nc = *cfg.Notify
		}
		if err := ValidateNotify(nc, cfg.Owners); err != nil {
			errs = append(errs, fmt.Errorf("notify: %w", err))
		}
	}
	if err := cfg.Forge.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("forge: %w", err))
	}
	if err := contract.Validate(cfg.Contracts); err != nil {
		errs = append(errs, fmt.Errorf("contracts: %w", err))
	}
	if len(cfg.Contracts) > 0 && cfg.Notify != nil && cfg.Notify.Route.PagerDuty == nil {
		// Once there are contracts, what pages is what breaks one.
		cfg.Notify.Route.PagerDuty = ContractRoute()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// New returns an empty config: no app, the default appliers. Apps are added
// by discovery or by the caller.
func New() *Config {
	return &Config{APIVersion: APIVersion, Kind: Kind, Appliers: DefaultAppliers()}
}

// ForFolder is the config of one folder scanned without a config file
// (`--path DIR`): one app named after the folder, its objects in namespace
// unless they name one.
func ForFolder(dir, namespace string) (*Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, err
	}
	cfg := New()
	cfg.Dir = abs
	cfg.Apps = []App{{Name: filepath.Base(abs), Namespace: namespace, Source: Source{Path: "."}}}
	return cfg, nil
}

// NamespaceMetadata is the labels and annotations a reconciler applies to
// an app's namespace (App.ArgoManagedNamespace).
type NamespaceMetadata struct {
	Labels, Annotations map[string]string
	// Where names where they are declared: the Application and the field.
	Where string
}
