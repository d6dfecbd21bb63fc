// Package scanner turns Git sources and a live cluster into a field-level
// drift report. It renders each app's desired state in process, reads the
// cluster with one paginated LIST per kind and namespace (never a GET per
// object, never a write), compares each object field by field with the
// server's own schema, and hands every difference to package classify.
package scanner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/calricon/driftscan/audit"
	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/redact"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/source"
)

// Options configure a scan. Start from DefaultOptions.
type Options struct {
	// RESTConfig reaches the cluster. The scan only gets and lists.
	RESTConfig *rest.Config
	// Cluster names the cluster in the report: the kubeconfig context, or
	// the server URL.
	Cluster string
	// Extra also reports live objects that carry an app's tracking label or
	// annotation but are not in Git.
	Extra bool
	// GitCacheDir is where Git sources are cloned.
	GitCacheDir string
	// GitMaxBytes bounds the size of a checked-out Git tree; 0 is no bound.
	GitMaxBytes int64
	// RenderTimeout bounds the render of each app: an app that does not
	// render within it (a chart that loops forever) is an app error and the
	// others are scanned; zero is no bound but the scan's context.
	RenderTimeout time.Duration
	// KustomizeRemote lets kustomizations fetch remote resources and bases
	// (within RenderTimeout); by default they render offline.
	KustomizeRemote bool
	// ArgoSourceFiles gives an Argo CD app's source (config.ArgoSource) as
	// Argo CD's repo server renders it at the fetched commit: the
	// parameter files in its folder merged, its build environment
	// substituted (discover.ArgoSourceFiles; run sets it); changed is
	// false when neither changes it, and problems are what the source sets
	// that driftscan does not apply. Nil: the source as discovered.
	ArgoSourceFiles ArgoSourceFilesFunc
	// PageSize is the LIST page size: 0 leaves it to the scan, which
	// lists whole from an API server that serves whole lists from its
	// watch cache (listPageSize), and a negative size lists whole.
	PageSize int64
	// Workers is how many apps are fetched and rendered, and how many
	// objects compared, at once; DefaultOptions has max(2, GOMAXPROCS).
	Workers int
	// ClusterWideAbove lists a kind cluster-wide instead of per namespace
	// when the desired objects of that kind span more namespaces than this
	// and more than half of the cluster's (see scan.clusterWide).
	ClusterWideAbove int
	// MaxIgnoresPerApp flags apps with more ignore rules than this; 0 is no cap.
	MaxIgnoresPerApp int
	// JQ bounds each ignore rule's jq path expression on each object; zero
	// fields take classify.DefaultJQLimits.
	JQ classify.JQLimits
	// RevealSensitive leaves the values of Sensitive findings (an env var
	// named like a password, a SealedSecret's data) unmasked, still marked
	// Sensitive: backport --allow-sensitive needs them to write them to
	// Git. Secret data and redact rules are masked all the same.
	RevealSensitive bool
	// Redact are regular expressions on finding paths whose values are
	// masked like Secret data, in addition to the config's.
	Redact []string
	// OwnerLabel names a label or annotation on live objects whose value
	// overrides the app's owner for that object (Object.Owner).
	OwnerLabel string
	// ExplainDismissed lists every difference dismissed as no drift on its
	// object (report.Object.Dismissed), with the reason; they are always
	// counted in the report's stats.
	ExplainDismissed bool
	// Now is the clock; Getenv reads credentials from the environment.
	Now    func() time.Time
	Getenv func(string) string
	// Logger receives debug detail; the report carries everything a user needs.
	Logger *slog.Logger
	// Progress, when set, is told how far the scan is.
	Progress func(Progress)
	// CacheDir holds what a scan keeps for the next one: parsed manifests
	// (render.ParseCache) and in-sync verdicts (verdicts.go). It is a
	// folder private to one config and cluster (and shard); "" keeps
	// nothing, and every object is compared.
	CacheDir string
	// AuditLogs are audit log files or folders, in addition to the
	// config's audit.files; "-" reads AuditStdin.
	AuditLogs  []string
	AuditStdin io.Reader
}

// Progress is the scan's position, for a progress line on a terminal.
type Progress struct {
	Stage       string // "render", "list", "compare"
	Done, Total int
}

// DefaultOptions returns the options a scan uses unless told otherwise.
func DefaultOptions() Options {
	return Options{
		GitCacheDir:      source.DefaultCacheDir(),
		RenderTimeout:    2 * time.Minute,
		Workers:          max(2, runtime.GOMAXPROCS(0)),
		ClusterWideAbove: 3,
		JQ:               classify.DefaultJQLimits(),
		Now:              time.Now,
		Getenv:           os.Getenv,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// desired is one object Git declares, with where it belongs in the report.
type desired struct {
	app    int
	object int
	// obj is Git's object until it is compared; key names it for good.
	// obj is nil from the start when the parse cache gave the object
	// undecoded (render.Options.Lazy): load decodes it (see git).
	obj  *unstructured.Unstructured
	load func() (*unstructured.Unstructured, error)
	key  objectKey
	// mapping is the REST mapping of obj's group, version and kind; its
	// GroupVersionKind is obj's, parsed once.
	mapping *meta.RESTMapping
	// twin is the object from a chart's second render, nil when rendered
	// once; unstable holds the fields that differ between the two.
	twin     *unstructured.Unstructured
	unstable *fieldpath.Set
	// content is the hash of obj as rendered (contentHash), with the
	// verdict cache; digest names obj as parsed (render.Manifest.Digest),
	// which stands for that hash when there is one (hashDesired).
	content string
	digest  string
	// createOnly: its applier creates it when it is missing and never
	// updates it (fluxApplyPolicy): a live one is not compared.
	createOnly bool
	// replaced: Git marks it for Argo CD's Replace=true sync option
	// (argoReplaced), which the app may not set.
	replaced bool
	// chartCRD: a CustomResourceDefinition of the crds/ folder of a chart
	// Flux's helm-controller applies, out of its drift detection.
	chartCRD bool
	// managedNamespace: the app's namespace as Argo CD applies its managed
	// namespace metadata (addManagedNamespace), which it never compares.
	managedNamespace bool
}

type listKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

// namespace is the namespace the LIST of k names in its path: "" for
// every namespace (allNamespaces) and for a cluster-scoped resource.
func (k listKey) namespace() string {
	if k.ns == allNamespaces {
		return ""
	}
	return k.ns
}

type objectKey struct {
	group, kind, ns, name string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	gvk := u.GroupVersionKind()
	return objectKey{gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName()}
}

// Scan scans every app of cfg. It returns an error only when the scan cannot
// start (the cluster is unreachable, a rule is invalid). Everything that
// fails for one app or object is recorded in the report, where it makes
// Report.HasErrors true, and the rest of the scan goes on.
func Scan(ctx context.Context, cfg *config.Config, opts Options) (*report.Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = DefaultOptions().Logger
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultOptions().Workers
	}
	now := opts.Now()
	if _, err := classify.New(classify.Options{Appliers: cfg.Appliers, Rules: cfg.Rules}); err != nil {
		return nil, err
	}
	ignorer, err := classify.NewIgnorerWith(cfg.Ignore, classify.IgnoreOptions{Now: now, JQ: opts.JQ})
	if err != nil {
		return nil, err
	}
	redact := append([]config.RedactRule{}, cfg.Redact...)
	for _, expr := range opts.Redact {
		redact = append(redact, config.RedactRule{Path: expr})
	}
	m, err := newMasker(redact, cfg.SensitiveEnvNames, opts.RevealSensitive)
	if err != nil {
		return nil, err
	}
	m.secrets = appSecrets(cfg.Apps)
	openParsed, openSchemas := openCacheFiles(opts.CacheDir, opts.Logger) // while the scan connects
	c, err := connect(ctx, opts.RESTConfig, opts.PageSize, opts.Logger)
	if err != nil {
		return nil, err
	}
	cluster := opts.Cluster
	if cluster == "" {
		cluster = opts.RESTConfig.Host
	}
	r := report.New(now, cluster)
	s := &scan{opts: opts, cfg: cfg, c: c, r: r, ignorer: ignorer, masker: m, fieldSets: newFieldSets(),
		unstableSeen: unstableFields{byApp: map[int][]string{}, alone: map[int][]string{}}, syncFails: map[int]string{}}
	cached := s.openCache()
	s.prefetchLists(ctx)
	defer s.stopPrefetches()
	c.typer.cache = openSchemas // the first fetch waits for it
	s.parsed = openParsed()
	s.loadPlanned()
	if err := s.render(ctx); err != nil {
		return nil, err
	}
	s.verdicts = cached()
	if s.verdicts != nil {
		s.verdicts.link(s.declared, len(s.objects))
	}
	gathered := s.gatherAhead(ctx)
	s.hashDesired()
	auditDone := s.readAudit(ctx)
	s.prepareAhead()
	live, err := s.compare(ctx, gathered, auditDone)
	if err != nil {
		return nil, err
	}
	if opts.Extra {
		s.extra(live)
	}
	r.Debts = ignorer.Debts()
	for _, err := range ignorer.Errors() {
		r.Errors = append(r.Errors, err.Error())
	}
	for i := range r.Apps {
		if opts.MaxIgnoresPerApp > 0 && ignorer.CountFor(r.Apps[i].Name) > opts.MaxIgnoresPerApp {
			r.Apps[i].OverIgnoreCap = true
		}
	}
	r.Stats = &report.Stats{APIRequests: c.requests.Load(), Throttled: c.throttled.Load(), DurationSeconds: opts.Now().Sub(now).Seconds(), Dismissed: s.dismissed.snapshot()}
	if s.verdicts != nil {
		r.Stats.Cache = &report.CacheStats{InSync: s.verdicts.reusedCount(), Manifests: s.parseStats.Hits, Charts: s.parseStats.Charts, Kustomizations: s.parseStats.Kustomizations}
		if err := s.verdicts.save(); err != nil {
			opts.Logger.Warn("the scan cache is not kept: the next scan compares every object", "err", err)
		}
		if err := c.typer.schemaCache().save(); err != nil {
			opts.Logger.Warn("the OpenAPI schemas are not kept in the scan cache: the next scan fetches every document", "err", err)
		}
	}
	s.auditReport()
	r.Finalize()
	return r, nil
}

// scan is one run's state.
type scan struct {
	opts        Options
	cfg         *config.Config
	c           *api
	r           *report.Report
	classifiers []*classify.Classifier // by app, in report order
	ignorer     *classify.Ignorer
	masker      *masker
	fieldSets   *fieldSets // the managedFields field sets parsed so far
	warnMu      sync.Mutex // the report's warnings
	objects     []desired
	declared    map[objectKey]int // object -> its index in objects
	audit       *audit.Index      // nil without an audit log
	namespaces  namespaces        // read before anything is listed
	// parsed holds the manifests parsed by the last scan with this
	// CacheDir, read back rather than parsed again when a file's bytes
	// are unchanged (nil without a cache).
	parsed *render.ParseCache

	// What is no drift: the counts by reason, what reconcilers write on
	// each app's objects (by app, in report order), and what differs
	// between a chart's two renders.
	dismissed    dismissals
	tracking     []classify.Tracking
	unstableSeen unstableFields
	// syncFails says, by app, why every sync of it fails (an object its
	// Argo CD AppProject does not permit): nothing reverts its drift.
	syncFails map[int]string
	// verdicts is the verdict cache, nil without Options.CacheDir; cc is
	// the classification context, set before the compare workers start.
	verdicts *verdicts
	cc       classifyContext
	// prepared waits for prepareAhead: the schemas loaded, the fields
	// charts render differently each time found. schemaIDs is then each
	// declared group/version's typer.schemaID, for the verdicts' keys.
	prepared  func() error
	schemaIDs map[schema.GroupVersion]string
	// nsContexts keeps classifyHash's answer for an app's objects in a
	// namespace, for objects with no autoscaler and no unstable field.
	nsContexts sync.Map // appNamespace → string
	// parseStats say what the parse cache spared the render.
	parseStats render.ParseCacheStats
	// listPlan is the plan read from the cache, prefetched the LISTs
	// started from it that read has not taken (prefetch.go).
	listPlan   []plannedList
	prefetched map[listKey]*prefetch
}

func (s *scan) progress(stage string, done, total int) {
	if s.opts.Progress != nil {
		s.opts.Progress(Progress{Stage: stage, Done: done, Total: total})
	}
}

// render renders every app and maps its objects to resources.
func (s *scan) render(ctx context.Context) error {
	// Only a chart waits on discovery (its .Capabilities.APIVersions): a
	// warm scan's discovery answers after the first LIST pages, and plain
	// folders need not wait for it.
	apiVersions := sync.OnceValue(func() []string {
		gvs, err := s.c.apiVersions()
		if err != nil {
			s.warn(report.Warning{Code: report.WarnAPIVersionsUnreadable, Message: fmt.Sprintf("cannot discover the cluster's API versions, so Helm charts rendered without .Capabilities.APIVersions and may differ from what they render on this cluster: %v", err)})
		}
		return gvs
	})
	// Fetch and render the apps a few at a time (rendering is most of the
	// scan's CPU), then add their objects in config order.
	type rendered struct {
		manifests []render.Manifest
		again     []render.Manifest // a chart's second render (unstable.go)
		release   string            // the Helm release, "" for no chart
		commit    string
		version   string          // of a chart from a Helm repository
		pending   *report.Pending // what Git holds beyond the synced commit
		// sopsFiles are the Secrets generated from SOPS-encrypted files
		// (sealSOPS).
		sopsFiles map[*unstructured.Unstructured]bool
		// problems are what Argo CD's parameter files set that driftscan
		// does not apply.
		problems []string
		err      error
	}
	results := make([]rendered, len(s.cfg.Apps))
	parsed := s.parsed
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
		sem  = make(chan struct{}, s.opts.Workers)
		// One cache for the scan, so fetches of one repository take turns.
		src = source.Options{Cache: source.NewCache(s.opts.GitCacheDir), MaxBytes: s.opts.GitMaxBytes, Getenv: s.opts.Getenv, Git: s.cfg.Git}
	)
	for i, app := range s.cfg.Apps {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, app config.App) {
			defer func() { <-sem; wg.Done() }()
			var loc source.Location
			var err error
			if app.Error != "" {
				err = errors.New(app.Error) // discovery refused the source: never fetched
			} else {
				loc, err = source.Resolve(ctx, s.cfg.Dir, app.Source, src)
			}
			var res rendered
			if err == nil {
				var merged config.Source
				var changed bool
				merged, res.problems, changed, err = s.opts.ArgoSourceFiles.merge(app, loc.Dir, loc.BuildRevision())
				if err != nil {
					err = fmt.Errorf("the parameter files Argo CD merges into the source: %w", err)
				} else if changed {
					app.Source, loc.Helm = merged, merged.Helm
				}
			}
			if err == nil {
				// Objects come undecoded from the parse cache (decoded when
				// compared) unless the app's applier rewrites or decrypts
				// them all or its pending sync compares them all.
				lazy := app.AppliedAs == config.AppliedAsIs && app.Decryption == "" && app.TargetRevision == ""
				ropts := render.Options{Dir: loc.Dir, Root: loc.Root, Namespace: app.Namespace, Helm: loc.Helm, ExtraValues: loc.Values, Kustomize: app.Source.Kustomize, Directory: app.Source.Directory, ReleaseName: app.Source.ReleaseName, KubeVersion: s.c.version, DiscoverAPIVersions: apiVersions,
					Timeout: s.opts.RenderTimeout, KustomizeRemote: s.opts.KustomizeRemote, Parsed: parsed, Lazy: lazy,
					// Flux's kustomize-controller builds without --enable-helm;
					// Argo CD as its argocd-cm says.
					KustomizeWithoutHelm:  app.GitOps != nil && app.GitOps.Tool == "flux" || app.KustomizeBuild != nil && !app.KustomizeBuild.EnableHelm,
					KustomizeLoadAnywhere: app.KustomizeBuild != nil && app.KustomizeBuild.LoadRestrictionsNone,
					FetchChart: func(ctx context.Context, c render.ChartRef) (string, error) {
						return source.KustomizeChart(ctx, s.cfg.Dir, c.Repo, c.Name, c.Version, src)
					}}
				if loc.Helm != nil && loc.Helm.Lookup {
					l := &helmLookup{ctx: ctx, c: s.c, masker: s.masker, app: i, name: app.Name, namespace: ropts.ReleaseNamespace(), warn: s.warn}
					ropts.Lookup = l.lookup
				}
				res.manifests, err = render.Manifests(ctx, ropts)
				if ropts.Lookup != nil {
					// A template's error may quote what it looked up.
					err = redact.Error(err, s.masker.secretsOf(i)...)
				}
				for _, mf := range res.manifests {
					id := mf.Ident()
					s.c.typer.prefetch(schema.FromAPIVersionAndKind(id.APIVersion, id.Kind).GroupVersion())
				}
				if err == nil {
					res.release = helmRelease(ropts)
					res.again = renderAgain(ctx, ropts, res.release, res.manifests)
					res.sopsFiles, err = applyAs(app, res.manifests, res.again)
				}
				if err == nil && app.TargetRevision != "" {
					res.pending = pendingSync(ctx, s.cfg.Dir, app, src, ropts, loc.Revision(), res.manifests, s.opts.ArgoSourceFiles)
				}
			}
			res.commit, res.version, res.err = loc.Commit, loc.Version, err
			results[i] = res
			mu.Lock()
			done++
			s.progress("render", done, len(s.cfg.Apps))
			mu.Unlock()
		}(i, app)
	}
	wg.Wait()
	if err := parsed.Save(); err != nil {
		s.opts.Logger.Warn("the parsed manifests are not kept in the scan cache: the next scan parses every manifest", "err", err)
	}
	s.parseStats = parsed.Stats()
	total := 0
	for _, res := range results {
		total += len(res.manifests)
	}
	s.objects = make([]desired, 0, total)
	s.declared = make(map[objectKey]int, total)
	for i, app := range s.cfg.Apps {
		cl, err := classify.New(classify.Options{Appliers: append(append([]string{}, s.cfg.Appliers...), app.Appliers...), Rules: s.cfg.Rules})
		if err != nil {
			return err
		}
		s.classifiers = append(s.classifiers, cl)
		res := results[i]
		s.tracking = append(s.tracking, trackingOf(app, res.release))
		ra := report.App{Name: app.Name, Owner: app.Owner, GitOps: app.GitOps,
			Source:  report.Source{Repo: source.SafeURL(app.Source.Repo), Revision: app.Source.Revision, Commit: res.commit, Path: app.Source.Path, Chart: app.Source.Chart, Version: res.version},
			Pending: res.pending}
		if len(res.manifests) > 0 {
			ra.Objects = make([]report.Object, 0, len(res.manifests))
		}
		if res.err != nil {
			// A renderer's error may quote a URL from the source.
			ra.Error = redact.Text(fmt.Sprintf("app %s: %v", app.Name, res.err))
			s.opts.Logger.Warn("render failed", "app", app.Name, "err", redact.Text(res.err.Error()))
		} else if len(res.problems) > 0 {
			ra.Error = redact.Text(fmt.Sprintf("app %s: Argo CD's parameter files: %s", app.Name, strings.Join(res.problems, "; ")))
		}
		s.r.Apps = append(s.r.Apps, ra)
		pairs, alone := twins(res.manifests, res.again)
		if len(alone) > 0 {
			s.unstableSeen.alone[len(s.r.Apps)-1] = alone
		}
		for j, mf := range res.manifests {
			s.addDesired(len(s.r.Apps)-1, app, mf, pairs[j], res.sopsFiles[mf.Object])
		}
		if res.err == nil {
			s.addManagedNamespace(len(s.r.Apps)-1, app)
		}
		if objs := &s.r.Apps[len(s.r.Apps)-1].Objects; len(*objs) == 0 {
			*objs = nil // as without the room made above: no objects
		}
	}
	return nil
}

// addDesired adds the object of mf to what the scan compares, unless it is
// one no live object can be matched to. fromSOPSFiles: it is a Secret
// generated from SOPS-encrypted files (sealSOPS).
func (s *scan) addDesired(ai int, app config.App, mf render.Manifest, twin *unstructured.Unstructured, fromSOPSFiles bool) {
	id := mf.Ident()                // read without decoding the rest when the parse cache gave the object undecoded
	var gvk schema.GroupVersionKind // as Unstructured.GroupVersionKind reads it
	if gv, err := schema.ParseGroupVersion(id.APIVersion); err == nil {
		gvk = gv.WithKind(id.Kind)
	}
	name, ns := id.Name, id.Namespace
	ro := report.Object{APIVersion: id.APIVersion, Kind: gvk.Kind, Namespace: ns, Name: name, File: mf.File, Line: mf.Line}
	ra := &s.r.Apps[ai]
	mapping, err := s.c.mapping(gvk)
	if err != nil {
		ro.Status, ro.Error = report.StatusError, err.Error()
		ra.Objects = append(ra.Objects, ro)
		return
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if ns == "" {
			ns = app.Namespace
			if ns == "" {
				ns = "default"
			}
		}
	} else {
		ns = ""
	}
	ro.Namespace = ns
	if name == "" && id.GenerateName != "" {
		// The API server names such an object anew on every create (Argo
		// CD's hooks, a Job run per sync): no live object ever carries
		// this name, and comparing it would report it Missing every run.
		ref := report.Object{Kind: gvk.Kind, Namespace: ns, Name: id.GenerateName + "*"}.Ref()
		s.warn(report.Warning{Code: report.WarnGenerateNameSkipped, App: app.Name, Object: ref,
			Message: fmt.Sprintf("%s (%s line %d) has metadata.generateName and no name: the API server names each copy it creates, so it is not compared", ref, mf.File, mf.Line)})
		return
	}
	if why := hookOf(app, id.Annotations); why != "" {
		ref := ro.Ref()
		s.warn(report.Warning{Code: report.WarnHookSkipped, App: app.Name, Object: ref,
			Message: fmt.Sprintf("%s (%s line %d) is a hook, so it is not compared: %s", ref, mf.File, mf.Line, why)})
		return
	}
	chartCRD := app.Source.Helm != nil && app.Source.Helm.UpgradeCRDs != "" && render.ChartCRDsFile(mf.File)
	if chartCRD && (gvk.Group != "apiextensions.k8s.io" || gvk.Kind != "CustomResourceDefinition") {
		ref := ro.Ref()
		s.warn(report.Warning{Code: report.WarnNotApplied, App: app.Name, Object: ref,
			Message: fmt.Sprintf("%s (%s) is in the chart's crds/ folder, where helm-controller applies only CustomResourceDefinitions: it never applies it, so it is not compared (move it to templates/)", ref, mf.File)})
		return
	}
	if why := app.ExcludedKinds.Excludes(gvk.Group, gvk.Kind); why != "" {
		ref := ro.Ref()
		s.warn(report.Warning{Code: report.WarnNotApplied, App: app.Name, Object: ref,
			Message: fmt.Sprintf("%s (%s line %d) is of a kind Argo CD never applies (%s), so it is not compared", ref, mf.File, mf.Line, why)})
		return
	}
	if why := app.ArgoProject.Refuses(gvk.Group, gvk.Kind, name, ns, ns != ""); why != "" {
		// Argo CD's sync validates every object first
		// (validateSyncPermissions) and runs none when one fails.
		ro.Status = report.StatusError
		ro.Error = fmt.Sprintf("%s (%s line %d): %s, so Argo CD shows it Unknown and fails every sync of the app (one or more synchronization tasks are not valid): nothing of the app is synced until Git or the project changes", ro.Ref(), mf.File, mf.Line, why)
		ra.Objects = append(ra.Objects, ro)
		if _, ok := s.syncFails[ai]; !ok && ra.GitOps != nil {
			s.syncFails[ai] = fmt.Sprintf("every sync of %s fails while %s, so neither a sync nor self-heal reverts this change", ra.GitOps.Object, why)
		}
		return
	}
	never, createOnly := fluxApplyPolicy(app, id)
	if never != "" {
		ref := ro.Ref()
		s.warn(report.Warning{Code: report.WarnNotApplied, App: app.Name, Object: ref,
			Message: fmt.Sprintf("%s (%s line %d) is marked %s: kustomize-controller never applies it, so it is not compared", ref, mf.File, mf.Line, never)})
		return
	}
	if createOnly {
		ref := ro.Ref()
		s.warn(report.Warning{Code: report.WarnNotApplied, App: app.Name, Object: ref,
			Message: fmt.Sprintf("%s (%s line %d) is marked %s: IfNotPresent: kustomize-controller creates it when it is missing and never updates it, so only whether it exists is compared", ref, mf.File, mf.Line, fluxSSAAnnotation)})
	}
	if fromSOPSFiles && hashSuffix.MatchString(name) {
		ref := ro.Ref()
		s.warn(report.Warning{Code: report.WarnEncryptedNameSkipped, App: app.Name, Object: ref,
			Message: fmt.Sprintf("%s is generated from SOPS-encrypted files: kustomize-controller decrypts them before kustomize names the Secret by a hash of its values, which cannot be computed without the key, so it is not compared", ref)})
		return
	}
	if twin != nil {
		twin.SetNamespace(ns)
	}
	key := objectKey{gvk.Group, gvk.Kind, ns, name}
	if di, dup := s.declared[key]; dup {
		other := s.r.Apps[s.objects[di].app].Name
		ro.Status = report.StatusError
		if other == app.Name {
			ro.Error = fmt.Sprintf("%s is declared twice in app %s", ro.Ref(), app.Name)
		} else {
			ro.Error = fmt.Sprintf("%s is declared by both app %s and app %s", ro.Ref(), other, app.Name)
		}
		ra.Objects = append(ra.Objects, ro)
		return
	}
	s.declared[key] = len(s.objects)
	ra.Objects = append(ra.Objects, ro)
	d := desired{app: ai, object: len(ra.Objects) - 1, obj: mf.Object, key: key, mapping: mapping, twin: twin, digest: mf.Digest, createOnly: createOnly, replaced: argoReplaced(app, id.Annotations), chartCRD: chartCRD}
	if mf.Object == nil {
		d.load = mf.Load // git gives what it decodes the key's namespace
	} else {
		mf.Object.SetNamespace(ns)
	}
	s.objects = append(s.objects, d)
}

// addManagedNamespace adds the app's namespace with the metadata Argo CD
// applies to it at each sync (config.App.ArgoManagedNamespace) to what the
// scan compares, as the Namespace Argo CD applies: no more than the
// metadata and an empty spec, with server-side apply, so the namespace's other labels and
// annotations are not Argo CD's. Argo CD leaves it out when the app's
// manifests declare that namespace (gitops-engine autoCreateNamespace),
// and so does this: addDesired has indexed them (declared).
func (s *scan) addManagedNamespace(ai int, app config.App) {
	m := app.ArgoManagedNamespace
	if m == nil || app.Namespace == "" {
		return
	}
	if di, ok := s.declared[objectKey{"", "Namespace", "", app.Namespace}]; ok && s.objects[di].app == ai {
		return
	}
	// Argo CD applies a corev1.Namespace made unstructured: its spec too,
	// empty, which makes argocd-controller the owner of .spec.
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "spec": map[string]any{}}}
	ns.SetName(app.Namespace)
	if len(m.Labels) > 0 {
		ns.SetLabels(m.Labels)
	}
	ns.SetAnnotations(m.Annotations)
	n := len(s.objects)
	s.addDesired(ai, app, render.Manifest{Object: ns, File: m.Where}, nil, false)
	if len(s.objects) > n {
		s.objects[n].managedNamespace = true
	}
}

// git returns Git's object of d, decoding it first when the parse cache
// gave it undecoded (render.Options.Lazy), in the namespace addDesired
// gave it (the key's).
func (d *desired) git() (*unstructured.Unstructured, error) {
	if d.obj == nil && d.load != nil {
		obj, err := d.load()
		if err != nil {
			return nil, err
		}
		obj.SetNamespace(d.key.ns)
		d.obj, d.load = obj, nil
	}
	return d.obj, nil
}

// openCacheFiles reads the scan cache's parsed manifests and OpenAPI
// schemas in dir in the background, each file on its own (they do not
// depend on the cluster, so they are read while the scan connects, and
// the render waits for the manifests alone); the functions it returns
// wait for them (nil without a cache). A file that cannot be used is a
// warning: the scan parses or fetches everything instead.
func openCacheFiles(dir string, log *slog.Logger) (parsed func() *render.ParseCache, schemas func() *schemaCache) {
	if dir == "" {
		return func() *render.ParseCache { return nil }, func() *schemaCache { return nil }
	}
	p := ahead(func() (*render.ParseCache, error) {
		c, err := render.OpenParseCache(filepath.Join(dir, "manifests.json"))
		if err != nil {
			log.Warn("the parsed manifests in the scan cache are not used: every manifest is parsed", "err", err)
		}
		return c, nil
	})
	sc := ahead(func() (*schemaCache, error) {
		c, err := openSchemaCache(dir)
		if err != nil {
			log.Warn("the OpenAPI schemas in the scan cache are not used: every document is fetched", "err", err)
		}
		return c, nil
	})
	return func() *render.ParseCache { c, _ := p(); return c }, func() *schemaCache { c, _ := sc(); return c }
}
