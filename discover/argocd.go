package discover

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/source"
)

// argoApplier is the field manager Argo CD applies with.
const argoApplier = "argocd-controller"

// application holds the fields of an Argo CD Application that discovery
// reads. See
// https://github.com/argoproj/argo-cd/blob/master/pkg/apis/application/v1alpha1/types.go
type application struct {
	Spec struct {
		Project     string `json:"project"`
		Destination struct {
			Server    string `json:"server"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"destination"`
		Source  *appSource  `json:"source"`
		Sources []appSource `json:"sources"`
		// SourceHydrator, when set, is what Argo CD syncs in place of
		// source and sources: the manifests its hydrator writes from the
		// dry source to syncSource's branch and path (GetSources).
		SourceHydrator *sourceHydrator `json:"sourceHydrator"`
		SyncPolicy     *struct {
			Automated *struct {
				Enabled  *bool `json:"enabled"`
				Prune    bool  `json:"prune"`
				SelfHeal bool  `json:"selfHeal"`
			} `json:"automated"`
			SyncOptions              []string `json:"syncOptions"`
			ManagedNamespaceMetadata *struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"managedNamespaceMetadata"`
		} `json:"syncPolicy"`
		IgnoreDifferences []struct {
			Group                 string   `json:"group"`
			Kind                  string   `json:"kind"`
			Name                  string   `json:"name"`
			Namespace             string   `json:"namespace"`
			JSONPointers          []string `json:"jsonPointers"`
			JQPathExpressions     []string `json:"jqPathExpressions"`
			ManagedFieldsManagers []string `json:"managedFieldsManagers"`
		} `json:"ignoreDifferences"`
	} `json:"spec"`
	Status struct {
		// History has one entry per successful sync, the newest last.
		History []struct {
			Revision string `json:"revision"`
		} `json:"history"`
		// Sync holds the revisions the last compare resolved the
		// target to (multi-source: one per source).
		Sync struct {
			Status    string   `json:"status"`
			Revision  string   `json:"revision"`
			Revisions []string `json:"revisions"`
		} `json:"sync"`
		// Conditions are the errors and warnings of its last compare.
		Conditions []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"conditions"`
		// OperationState is the last sync operation.
		OperationState *struct {
			Phase      string `json:"phase"`
			Message    string `json:"message"`
			SyncResult *struct {
				Revision  string   `json:"revision"`
				Revisions []string `json:"revisions"`
			} `json:"syncResult"`
		} `json:"operationState"`
	} `json:"status"`
}

// synced is the commit live is to be compared with: that of the
// Application's last successful sync (status.history, newest last), ""
// when it never synced a Git commit. status.sync.revision is not it: Argo
// CD moves that to the newest commit of the target at every refresh,
// before any sync (docs/verified.md) — unless Argo CD finds the app Synced
// there: then live already is what that commit declares, as Argo CD
// compares, and no sync of it will run (a commit that changes nothing
// Argo CD applies, or drops a field a server-side applied app no longer
// owns, as replicas an HPA scaled: e2e TestArgoCDRemovesReplicasAnHPAScaled).
func (a *application) synced() string {
	if a.Status.Sync.Status == "Synced" && hexCommit.MatchString(a.Status.Sync.Revision) && len(a.Status.Sync.Revisions) == 0 {
		return a.Status.Sync.Revision
	}
	if h := a.Status.History; len(h) > 0 && hexCommit.MatchString(h[len(h)-1].Revision) {
		return h[len(h)-1].Revision
	}
	return ""
}

// managedNamespace is the metadata Argo CD applies to the destination
// namespace at each sync (controller/sync_namespace.go: with the sync
// option CreateNamespace=true and spec.syncPolicy.managedNamespaceMetadata
// set, even empty), with the sync option it adds so that it applies them
// with server-side apply; nil when it applies none. object names the
// Application.
func (a *application) managedNamespace(object string) *config.NamespaceMetadata {
	sp := a.Spec.SyncPolicy
	if sp == nil || sp.ManagedNamespaceMetadata == nil || !slices.Contains(sp.SyncOptions, "CreateNamespace=true") {
		return nil
	}
	annotations := maps.Clone(sp.ManagedNamespaceMetadata.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["argocd.argoproj.io/sync-options"] = "ServerSideApply=true" // over any of the Application's
	return &config.NamespaceMetadata{Labels: sp.ManagedNamespaceMetadata.Labels, Annotations: annotations,
		Where: object + " spec.syncPolicy.managedNamespaceMetadata"}
}

// syncedVersion is the chart version of the Application's last successful
// sync, for a chart from a Helm repository (Argo CD records the version as
// the revision), "" when it never synced one.
func (a *application) syncedVersion() string {
	if h := a.Status.History; len(h) > 0 && !hexCommit.MatchString(h[len(h)-1].Revision) {
		return h[len(h)-1].Revision
	}
	return ""
}

// syncedDigest is the manifest digest (sha256:<hex>) of the OCI artifact
// the Application last synced, "" when it never synced one.
func (a *application) syncedDigest() string {
	if h := a.Status.History; len(h) > 0 {
		if r := h[len(h)-1].Revision; source.ArtifactDigest(r) == r {
			return r
		}
	}
	return ""
}

// ociRepo says whether an Application's repoURL is an OCI registry: Argo CD
// takes a Helm repository URL without a scheme (registry-1.docker.io/org)
// as one, as it does oci://.
func ociRepo(u string) bool {
	return strings.HasPrefix(strings.ToLower(u), "oci://") || !strings.Contains(u, "://")
}

// appSource is one entry of spec.source or spec.sources.
type appSource struct {
	RepoURL        string         `json:"repoURL"`
	TargetRevision string         `json:"targetRevision"`
	Path           string         `json:"path"`
	Chart          string         `json:"chart"`
	Ref            string         `json:"ref"`
	Helm           *appHelm       `json:"helm"`
	Kustomize      *appKustomize  `json:"kustomize"`
	Directory      *appDirectory  `json:"directory"`
	Plugin         map[string]any `json:"plugin"`
}

type appHelm struct {
	ReleaseName string   `json:"releaseName"`
	ValueFiles  []string `json:"valueFiles"`
	Parameters  []struct {
		Name        string `json:"name"`
		Value       string `json:"value"`
		ForceString bool   `json:"forceString"`
	} `json:"parameters"`
	Values                  string         `json:"values"`
	ValuesObject            map[string]any `json:"valuesObject"`
	IgnoreMissingValueFiles bool           `json:"ignoreMissingValueFiles"`
	FileParameters          []struct {
		Name string `json:"name"`
		Path string `json:"path"`
	} `json:"fileParameters"`
	SkipCrds             bool     `json:"skipCrds"`
	SkipSchemaValidation bool     `json:"skipSchemaValidation"`
	Namespace            string   `json:"namespace"`
	KubeVersion          string   `json:"kubeVersion"`
	APIVersions          []string `json:"apiVersions"`
}

// appKustomize is an Application source's kustomize: the overrides Argo CD
// applies with kustomize edit (argoKustomize).
type appKustomize struct {
	NamePrefix                string            `json:"namePrefix"`
	NameSuffix                string            `json:"nameSuffix"`
	Namespace                 string            `json:"namespace"`
	Images                    []string          `json:"images"`
	CommonLabels              map[string]string `json:"commonLabels"`
	CommonAnnotations         map[string]string `json:"commonAnnotations"`
	CommonAnnotationsEnvsubst bool              `json:"commonAnnotationsEnvsubst"`
	ForceCommonLabels         bool              `json:"forceCommonLabels"`
	ForceCommonAnnotations    bool              `json:"forceCommonAnnotations"`
	LabelWithoutSelector      bool              `json:"labelWithoutSelector"`
	LabelIncludeTemplates     bool              `json:"labelIncludeTemplates"`
	Replicas                  []struct {
		Name  string             `json:"name"`
		Count intstr.IntOrString `json:"count"`
	} `json:"replicas"`
	Patches                 []map[string]any `json:"patches"`
	Components              []string         `json:"components"`
	IgnoreMissingComponents bool             `json:"ignoreMissingComponents"`
	KubeVersion             string           `json:"kubeVersion"`
	APIVersions             []string         `json:"apiVersions"`
}

type appDirectory struct {
	Recurse bool           `json:"recurse"`
	Include string         `json:"include"`
	Exclude string         `json:"exclude"`
	Jsonnet map[string]any `json:"jsonnet"`
}

// argocd discovers Applications. Each Application gives one app per source
// that is rendered from Git:
//   - the app is named after the Application (namespace/name when two
//     namespaces hold the same name); in a multi-source Application the
//     first such source is the app itself and the others are <app>-<ref>,
//     or <app>-<index in spec.sources> when they have no ref;
//   - a source that only carries a ref serves values files: `$ref/path`
//     valueFiles are read from the chart's own checkout, so the ref source
//     must be the same repository at the same revision, else the app has an
//     error and the values file is left out;
//   - a chart from a Helm repository is fetched (source.FetchChart) at the
//     version the Application last synced (status.history records it),
//     a newer one its targetRevision allows being pending sync; its
//     valueFiles are the chart's, or `$ref/path` in the Git repository of
//     that ref source at its revision;
//     so is a chart from an OCI registry (a repoURL without a scheme, or
//     oci://), over HTTPS;
//   - a config management plugin is skipped, with the reason;
//   - a chart's release is named after the Application unless
//     helm.releaseName says otherwise, with or without spec.source.helm: the
//     real Argo CD v3.5.7 does so for every Chart.yaml folder it renders
//     (e2e TestArgoCDCleanSyncsScanClean);
//   - a folder of plain manifests is read as Argo CD reads a directory
//     source: its own files only unless directory.recurse, narrowed by
//     directory.include and exclude (config.DirectorySource);
//
// Only Applications whose destination is the scanned cluster are kept.
// spec.ignoreDifferences are imported for every app of the Application.
func (d *discovery) argocd(ctx context.Context) error {
	ns := d.opts.Namespace
	if ns == "" {
		ns = "argocd"
	}
	if d.opts.AllNamespaces {
		ns = ""
	}
	items, err := d.list(ctx, Applications, ns, d.opts.Selector)
	if err != nil {
		return fmt.Errorf("discover Argo CD Applications: %w", err)
	}
	// AppProjects live in the Argo CD namespace, also when Applications
	// live in any namespace.
	projectNS := d.argoNamespace()
	projects, err := d.projects(ctx, projectNS)
	if err != nil {
		return err
	}
	var enabled argoAppNamespaces
	if d.opts.AllNamespaces {
		enabled = d.argoAppNamespaces(ctx, projectNS)
	}
	var kept []*unstructured.Unstructured
	apps := map[string]*application{}
	for i := range items {
		u := &items[i]
		var a application
		if err := decode(u, &a); err != nil {
			d.fail(ref(u), "", err)
			continue
		}
		if reason := enabled.refuses(u.GetNamespace(), projectNS); reason != "" {
			d.skip(ref(u), "%s", reason)
			continue
		}
		if reason := d.otherCluster(a); reason != "" {
			d.skip(ref(u), "%s", reason)
			continue
		}
		kept = append(kept, u)
		apps[ref(u)] = &a
	}
	names := appNames(kept)
	settings := d.argoSettings(ctx, projectNS)
	blocks, now := syncBlocks{}, d.opts.now()
	for _, u := range kept {
		first := len(d.res.Apps)
		a := apps[ref(u)]
		project := projectResources(projects, projectNS, *a, d.clusterName)
		d.application(u, a, names[ref(u)], settings.valuesFileSchemes, func(repo string) string {
			if why := inClusterRefused(*a, settings); why != "" {
				return why
			}
			if why := namespacePermitted(projects, projectNS, a.Spec.Project, u.GetNamespace()); why != "" {
				return why
			}
			if why := project.RefusesDestination(a.Spec.Destination.Namespace); why != "" {
				return why
			}
			return sourcePermitted(projects, projectNS, a.Spec.Project, repo)
		})
		excluded := settings.filter.forCluster(destinationServer(*a))
		blocked := ""
		if name := cmp.Or(a.Spec.Project, "default"); projects[name] != nil {
			blocked = blocks.of(projects[name].Spec.SyncWindows, u.GetName(), projectNS+"/"+name, a, now)
		}
		reason := "SyncWindow"
		if blocked == "" {
			blocked, reason = failedSync(u, a), "SyncFailed"
		}
		if blocked == "" {
			blocked, reason = comparisonFailed(u, a), "ComparisonError"
		}
		for i := first; i < len(d.res.Apps); i++ {
			d.res.Apps[i].KustomizeBuild = settings.build
			d.res.Apps[i].ExcludedKinds = excluded
			d.res.Apps[i].ArgoProject = project
			d.res.Apps[i].ArgoLabelTracking = settings.tracking.ArgoLabel
			d.res.Apps[i].ArgoInstanceLabel = settings.tracking.ArgoLabelKey
			d.res.Apps[i].ArgoInstallationID = settings.tracking.ArgoInstallationID
			d.res.Apps[i].ArgoInstance = d.argoInstance(u)
			if g := d.res.Apps[i].GitOps; g != nil && !g.Suspended && blocked != "" {
				syncBlock{reason: reason, text: blocked}.set(g)
			}
		}
	}
	return nil
}

// sourceHydrator is an Application's spec.sourceHydrator.
type sourceHydrator struct {
	DrySource struct {
		RepoURL string `json:"repoURL"`
	} `json:"drySource"`
	SyncSource struct {
		RepoURL      string `json:"repoURL"`
		TargetBranch string `json:"targetBranch"`
		Path         string `json:"path"`
	} `json:"syncSource"`
}

// syncSource is what Argo CD syncs of an Application with a source
// hydrator (SourceHydrator.GetSyncSource): the sync branch and path, in
// the dry source's repository unless it names another.
func (h *sourceHydrator) syncSource() appSource {
	return appSource{RepoURL: cmp.Or(h.SyncSource.RepoURL, h.DrySource.RepoURL), Path: h.SyncSource.Path, TargetRevision: h.SyncSource.TargetBranch}
}

// argoNamespace is Argo CD's own namespace.
func (d *discovery) argoNamespace() string {
	if d.opts.Namespace == "" {
		return "argocd"
	}
	return d.opts.Namespace
}

// ArgoSkipsReconcile reports whether the Application carries
// argocd.argoproj.io/skip-reconcile set true (as strconv.ParseBool reads
// it, like the controller's canProcessApp): Argo CD then does not look at
// it at all, so nothing syncs it and self-heal is off whatever its sync
// policy says (seen: e2e TestArgoCDPausingMechanisms).
func ArgoSkipsReconcile(app *unstructured.Unstructured) bool {
	skip, err := strconv.ParseBool(app.GetAnnotations()["argocd.argoproj.io/skip-reconcile"])
	return err == nil && skip
}

// argoSourceOf is what the scan needs to merge the parameter files of the
// source s of the Application u as Argo CD does (ArgoSourceFiles).
func (d *discovery) argoSourceOf(u *unstructured.Unstructured, app *application, s appSource, refs map[string]appSource) *config.ArgoSource {
	source, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	a := &config.ArgoSource{Source: source, Name: u.GetName(), Project: app.Spec.Project, Namespace: app.Spec.Destination.Namespace}
	if len(refs) > 0 {
		a.Refs, _ = json.Marshal(refs)
	}
	return a
}

// argoInstance is the name Argo CD gives the Application u in its tracking
// and build environment (ArgoInstance).
func (d *discovery) argoInstance(u *unstructured.Unstructured) string {
	return ArgoInstance(u.GetNamespace(), u.GetName(), d.argoNamespace())
}

// ArgoInstance is the name Argo CD gives the Application ns/name in its
// tracking and build environment, Argo CD's own namespace being argoNS
// (Application.InstanceName): the name alone in argoNS, <ns>_<name>
// outside it (applications in any namespace).
func ArgoInstance(ns, name, argoNS string) string {
	if ns != "" && ns != argoNS {
		return ns + "_" + name
	}
	return name
}

// ArgoApplication is the Application that Argo CD's instance name names,
// Argo CD's own namespace being argoNS: ArgoInstance read back (Argo CD's
// ParseFromQualifiedName with "_").
func ArgoApplication(instance, argoNS string) (ns, name string) {
	if ns, name, ok := strings.Cut(instance, "_"); ok {
		return ns, name
	}
	return argoNS, instance
}

// argoCM is what argocd-cm says of how Argo CD builds, applies and tracks
// every Application.
type argoCM struct {
	// build is how Argo CD runs `kustomize build` (kustomize.buildOptions:
	// --enable-helm, --load-restrictor LoadRestrictionsNone).
	build *config.KustomizeBuild
	// filter is which kinds it never applies (argoFilter).
	filter *argoResourceFilter
	// tracking is how it tracks what it applies (argoTracking).
	tracking classify.Tracking
	// valuesFileSchemes are the URL schemes a Helm source's valueFiles may
	// have (helm.valuesFileSchemes; https and http when it is not set).
	valuesFileSchemes []string
	// inClusterEnabled is false when cluster.inClusterEnabled is "false":
	// Argo CD deploys nothing to https://kubernetes.default.svc.
	inClusterEnabled bool
}

// argoSettings reads argocd-cm in Argo CD's namespace (argoCM), and
// imports its system-level ignore rules (argoCMIgnores,
// argoCompareIgnores). Without argocd-cm, Argo CD's defaults and no rules;
// when it cannot be read (the scan's identity may not get it), a nil
// build (the scan's own defaults), the kinds Argo CD always excludes,
// annotation tracking, no installation id known, and no rules.
func (d *discovery) argoSettings(ctx context.Context, ns string) argoCM {
	cm, data, err := settingsConfigMap(ctx, d.client, ns, "argocd-cm")
	if err == nil && cm == nil {
		return argoCM{build: &config.KustomizeBuild{}, filter: d.argoFilter(nil, nil), tracking: argoTracking(nil), valuesFileSchemes: argoValuesFileSchemes(nil), inClusterEnabled: true}
	}
	if err != nil {
		d.settingsUnreadable("ConfigMap/"+ns+"/argocd-cm", err, "the ignore rules Argo CD takes from it (resource.customizations, resource.compareoptions) are not imported, so fields Argo CD ignores may show as drift; its tracking method is taken as annotation, its installation id as any, its resource exclusions as the ones Argo CD always has, and its kustomize build options as the scan's own")
		return argoCM{filter: d.argoFilter(nil, nil), valuesFileSchemes: argoValuesFileSchemes(nil), inClusterEnabled: true}
	}
	d.argoCMIgnores(cm, data)
	d.argoCompareIgnores(cm, data)
	return argoCM{
		build:    kustomizeBuildOptions(data["kustomize.buildOptions"]),
		filter:   d.argoFilter(cm, data),
		tracking: argoTracking(data),

		valuesFileSchemes: argoValuesFileSchemes(data),
		// IsInClusterEnabled: any value but "false" enables it.
		inClusterEnabled: data["cluster.inClusterEnabled"] != "false",
	}
}

// argoValuesFileSchemes reads argocd-cm's helm.valuesFileSchemes as Argo CD
// does (GetHelmSettings): comma-separated, https and http when the key is
// not there.
func argoValuesFileSchemes(data map[string]string) []string {
	value, ok := data["helm.valuesFileSchemes"]
	if !ok {
		return []string{"https", "http"}
	}
	var out []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// valuesFileScheme is the URL scheme of a valueFiles entry as
// argocd-repo-server parses it (ResolveValueFilePathOrUrl), "" for a path,
// and whether schemes allow it (any case).
func valuesFileScheme(f string, schemes []string) (scheme string, allowed bool) {
	u, err := url.Parse(f)
	if err != nil || u.Scheme == "" {
		return "", false
	}
	return u.Scheme, slices.ContainsFunc(schemes, func(s string) bool { return strings.EqualFold(s, u.Scheme) })
}

// helmSecrets is the first valueFiles entry of s that the helm-secrets
// plugin decrypts in argocd-repo-server (a secrets:// or secrets+…://
// URL, of a scheme schemes allow), and its scheme; "" for none.
func helmSecrets(s appSource, schemes []string) (file, scheme string) {
	if s.Helm == nil {
		return "", ""
	}
	for _, f := range s.Helm.ValueFiles {
		if scheme, ok := valuesFileScheme(f, schemes); ok && (strings.EqualFold(scheme, "secrets") || strings.HasPrefix(strings.ToLower(scheme), "secrets+")) {
			return f, scheme
		}
	}
	return "", ""
}

// argoInstanceLabelKey is argocd-cm's key for the key of the instance
// label Argo CD writes with label and annotation+label tracking.
const argoInstanceLabelKey = "application.instanceLabelKey"

// argoTracking is how Argo CD tracks what it applies, by argocd-cm's data
// (nil when it does not exist: Argo CD's defaults): by its instance label
// (application.resourceTrackingMethod label) under
// application.instanceLabelKey, and with its installationID ("" for none).
// The apps it concerns (ArgoApps) are the caller's to add.
func argoTracking(data map[string]string) classify.Tracking {
	id := data["installationID"]
	return classify.Tracking{
		ArgoLabel:          data["application.resourceTrackingMethod"] == "label",
		ArgoLabelKey:       data[argoInstanceLabelKey],
		ArgoInstallationID: &id,
	}
}

// ArgoTracking reads argocd-cm in Argo CD's namespace ns for how that Argo
// CD tracks what it applies, as a scan's discovery does for an app's
// config.App.ArgoLabelTracking, ArgoInstanceLabel and ArgoInstallationID:
// Argo CD's defaults when argocd-cm does not exist, and when it cannot be
// read annotation tracking, the default instance label and no installation
// id known (ArgoInstallationID nil).
func ArgoTracking(ctx context.Context, client dynamic.Interface, ns string) classify.Tracking {
	_, data, err := settingsConfigMap(ctx, client, ns, "argocd-cm")
	if err != nil {
		return classify.Tracking{}
	}
	return argoTracking(data) // data nil without argocd-cm: the defaults
}

// settingsConfigMap reads a reconciler's settings ConfigMap ns/name and
// its data: nil and no error when it does not exist (the reconciler's
// defaults).
func settingsConfigMap(ctx context.Context, client dynamic.Interface, ns, name string) (*unstructured.Unstructured, map[string]string, error) {
	cm, err := client.Resource(configMaps).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	return cm, data, nil
}

// pluginName names a source's config management plugin: its name, or the
// one Argo CD's plugin discovery chooses when it names none.
func pluginName(plugin map[string]any) string {
	if name, _ := plugin["name"].(string); name != "" {
		return strconv.Quote(name)
	}
	return "(the one Argo CD's discovery chooses)"
}

// destinationServer is the server of an Application's destination as Argo
// CD's resource filter matches it: in-cluster's when it is named, not
// given.
func destinationServer(a application) string {
	if a.Spec.Destination.Server == "" {
		return inCluster
	}
	return a.Spec.Destination.Server
}

// kustomizeBuildOptions reads the `kustomize build` flags that change a
// build from Argo CD's kustomize.buildOptions.
func kustomizeBuildOptions(opts string) *config.KustomizeBuild {
	b := &config.KustomizeBuild{}
	fields := strings.Fields(opts)
	for i, f := range fields {
		name, value, _ := strings.Cut(f, "=")
		switch name {
		case "--enable-helm":
			b.EnableHelm = value == "" || value == "true"
		case "--load-restrictor":
			if value == "" && i+1 < len(fields) {
				value = fields[i+1]
			}
			b.LoadRestrictionsNone = strings.EqualFold(value, "LoadRestrictionsNone")
		}
	}
	return b
}

// otherCluster says why an Application deploys to another cluster, or "".
// The scanned cluster is Argo CD's in-cluster (https://kubernetes.default.svc,
// named in-cluster), the server URL driftscan reaches it at, and what
// Options.ArgoClusters name.
func (d *discovery) otherCluster(a application) string {
	dst := a.Spec.Destination
	server := strings.TrimRight(dst.Server, "/")
	switch {
	case server == "" && d.clusterName(dst.Name):
		return ""
	case server == "" && dst.Name != "":
		return fmt.Sprintf("destination cluster %q is not the scanned cluster (driftscan knows it as %s; name it with --argocd-cluster if it is)", dst.Name, d.clusterNames())
	case server == "":
		return "the Application has no destination cluster"
	case d.clusterServer(server):
		return ""
	}
	return fmt.Sprintf("destination server %s is not the scanned cluster (driftscan knows it as %s; name it with --argocd-cluster if it is)", dst.Server, d.clusterNames())
}

// clusterName says whether Argo CD knows the scanned cluster by name.
func (d *discovery) clusterName(name string) bool {
	return name == "in-cluster" || !strings.Contains(name, "://") && slices.Contains(d.opts.ArgoClusters, name)
}

// clusterServer says whether server (without a trailing "/") is the
// scanned cluster's.
func (d *discovery) clusterServer(server string) bool {
	return server == inCluster || d.opts.ServerURL != "" && server == strings.TrimRight(d.opts.ServerURL, "/") ||
		slices.ContainsFunc(d.opts.ArgoClusters, func(c string) bool { return strings.Contains(c, "://") && strings.TrimRight(c, "/") == server })
}

// clusterNames are the names and servers of the scanned cluster, for a
// message.
func (d *discovery) clusterNames() string {
	names := []string{"in-cluster", inCluster}
	if d.opts.ServerURL != "" {
		names = append(names, strings.TrimRight(d.opts.ServerURL, "/"))
	}
	for _, c := range d.opts.ArgoClusters {
		if !slices.Contains(names, c) {
			names = append(names, c)
		}
	}
	return strings.Join(names, ", ")
}

// inClusterRefused says why Argo CD refuses the Application a's
// destination, "" when it does not: argocd-cm's cluster.inClusterEnabled
// "false" disables https://kubernetes.default.svc (GetCluster: "cluster …
// is disabled"), whether the Application names it by server or as
// in-cluster, and Argo CD neither compares nor syncs it.
func inClusterRefused(a application, settings argoCM) string {
	dst := a.Spec.Destination
	server := strings.TrimRight(dst.Server, "/")
	toInCluster := server == inCluster || server == "" && dst.Name == "in-cluster"
	if settings.inClusterEnabled || !toInCluster {
		return ""
	}
	return "argocd-cm's cluster.inClusterEnabled is \"false\": Argo CD refuses the destination in-cluster (https://kubernetes.default.svc) and neither compares nor syncs this Application (InvalidSpecError), so driftscan does not fetch its source"
}

// application turns one Application into apps and ignore rules. refused
// says why the Application's project does not allow a repository, or "".
func (d *discovery) application(u *unstructured.Unstructured, a *application, name string, schemes []string, refused func(repo string) string) {
	object := ref(u)
	owner := d.owner(u, a.Spec.Project)
	gitops := report.GitOps{Tool: FromArgoCD, Object: object, Suspended: true}
	if sp := a.Spec.SyncPolicy; sp != nil && sp.Automated != nil && (sp.Automated.Enabled == nil || *sp.Automated.Enabled) && !ArgoSkipsReconcile(u) {
		gitops = report.GitOps{Tool: FromArgoCD, Object: object, SelfHeal: sp.Automated.SelfHeal, Prune: sp.Automated.Prune}
	}
	if sp := a.Spec.SyncPolicy; sp != nil {
		gitops.RespectIgnoreDifferences = slices.Contains(sp.SyncOptions, "RespectIgnoreDifferences=true")
		gitops.Replace = slices.Contains(sp.SyncOptions, "Replace=true")
	}
	sources := a.Spec.Sources
	if len(sources) == 0 && a.Spec.Source != nil {
		sources = []appSource{*a.Spec.Source}
	}
	if h := a.Spec.SourceHydrator; h != nil {
		// The hydrated manifests, a folder of plain YAML in the sync
		// branch, whatever source or sources say (GetSyncSource).
		sources = []appSource{h.syncSource()}
	}
	if len(sources) == 0 {
		d.fail(object, "", errors.New("the Application has none of spec.source, spec.sources and spec.sourceHydrator"))
		return
	}
	refs := map[string]appSource{}
	for _, s := range sources {
		if s.Ref != "" {
			refs[s.Ref] = s
		}
	}
	first, skipped := true, false
	for i, s := range sources {
		where := ""
		if len(sources) > 1 {
			where = fmt.Sprintf("source %d: ", i)
		}
		secrets, scheme := helmSecrets(s, schemes)
		switch {
		case s.Plugin != nil:
			d.notScanned(object, "%sconfig management plugin %s: driftscan runs no plugin, so nothing it renders is compared", where, pluginName(s.Plugin))
			skipped = true
			continue
		case secrets != "":
			d.notScanned(object, "%svalueFiles %s: the helm-secrets plugin decrypts it in Argo CD's repo server (argocd-cm's helm.valuesFileSchemes allows %s://); driftscan runs no plugin and never decrypts, so nothing the chart renders is compared", where, source.SafeURL(secrets), scheme)
			skipped = true
			continue
		case s.Ref != "" && s.Path == "":
			continue // a source of values files only
		}
		appName := name
		switch {
		case first:
		case s.Ref != "":
			appName = name + "-" + s.Ref
		default:
			appName = fmt.Sprintf("%s-%d", name, i)
		}
		first = false
		src, problems := d.argoSource(u.GetName(), s, refs)
		g := gitops
		app := config.App{
			Name: appName, Owner: owner, Namespace: a.Spec.Destination.Namespace, Source: src,
			Appliers: []string{argoApplier}, GitOps: &g,
		}
		if appName == name && app.Namespace != "" {
			// The Application's own app: Argo CD manages one namespace
			// for it, not one per source.
			app.ArgoManagedNamespace = a.managedNamespace(object)
		}
		if synced := a.syncedVersion(); len(sources) == 1 && s.Chart != "" && synced != "" && synced != src.Revision {
			// Live is the chart version Argo CD synced; a newer one
			// the target allows is pending sync.
			app.TargetRevision, app.Source.Revision = src.Revision, synced
			if app.TargetRevision == "" {
				app.TargetRevision = "*" // the newest version
			}
		} else if synced := a.syncedDigest(); len(sources) == 1 && src.OCIArtifact() {
			// An OCI artifact: live is the digest Argo CD synced; what
			// the target names beyond it is pending sync.
			if synced != "" {
				app.TargetRevision, app.Source.Revision = src.Revision, synced
				if app.TargetRevision == "" {
					app.TargetRevision = "latest"
				}
			}
		} else if synced := a.synced(); len(sources) == 1 && s.Chart == "" && synced != "" && synced != src.Revision {
			// Live is what Argo CD synced; what Git holds beyond that
			// commit is pending sync.
			app.TargetRevision, app.Source.Revision = src.Revision, synced
			if app.TargetRevision == "" {
				app.TargetRevision = "HEAD" // the remote's default branch
			}
		}
		if s.Chart == "" {
			app.ArgoSource = d.argoSourceOf(u, a, s, refs)
		}
		if why := refusedSource(s, refs, schemes, refused); why != "" {
			// Reported, never fetched: the repository or a path is not
			// the tenant's to name.
			app.Source, app.Error, problems, app.ArgoSource = config.Source{Repo: src.Repo}, why, nil, nil
		}
		d.res.Apps = append(d.res.Apps, app)
		for _, p := range problems {
			d.fail(object, appName, errors.New(p))
		}
		for _, id := range a.Spec.IgnoreDifferences {
			d.addRule(object, classify.IgnoreRule{
				Group: anyIfStar(id.Group), Kind: anyIfStar(id.Kind), Name: id.Name, Namespace: id.Namespace,
				JSONPointers: id.JSONPointers, JQPathExpressions: id.JQPathExpressions, ManagedFieldsManagers: id.ManagedFieldsManagers,
				Owner: owner, Reason: "imported from Argo CD", Expires: d.expires(), App: appName, Reconciler: FromArgoCD,
			})
		}
	}
	if first && !skipped {
		d.skip(object, "every source only carries a ref for values files: none is rendered")
	}
}

// refusedSource says why a source must not be fetched, or "": its
// repository, or that of a ref source it reads values files from, is not
// allowed by the Application's project, or its path or a values file leaves
// the repository, or a values file's URL scheme is not one argocd-cm
// allows (Argo CD refuses those too).
func refusedSource(s appSource, refs map[string]appSource, schemes []string, refused func(repo string) string) string {
	if why := refused(s.RepoURL); why != "" {
		return why
	}
	if !config.InRepo(s.Path) {
		return fmt.Sprintf("path %q leaves the repository", s.Path)
	}
	if s.Helm == nil {
		return ""
	}
	for _, f := range s.Helm.ValueFiles {
		if strings.HasPrefix(f, "$") {
			name, rest, _ := strings.Cut(f[1:], "/")
			if rs, ok := refs[name]; ok {
				if why := refused(rs.RepoURL); why != "" {
					return fmt.Sprintf("valueFiles %s: %s", f, why)
				}
			}
			if !config.InRepo(rest) {
				return fmt.Sprintf("valueFiles %s leaves the repository", f)
			}
			continue
		}
		if scheme, allowed := valuesFileScheme(f, schemes); scheme != "" {
			if !allowed {
				return fmt.Sprintf("valueFiles %s: Argo CD refuses it too, the URL scheme %q is not in argocd-cm's helm.valuesFileSchemes (%s)", source.SafeURL(f), scheme, strings.Join(schemes, ", "))
			}
			return fmt.Sprintf("valueFiles %s: values files from URLs are not fetched by driftscan", source.SafeURL(f))
		}
		if !config.InRepoFrom(cleanPath(s.Path), f) {
			return fmt.Sprintf("valueFiles %s leaves the repository", f)
		}
	}
	return ""
}

// anyIfStar turns Argo CD's "*" (any group or kind) into an empty selector.
func anyIfStar(s string) string {
	if s == "*" {
		return ""
	}
	return s
}

// argoSource turns one Application source into a scanner source, and says
// what of it driftscan does not apply.
func (d *discovery) argoSource(appName string, s appSource, refs map[string]appSource) (config.Source, []string) {
	src := config.Source{Repo: s.RepoURL, Revision: argoRevision(s.TargetRevision), Path: cleanPath(s.Path), ReleaseName: appName}
	if s.Chart != "" {
		// Argo CD's targetRevision of a chart is its version or a
		// constraint; "" or "*" the newest.
		src.Chart, src.Path, src.Revision = s.Chart, "", s.TargetRevision
		if ociRepo(s.RepoURL) && !strings.HasPrefix(strings.ToLower(s.RepoURL), "oci://") {
			src.Repo = "oci://" + s.RepoURL
		}
	}
	// argocd-repo-server checks a Git repository's submodules out
	// (`git submodule update --init --recursive`) unless
	// ARGOCD_GIT_MODULES_ENABLED is false, which driftscan cannot see.
	src.RecurseSubmodules = src.Chart == "" && !src.OCIArtifact()
	var problems []string
	if h := s.Helm; h != nil {
		hs := &config.HelmSource{ReleaseName: h.ReleaseName, Set: map[string]string{}, IgnoreMissingValuesFiles: h.IgnoreMissingValueFiles, ArgoValueFiles: true,
			SkipCRDs: h.SkipCrds, SkipSchemaValidation: h.SkipSchemaValidation, Namespace: h.Namespace, APIVersions: h.APIVersions}
		var err error
		if hs.KubeVersion, err = argoKubeVersion(h.KubeVersion); err != nil {
			problems = append(problems, "spec.source.helm."+err.Error())
		}
		if hs.ReleaseName == "" {
			hs.ReleaseName = appName
		}
		for _, f := range h.ValueFiles {
			if s.Chart != "" {
				v, err := chartValuesFile(f, refs)
				if err != nil {
					problems = append(problems, err.Error())
					continue
				}
				if !slices.Contains(hs.ChartValues, v) {
					// argocd-repo-server reads each file once, at its
					// first place.
					hs.ChartValues = append(hs.ChartValues, v)
				}
				continue
			}
			file, err := refValuesFile(f, s, refs)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			hs.ValuesFiles = append(hs.ValuesFiles, file)
		}
		values, err := argoValues(h)
		if err != nil {
			problems = append(problems, err.Error())
		}
		// A values file after the valueFiles, as Argo CD writes it.
		hs.Values = values
		for _, p := range h.Parameters {
			if p.ForceString {
				// --set-string, as Argo CD passes it.
				if hs.SetString == nil {
					hs.SetString = map[string]string{}
				}
				hs.SetString[p.Name] = p.Value
				continue
			}
			hs.Set[p.Name] = p.Value
		}
		if len(hs.Set) == 0 {
			hs.Set = nil
		}
		for _, fp := range h.FileParameters {
			// --set-file, the path relative to the source's path, as
			// Argo CD's repo-server reads it.
			switch {
			case s.Chart != "":
				problems = append(problems, fmt.Sprintf("fileParameters %s: a chart from a Helm repository has no files of the Application's; left out", fp.Name))
			case !config.InRepoFrom(cleanPath(s.Path), fp.Path):
				problems = append(problems, fmt.Sprintf("fileParameters %s: %s leaves the repository; left out", fp.Name, fp.Path))
			default:
				if hs.SetFiles == nil {
					hs.SetFiles = map[string]string{}
				}
				hs.SetFiles[fp.Name] = fp.Path
			}
		}
		src.Helm = hs
	}
	if s.Kustomize != nil {
		src.Kustomize = &config.KustomizeSource{APIVersions: s.Kustomize.APIVersions}
		ak, err := argoKustomize(s.Kustomize)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("spec.source.kustomize: %v", err))
		case ak != nil:
			src.Kustomize.Argo = ak
		}
		if src.Kustomize.KubeVersion, err = argoKubeVersion(s.Kustomize.KubeVersion); err != nil {
			problems = append(problems, "spec.source.kustomize."+err.Error())
		}
	}
	if src.Helm == nil && src.Kustomize == nil && src.Chart == "" {
		// A folder of plain manifests, unless it holds a chart or a
		// kustomization, read as Argo CD reads a directory source: by
		// default the folder's own files only.
		src.Directory = &config.DirectorySource{}
	}
	if dir := s.Directory; dir != nil {
		src.Directory = &config.DirectorySource{Recurse: dir.Recurse, Include: dir.Include, Exclude: dir.Exclude}
		if set := setKeys(dir.Jsonnet, nil); len(set) > 0 {
			problems = append(problems, "jsonnet is not rendered by driftscan: directory.jsonnet "+strings.Join(set, ", ")+" not applied")
		}
	}
	return src, problems
}

// argoKubeVersion is an Application's kubeVersion as argocd-repo-server
// hands it on (parseKubeVersion): the numbers only, so v1.29.3+k3s1 is
// 1.29.3. One that does not parse fails Argo CD's manifest generation.
func argoKubeVersion(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	parsed, err := version.ParseGeneric(v)
	if err != nil {
		return "", fmt.Errorf("kubeVersion %q is not a Kubernetes version: %w", v, err)
	}
	return parsed.String(), nil
}

// argoKustomize reads an Application's spec.source.kustomize into the
// overrides render applies as Argo CD does, or nil when it sets none
// (kubeVersion and apiVersions are not overrides of the kustomization: the
// caller reads them). Argo CD's build environment ($ARGOCD_APP_NAME,
// ...) in its images and labels is substituted by ArgoSourceFiles, once the
// revision is known.
func argoKustomize(k *appKustomize) (*config.ArgoKustomize, error) {
	ak := &config.ArgoKustomize{NamePrefix: k.NamePrefix, NameSuffix: k.NameSuffix, Namespace: k.Namespace, Images: k.Images,
		CommonLabels: k.CommonLabels, CommonAnnotations: k.CommonAnnotations,
		ForceCommonLabels: k.ForceCommonLabels, ForceCommonAnnotations: k.ForceCommonAnnotations,
		LabelWithoutSelector: k.LabelWithoutSelector, LabelIncludeTemplates: k.LabelIncludeTemplates,
		Patches: k.Patches, Components: k.Components, IgnoreMissingComponents: k.IgnoreMissingComponents}
	for _, r := range k.Replicas {
		n := int64(r.Count.IntValue())
		if r.Count.Type == intstr.String {
			v, err := strconv.ParseInt(r.Count.StrVal, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("replicas %s: count %q is not a number", r.Name, r.Count.StrVal)
			}
			n = v
		}
		ak.Replicas = append(ak.Replicas, config.KustomizeReplica{Name: r.Name, Count: n})
	}
	if ak.NamePrefix == "" && ak.NameSuffix == "" && ak.Namespace == "" && len(ak.Images)+len(ak.Replicas)+len(ak.CommonLabels)+len(ak.CommonAnnotations)+len(ak.Patches)+len(ak.Components) == 0 {
		return nil, nil
	}
	return ak, nil
}

// setKeys lists the keys of m whose values are set (not empty, not false),
// those in order first, then the others sorted, leaving out skip.
func setKeys(m map[string]any, order []string, skip ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range skip {
		seen[s] = true
	}
	for _, k := range order {
		if !seen[k] && isSet(m[k]) {
			out = append(out, k)
		}
		seen[k] = true
	}
	var rest []string
	for k, v := range m {
		if !seen[k] && isSet(v) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func isSet(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case string:
		return t != ""
	case bool:
		return t
	case []any:
		return len(t) > 0
	case map[string]any:
		return len(t) > 0
	}
	return true
}

// refValuesFile resolves a valueFiles entry to a path relative to the chart
// folder. `$ref/path` names a file in the source whose ref is ref; it can be
// read only when that source is this source's repository at the same
// revision.
func refValuesFile(f string, s appSource, refs map[string]appSource) (string, error) {
	if !strings.HasPrefix(f, "$") {
		return f, nil
	}
	name, rest, _ := strings.Cut(f[1:], "/")
	rs, ok := refs[name]
	if !ok {
		return "", fmt.Errorf("valueFiles %s: no source has ref %s", f, name)
	}
	if !sameRepo(rs.RepoURL, s.RepoURL) {
		return "", fmt.Errorf("valueFiles %s: the source with ref %s is the repository %s, not the chart's %s; driftscan reads values files from the chart's own checkout only", f, name, source.SafeURL(rs.RepoURL), source.SafeURL(s.RepoURL))
	}
	if argoRevision(rs.TargetRevision) != argoRevision(s.TargetRevision) {
		return "", fmt.Errorf("valueFiles %s: the source with ref %s is at revision %q, the chart at %q; driftscan reads values files from the chart's own checkout only", f, name, rs.TargetRevision, s.TargetRevision)
	}
	return relPath(cleanPath(s.Path), cleanPath(rest)), nil
}

// chartValuesFile is a valueFiles entry of a chart from a Helm repository:
// a file of the chart, or `$ref/path` in the Git repository of the source
// with that ref, at its revision (the multi-source pattern that keeps a
// public chart's values in Git).
func chartValuesFile(f string, refs map[string]appSource) (config.ValuesFile, error) {
	if strings.ContainsAny(f, "*?[") {
		// argocd-repo-server expands it (a Git chart's are expanded as it
		// does: render's valuesFiles); read as a name, it would be missing.
		return config.ValuesFile{}, fmt.Errorf("valueFiles %s: driftscan expands a glob in the values files of a chart from Git only, not of one from a Helm repository", f)
	}
	if !strings.HasPrefix(f, "$") {
		return config.ValuesFile{Path: cleanPath(f)}, nil
	}
	name, rest, _ := strings.Cut(f[1:], "/")
	rs, ok := refs[name]
	if !ok {
		return config.ValuesFile{}, fmt.Errorf("valueFiles %s: no source has ref %s", f, name)
	}
	if rs.Chart != "" {
		return config.ValuesFile{}, fmt.Errorf("valueFiles %s: the source with ref %s is a chart from a Helm repository, not Git", f, name)
	}
	return config.ValuesFile{Repo: rs.RepoURL, Revision: argoRevision(rs.TargetRevision), Path: cleanPath(rest)}, nil
}

// sameRepo compares Git URLs, ignoring a trailing slash or .git and the
// case of the host.
func sameRepo(a, b string) bool {
	norm := func(u string) string {
		u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
		if scheme, rest, ok := strings.Cut(u, "://"); ok {
			host, p, _ := strings.Cut(rest, "/")
			return strings.ToLower(scheme) + "://" + strings.ToLower(host) + "/" + p
		}
		return u
	}
	return norm(a) == norm(b)
}

// argoRevision is a targetRevision as the scanner takes it: HEAD is the
// remote's default branch, which the scanner spells "".
func argoRevision(rev string) string {
	if rev == "HEAD" {
		return ""
	}
	return rev
}

// cleanPath is a repository path without "./", a leading or trailing slash;
// "" is the repository root.
func cleanPath(p string) string {
	return path.Clean("/" + p)[1:]
}

// relPath is the slash path of to relative to the folder from, both
// relative to the same root.
func relPath(from, to string) string {
	up := 0
	for from != "" && from != to && !strings.HasPrefix(to, from+"/") {
		up++
		from = path.Dir(from)
		if from == "." {
			from = ""
		}
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(to, from), "/")
	return strings.TrimPrefix(strings.Repeat("../", up)+rest, "/")
}

// argoValues reads the inline values of a Helm source: valuesObject, which
// Argo CD prefers, else the values string.
func argoValues(h *appHelm) (map[string]any, error) {
	if len(h.ValuesObject) > 0 {
		return h.ValuesObject, nil
	}
	if strings.TrimSpace(h.Values) == "" {
		return nil, nil
	}
	values, err := yamlMap([]byte(h.Values))
	if err != nil {
		return nil, fmt.Errorf("helm.values: %w", err)
	}
	return values, nil
}
