package discover

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// The field managers Flux applies with.
const (
	kustomizeApplier = "kustomize-controller"
	helmApplier      = "helm-controller"
)

// fluxObject is a Kustomization or HelmRelease that Discover keeps, with the
// Git source it resolved to.
type fluxObject struct {
	u      *unstructured.Unstructured
	ks     *kustomization
	hr     *helmRelease
	source sourceRef
}

// sourceRef is a Flux spec.sourceRef or chart.spec.sourceRef.
type sourceRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

func (s sourceRef) String() string { return s.Kind + "/" + s.Namespace + "/" + s.Name }

// flux discovers Kustomizations and HelmReleases whose source is a
// GitRepository, and HelmReleases whose chart is in a HelmRepository
// (HelmRepository.chartSource), listing each kind once and the sources once per
// namespace they are referenced from (once in all when Options.Namespace is
// empty). A kind whose CRD is not installed is noted in Skipped; when
// neither is, Discover fails.
func (d *discovery) flux(ctx context.Context) error {
	var objs []fluxObject
	var notServed []string
	for _, kind := range []struct {
		name string
		list func(context.Context) ([]fluxObject, error)
	}{
		{"Kustomization", d.listKustomizations},
		{"HelmRelease", d.listHelmReleases},
	} {
		found, err := kind.list(ctx)
		if errors.Is(err, errNotServed) {
			notServed = append(notServed, kind.name)
			d.skip(kind.name, "%v", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("discover Flux %ss: %w", kind.name, err)
		}
		objs = append(objs, found...)
	}
	if len(notServed) == 2 {
		return errors.New("discover Flux: the cluster serves neither Kustomizations (kustomize.toolkit.fluxcd.io/v1) nor HelmReleases (helm.toolkit.fluxcd.io/v2): is Flux installed?")
	}
	objs, err := d.withHelmCharts(ctx, objs)
	if err != nil {
		return err
	}
	repos, err := d.gitRepositories(ctx, objs)
	if err != nil {
		return err
	}
	helmRepos, err := fluxSources[helmRepository](ctx, d, objs, "HelmRepository", HelmRepositories)
	if err != nil {
		return err
	}
	ociRepos, err := fluxSources[ociRepository](ctx, d, objs, "OCIRepository", OCIRepositories)
	if err != nil {
		return err
	}
	var kept []*unstructured.Unstructured
	var keptObjs []fluxObject
	for _, o := range objs {
		key := o.source.Namespace + "/" + o.source.Name
		var found bool
		switch o.source.Kind {
		case "HelmRepository":
			_, found = helmRepos[key]
		case "OCIRepository":
			_, found = ociRepos[key]
		default:
			_, found = repos[key]
		}
		if !found {
			d.fail(ref(o.u), "", fmt.Errorf("source %s not found", o.source))
			continue
		}
		kept = append(kept, o.u)
		keptObjs = append(keptObjs, o)
	}
	names := appNames(kept)
	cache := map[string]cached{}
	for _, o := range keptObjs {
		key := o.source.Namespace + "/" + o.source.Name
		var src config.Source
		var target string // of a chart from a chart repository
		var repoProblems []string
		switch o.source.Kind {
		case "HelmRepository":
			src, target, err = helmRepos[key].chartSource(o.hr)
		case "OCIRepository":
			if o.ks != nil {
				src, repoProblems, err = ociRepos[key].artifactSource()
			} else {
				src, target, err = ociRepos[key].chartSource(o.hr)
			}
		default:
			src, err = d.gitSource(repos[key])
			if err == nil {
				src.Includes, err = d.includes(repos, o.source.Namespace, repos[key], []string{o.source.Name})
			}
		}
		if err != nil {
			d.fail(ref(o.u), "", fmt.Errorf("source %s: %w", o.source, err))
			continue
		}
		name := names[ref(o.u)]
		var app config.App
		var problems []string
		if o.ks != nil {
			app, problems = d.kustomizationApp(ctx, o.u, o.ks, src, cache)
			switch fb := app.Source.Kustomize.Flux; o.source.Kind {
			case "OCIRepository":
				fb.SourceIgnore, fb.Unfiltered = ociRepos[key].Spec.Ignore, ociRepos[key].copied()
			default:
				if repo := repos[key]; repo != nil {
					fb.SourceIgnore = repo.Spec.Ignore
				}
			}
		} else {
			app, problems = d.helmReleaseApp(ctx, o.u, o.hr, src, cache)
			if repo := repos[key]; repo != nil && app.Source.Helm != nil && app.Source.Chart == "" {
				// source-controller builds the chart from the
				// GitRepository's artifact.
				app.Source.Helm.FluxArtifact, app.Source.Helm.SourceIgnore = true, repo.Spec.Ignore
			}
		}
		app.Name = name
		if target != "" && src.Revision != "" && target != src.Revision {
			// Live is the version released; what the target allows
			// beyond it is pending.
			app.TargetRevision = target
		}
		problems = append(problems, repoProblems...)
		d.res.Apps = append(d.res.Apps, app)
		for _, p := range problems {
			d.fail(ref(o.u), name, errors.New(p))
		}
		if o.hr != nil && o.hr.Spec.DriftDetection != nil {
			d.fluxIgnores(o.u, "driftDetection.ignore", o.hr.Spec.DriftDetection.Ignore, app)
		}
		if o.ks != nil {
			d.fluxIgnores(o.u, "ignore", o.ks.Spec.Ignore, app)
		}
	}
	return nil
}

// otherFluxCluster says why a Flux object applies to another cluster, or "".
func otherFluxCluster(kubeConfig map[string]any) string {
	if kubeConfig != nil {
		return "spec.kubeConfig applies it to another cluster"
	}
	return ""
}

// gitRepository holds the fields of a Flux GitRepository that discovery
// reads. See https://fluxcd.io/flux/components/source/gitrepositories/
type gitRepository struct {
	Spec struct {
		URL string `json:"url"`
		Ref *struct {
			Branch string `json:"branch"`
			Tag    string `json:"tag"`
			SemVer string `json:"semver"`
			Name   string `json:"name"`
			Commit string `json:"commit"`
		} `json:"ref"`
		Include []struct {
			Repository struct {
				Name string `json:"name"`
			} `json:"repository"`
			FromPath string `json:"fromPath"`
			ToPath   string `json:"toPath"`
		} `json:"include"`
		Ignore            *string `json:"ignore"`
		RecurseSubmodules bool    `json:"recurseSubmodules"`
	} `json:"spec"`
	Status struct {
		Artifact *struct {
			Revision string `json:"revision"`
		} `json:"artifact"`
		// IncludedArtifacts are the artifacts of spec.include, in its
		// order, as the artifact holds them.
		IncludedArtifacts []struct {
			Revision string `json:"revision"`
		} `json:"includedArtifacts"`
	} `json:"status"`
}

// gitRepositories lists the GitRepositories objs refer to.
func (d *discovery) gitRepositories(ctx context.Context, objs []fluxObject) (map[string]*gitRepository, error) {
	return fluxSources[gitRepository](ctx, d, objs, "GitRepository", GitRepositories)
}

// fluxSources lists the sources of one kind that objs refer to, once per
// namespace they live in (once in all when Options.Namespace is empty),
// keyed by namespace/name.
func fluxSources[T any](ctx context.Context, d *discovery, objs []fluxObject, kind string, gvr schema.GroupVersionResource) (map[string]*T, error) {
	nss := map[string]bool{}
	for _, o := range objs {
		if o.source.Kind == kind || kind == "GitRepository" && o.source.Kind == "" {
			nss[o.source.Namespace] = true
		}
	}
	var lists []string
	switch {
	case len(nss) == 0:
	case d.opts.Namespace == "":
		lists = []string{""}
	default:
		for ns := range nss {
			lists = append(lists, ns)
		}
		sort.Strings(lists)
	}
	out := map[string]*T{}
	for _, ns := range lists {
		items, err := d.list(ctx, gvr, ns, "")
		if errors.Is(err, errNotServed) {
			d.skip(kind, "%v", err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("discover Flux %ss: %w", kind, err)
		}
		for i := range items {
			var g T
			if err := decode(&items[i], &g); err != nil {
				d.fail(ref(&items[i]), "", err)
				continue
			}
			out[items[i].GetNamespace()+"/"+items[i].GetName()] = &g
		}
	}
	return out, nil
}

// gitSource is the scanner source of a GitRepository: its URL, and the
// commit of its artifact when source-controller has fetched one, else its
// spec.ref (commit, name, tag, branch, or Flux's default branch master).
func (d *discovery) gitSource(g *gitRepository) (config.Source, error) {
	src := config.Source{Repo: g.Spec.URL, RecurseSubmodules: g.Spec.RecurseSubmodules}
	if a := g.Status.Artifact; a != nil {
		if sha := artifactCommit(a.Revision); sha != "" {
			src.Revision = sha
			return src, nil
		}
	}
	r := g.Spec.Ref
	switch {
	case r == nil:
		src.Revision = "master"
	case r.Commit != "":
		src.Revision = r.Commit
	case r.Name != "":
		src.Revision = r.Name
	case r.SemVer != "":
		return src, fmt.Errorf("ref.semver %s is resolved by source-controller, and its status has no artifact revision yet", r.SemVer)
	case r.Tag != "":
		src.Revision = r.Tag
	case r.Branch != "":
		src.Revision = r.Branch
	default:
		src.Revision = "master"
	}
	return src, nil
}

// includes are the GitRepository g's spec.include (in namespace ns, as
// the repositories it names): each included repository at the commit its
// artifact held when g's artifact was made (status.includedArtifacts),
// else at its own artifact's. via names g and the repositories that
// include it.
func (d *discovery) includes(repos map[string]*gitRepository, ns string, g *gitRepository, via []string) ([]config.Include, error) {
	var out []config.Include
	for i, inc := range g.Spec.Include {
		name := inc.Repository.Name
		if slices.Contains(via, name) || len(via) > 8 {
			return nil, fmt.Errorf("spec.include: the includes go round: %s -> %s", strings.Join(via, " -> "), name)
		}
		ig := repos[ns+"/"+name]
		if ig == nil {
			return nil, fmt.Errorf("spec.include: GitRepository %s/%s not found", ns, name)
		}
		src, err := d.gitSource(ig)
		if err != nil {
			return nil, fmt.Errorf("spec.include %s: %w", name, err)
		}
		if i < len(g.Status.IncludedArtifacts) {
			if sha := artifactCommit(g.Status.IncludedArtifacts[i].Revision); sha != "" {
				src.Revision = sha
			}
		}
		if src.Includes, err = d.includes(repos, ns, ig, append(via[:len(via):len(via)], name)); err != nil {
			return nil, err
		}
		to := inc.ToPath
		if to == "" {
			to = name // source-controller's default
		}
		out = append(out, config.Include{Source: src, Ignore: ig.Spec.Ignore, FromPath: inc.FromPath, ToPath: to})
	}
	return out, nil
}

var hexCommit = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// atArtifact says whether the revision rev of a Flux object's status
// (lastAttemptedRevision, lastAppliedRevision) is artifact, the revision
// its source is at (an OCI artifact's as is, a Git commit's SHA).
func atArtifact(rev, artifact string) bool {
	return artifact != "" && (rev == artifact || artifactCommit(rev) == artifact)
}

// artifactCommit is the commit SHA of a GitRepository artifact revision:
// "main@sha1:<sha>", "refs/tags/v1@sha1:<sha>", "sha1:<sha>", or the older
// "main/<sha>"; "" when it is none of these.
func artifactCommit(rev string) string {
	if i := strings.LastIndex(rev, "@"); i >= 0 {
		rev = rev[i+1:]
	}
	if _, sha, ok := strings.Cut(rev, ":"); ok {
		rev = sha
	} else if i := strings.LastIndex(rev, "/"); i >= 0 {
		rev = rev[i+1:]
	}
	if hexCommit.MatchString(rev) {
		return rev
	}
	return ""
}

// fluxGitOps is the reconciler's view of a Flux object.
func fluxGitOps(u *unstructured.Unstructured, selfHeal, prune, suspend bool) *report.GitOps {
	return &report.GitOps{Tool: FromFlux, Object: ref(u), SelfHeal: selfHeal && !suspend, Prune: prune, Suspended: suspend}
}
