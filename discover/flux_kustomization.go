package discover

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/source"
)

// kustomization holds the fields of a Flux Kustomization that discovery
// reads. See https://fluxcd.io/flux/components/kustomize/kustomizations/
type kustomization struct {
	Spec struct {
		SourceRef       sourceRef      `json:"sourceRef"`
		Path            string         `json:"path"`
		TargetNamespace string         `json:"targetNamespace"`
		Prune           bool           `json:"prune"`
		Suspend         bool           `json:"suspend"`
		KubeConfig      map[string]any `json:"kubeConfig"`
		PostBuild       *struct {
			Substitute         map[string]string `json:"substitute"`
			SubstituteStrategy string            `json:"substituteStrategy"`
			SubstituteFrom     []struct {
				Kind     string `json:"kind"`
				Name     string `json:"name"`
				Optional bool   `json:"optional"`
			} `json:"substituteFrom"`
		} `json:"postBuild"`
		// Overrides that change the rendered objects.
		NamePrefix string `json:"namePrefix"`
		NameSuffix string `json:"nameSuffix"`
		Patches    []struct {
			Patch  string         `json:"patch"`
			Target map[string]any `json:"target"`
		} `json:"patches"`
		Images                  []config.FluxImage `json:"images"`
		Components              []string           `json:"components"`
		IgnoreMissingComponents bool               `json:"ignoreMissingComponents"`
		CommonMetadata          *struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"commonMetadata"`
		Decryption *struct {
			Provider string `json:"provider"`
		} `json:"decryption"`
		// Ignore are the paths kustomize-controller leaves as they are
		// live (v1.9: fluxcd/pkg/ssa's DriftIgnoreRules).
		Ignore    []fluxIgnoreRule `json:"ignore"`
		DependsOn []fluxDependency `json:"dependsOn"`
	} `json:"spec"`
	Status struct {
		// LastAppliedRevision is the artifact revision last applied:
		// main@sha1:<commit>.
		LastAppliedRevision string `json:"lastAppliedRevision"`
		// LastAttemptedRevision is the artifact revision of the last
		// reconcile, applied or not.
		LastAttemptedRevision string          `json:"lastAttemptedRevision"`
		Conditions            []fluxCondition `json:"conditions"`
	} `json:"status"`
}

// fluxCondition is one of a Flux object's status.conditions.
type fluxCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
	ObservedGeneration int64  `json:"observedGeneration"`
}

// currentCondition is the condition of type typ among conds, nil when
// there is none or it was written for an older generation of u than its
// current spec.
func currentCondition(u *unstructured.Unstructured, conds []fluxCondition, typ string) *fluxCondition {
	i := slices.IndexFunc(conds, func(c fluxCondition) bool { return c.Type == typ })
	if i < 0 || (conds[i].ObservedGeneration != 0 && conds[i].ObservedGeneration != u.GetGeneration()) {
		return nil
	}
	return &conds[i]
}

// kustomizationBlocked says why kustomize-controller applies nothing (or
// only its first stages) of the Kustomization u as things stand, or "":
// its Ready condition, for its current spec, is False because it waits for
// the Kustomizations it dependsOn (DependencyNotReady: nothing is built or
// applied until they are Ready; InvalidCELExpression: nor ever, while a
// readyExpr of dependsOn does not compile), or, at the revision its source is at now
// (artifact), which each retry takes again, because its build fails
// (BuildFailed) or its apply does (ReconciliationFailed) with an error
// that says where (fluxApplyFailure). except lists the kinds that are still
// applied at every retry (report.GitOps.SyncBlockedExcept). Any other
// failure (an apply that failed half-way, a health check, pruning) may
// have applied the objects, and says nothing here.
func kustomizationBlocked(u *unstructured.Unstructured, ks *kustomization, artifact string, depsReady bool, secrets []string) syncBlock {
	ready := currentCondition(u, ks.Status.Conditions, "Ready")
	if ready == nil || ready.Status != "False" {
		return syncBlock{}
	}
	atSource := atArtifact(ks.Status.LastAttemptedRevision, artifact)
	switch {
	case ready.Reason == "DependencyNotReady" || ready.Reason == "InvalidCELExpression":
		return dependencyBlock(u, ready, depsReady, "kustomize-controller applies nothing of it", secrets)
	case ready.Reason == "BuildFailed" && atSource:
		return syncBlock{ready.Reason, fmt.Sprintf("the build of %s at %s fails (%s), and kustomize-controller applies nothing of it until Git moves past that revision", ref(u), artifact, reconcilerMessage(ready.Message, secrets...)), nil}
	case ready.Reason == "ReconciliationFailed" && atSource:
		stage, ok := fluxApplyFailure(ready.Message)
		if !ok {
			return syncBlock{}
		}
		applied := "nothing of it"
		var except []string
		if stage > 0 {
			applied = fluxStageNames[stage-1] + " first, and nothing else of it"
			except = slices.Concat(fluxStageKinds[:stage]...)
		}
		return syncBlock{ready.Reason, fmt.Sprintf("the apply of %s at %s fails (%s): kustomize-controller applies %s until the apply passes (Git moves past that revision, or what refuses it changes)", ref(u), artifact, reconcilerMessage(ready.Message, secrets...), applied), except}
	}
	return syncBlock{}
}

// fluxDependency is one of a Flux object's spec.dependsOn.
type fluxDependency struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	ReadyExpr string `json:"readyExpr"`
}

// dependenciesReady says whether each of deps, the dependsOn of the Flux
// object u (Kustomizations of a Kustomization, HelmReleases of a
// HelmRelease), is ready now as its controller checks it
// (checkDependencies): listed by this scan, its status written for its
// generation, Ready True, and whatever more same says of it. A Ready
// condition that says DependencyNotReady while they are is a check made in
// the moment a dependency reconciled (kustomize-controller marks a
// Kustomization Ready Unknown at the start of each reconcile), which the
// controller makes again within --requeue-dependency (30 s): not a block.
// False when one is not ready, was not listed (another namespace, or a
// selector), or has a readyExpr (CEL driftscan does not evaluate).
func (d *discovery) dependenciesReady(u *unstructured.Unstructured, deps []fluxDependency, same func(dep *unstructured.Unstructured) bool) bool {
	if len(deps) == 0 {
		return false
	}
	for _, dep := range deps {
		o := d.fluxListed[u.GetKind()+"/"+cmp.Or(dep.Namespace, u.GetNamespace())+"/"+dep.Name]
		if dep.ReadyExpr != "" || o == nil {
			return false
		}
		observed, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		var status struct {
			Status struct {
				Conditions []fluxCondition `json:"conditions"`
			} `json:"status"`
		}
		if observed != o.GetGeneration() || decode(o, &status) != nil {
			return false
		}
		i := slices.IndexFunc(status.Status.Conditions, func(c fluxCondition) bool { return c.Type == "Ready" })
		if i < 0 || status.Status.Conditions[i].Status != "True" || !same(o) {
			return false
		}
	}
	return true
}

// appliedSource says of a Kustomization that the Kustomization u (of
// spec ks, whose source is at artifact) dependsOn what kustomize-controller
// checks more of it (checkDependencies): one of the same source must have
// applied the revision that source is at.
func appliedSource(u *unstructured.Unstructured, ks *kustomization, artifact string) func(dep *unstructured.Unstructured) bool {
	return func(dep *unstructured.Unstructured) bool {
		var k kustomization
		if decode(dep, &k) != nil {
			return false
		}
		if k.Spec.SourceRef.Kind != ks.Spec.SourceRef.Kind || k.Spec.SourceRef.Name != ks.Spec.SourceRef.Name ||
			cmp.Or(k.Spec.SourceRef.Namespace, dep.GetNamespace()) != cmp.Or(ks.Spec.SourceRef.Namespace, u.GetNamespace()) {
			return true
		}
		return atArtifact(k.Status.LastAppliedRevision, artifact)
	}
}

// dependencyBlock is the block of the Flux object u whose Ready condition
// ready (False, for its current spec) says its dependsOn stops it: its
// controller checks dependsOn before anything else, and stops there while
// one is not Ready (DependencyNotReady, retried every
// --requeue-dependency), or for good when a dependency's readyExpr does not
// compile (InvalidCELExpression: Stalled, a terminal error, never retried
// until its spec changes); stops says what it does not do meanwhile. The
// zero value for any other reason, and for DependencyNotReady while each
// dependency is ready now (depsReady, dependenciesReady).
func dependencyBlock(u *unstructured.Unstructured, ready *fluxCondition, depsReady bool, stops string, secrets []string) syncBlock {
	msg := reconcilerMessage(ready.Message, secrets...)
	switch ready.Reason {
	case "DependencyNotReady":
		if depsReady {
			return syncBlock{}
		}
		return syncBlock{reason: ready.Reason, text: fmt.Sprintf("%s waits for its dependencies (%s), and %s until they are ready", ref(u), msg, stops)}
	case "InvalidCELExpression":
		return syncBlock{reason: ready.Reason, text: fmt.Sprintf("%s cannot check its dependencies, a readyExpr of its dependsOn does not compile (%s), and %s until its spec is mended", ref(u), msg, stops)}
	}
	return syncBlock{}
}

// syncBlock is why a reconciler's automated sync may not run now
// (report.GitOps.SyncBlocked, SyncBlockedReason, SyncBlockedExcept); the
// zero value when it may.
type syncBlock struct {
	reason, text string
	except       []string
}

// set writes b into g.
func (b syncBlock) set(g *report.GitOps) {
	g.SyncBlocked, g.SyncBlockedReason, g.SyncBlockedExcept = b.text, b.reason, b.except
}

// kustomize-controller applies a Kustomization in stages (fluxcd/pkg/ssa
// ApplyAllStaged): cluster definitions, then classes, then the rest (a
// stage of kinds of its own, --custom-apply-stage-kinds, is not modelled:
// off by default). Each stage is dry-run as a whole before any of it is
// applied (ApplyAll), and a stage that fails ends the apply, so a dry run
// that fails in a stage leaves that stage and the later ones unapplied,
// and the earlier ones applied at every retry. fluxStageKinds are the
// kinds of the first two stages, as Kind[.group] patterns (path.Match);
// IsClassDefinition takes any kind ending in Class, of any group.
var (
	fluxStageKinds = [][]string{
		{"CustomResourceDefinition.apiextensions.k8s.io", "Namespace", "ClusterRole.rbac.authorization.k8s.io"},
		{"*Class", "*Class.*"},
	}
	fluxStageNames = []string{"CustomResourceDefinitions, Namespaces and ClusterRoles", "CustomResourceDefinitions, Namespaces, ClusterRoles and *Class kinds"}
)

// fluxDryRunFailed is the start of a dry-run error of fluxcd/pkg/ssa
// (DryRunErr): "Kind/namespace/name dry-run failed (Reason): ...", or "...
// not found: ...", "... namespace not specified: ...".
var fluxDryRunFailed = regexp.MustCompile(`^([A-Za-z0-9]+)/[^\s]+ (?:dry-run failed[ :]|not found: |namespace not specified: )`)

// fluxApplyFailure reads, from the message of a Kustomization whose apply
// failed, the stage whose dry run failed (0 for a failure before any
// stage: an encrypted Secret without decryption). ok is false when the
// message says neither (an apply that failed after its dry run, a wait
// for a stage that timed out): then some of it may have been applied.
func fluxApplyFailure(msg string) (stage int, ok bool) {
	if strings.Contains(msg, "is SOPS encrypted, configuring decryption is required") {
		return 0, true
	}
	m := fluxDryRunFailed.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	switch kind := m[1]; {
	case kind == "CustomResourceDefinition" || kind == "Namespace" || kind == "ClusterRole":
		return 0, true
	case strings.HasSuffix(kind, "Class"):
		return 1, true
	}
	return 2, true
}

// listKustomizations lists the Kustomizations and keeps those whose source
// is a GitRepository or an OCIRepository, that apply to this cluster.
func (d *discovery) listKustomizations(ctx context.Context) ([]fluxObject, error) {
	items, err := d.list(ctx, Kustomizations, d.opts.Namespace, d.opts.Selector)
	if err != nil {
		return nil, err
	}
	d.listedFlux(items)
	var out []fluxObject
	for i := range items {
		u := &items[i]
		var ks kustomization
		if err := decode(u, &ks); err != nil {
			d.fail(ref(u), "", err)
			continue
		}
		if reason := otherFluxCluster(ks.Spec.KubeConfig); reason != "" {
			d.skip(ref(u), "%s", reason)
			continue
		}
		src := ks.Spec.SourceRef
		if src.Namespace == "" {
			src.Namespace = u.GetNamespace()
		}
		if src.Kind != "GitRepository" && src.Kind != "OCIRepository" {
			d.notScanned(ref(u), "source %s is neither a GitRepository nor an OCIRepository: driftscan renders those only", src)
			continue
		}
		out = append(out, fluxObject{u: u, ks: &ks, source: src})
	}
	return out, nil
}

// kustomizationApp is the app of a Kustomization: its path in the
// GitRepository, with targetNamespace given to objects that name no
// namespace. Every Kustomization is built as kustomize-controller builds
// it (config.FluxBuild, render's flux.go: a kustomization generated for a
// folder without one, the artifact's files, no load restriction), with its
// targetNamespace, post-build substitutions and overrides (namePrefix,
// nameSuffix, patches, images, components, commonMetadata); its substituteFrom ConfigMaps and
// Secrets are read from its namespace, in order, then spec.postBuild.substitute
// over them. A variable source that is missing and not optional is an
// error on the app, which is still scanned. With SOPS decryption the app's
// encrypted values are compared by who wrote them (config.DecryptionSOPS).
//
// When the Kustomization last applied another commit than its source is at
// (suspended, failing, or between two intervals), the app is that commit,
// and TargetRevision is the source's: what Flux has not applied yet is
// pending sync, not drift.
func (d *discovery) kustomizationApp(ctx context.Context, u *unstructured.Unstructured, ks *kustomization, src config.Source, cache map[string]cached) (config.App, []string) {
	src.Path = cleanPath(ks.Spec.Path)
	var target string
	artifact := src.Revision
	applied := artifactCommit(ks.Status.LastAppliedRevision)
	if src.OCIArtifact() {
		// <tag>@sha256:<digest>, as the OCIRepository's artifact.
		if applied = ks.Status.LastAppliedRevision; source.ArtifactDigest(applied) == "" {
			applied = ""
		}
	}
	if applied != "" && applied != src.Revision {
		target, src.Revision = src.Revision, applied
	}
	app := config.App{TargetRevision: target,
		Owner: d.owner(u, u.GetNamespace()), Namespace: ks.Spec.TargetNamespace, Source: src,
		Appliers: []string{kustomizeApplier}, AppliedAs: config.AppliedAsFlux,
		// kustomize-controller re-applies every interval, so live changes
		// are reverted unless the Kustomization is suspended.
		GitOps: fluxGitOps(u, true, ks.Spec.Prune, ks.Spec.Suspend),
	}
	fb, problems := d.fluxBuild(ctx, u, ks, cache)
	if !ks.Spec.Suspend {
		// Its message may hold substituted values from Secrets.
		depsReady := d.dependenciesReady(u, ks.Spec.DependsOn, appliedSource(u, ks, artifact))
		kustomizationBlocked(u, ks, artifact, depsReady, fb.Secret).set(app.GitOps)
	}
	app.Source.Kustomize = &config.KustomizeSource{Flux: fb}
	if dec := ks.Spec.Decryption; dec != nil {
		// kustomize-controller's only provider; the key stays with it.
		if dec.Provider == string(config.DecryptionSOPS) {
			app.Decryption = config.DecryptionSOPS
		} else {
			problems = append(problems, fmt.Sprintf("decryption provider %q is not one kustomize-controller knows: encrypted values stay as Git holds them", dec.Provider))
		}
	}
	return app, problems
}

// fluxBuild is what kustomize-controller adds to the build of ks.
func (d *discovery) fluxBuild(ctx context.Context, u *unstructured.Unstructured, ks *kustomization, cache map[string]cached) (*config.FluxBuild, []string) {
	s := ks.Spec
	fb := &config.FluxBuild{TargetNamespace: s.TargetNamespace, NamePrefix: s.NamePrefix, NameSuffix: s.NameSuffix,
		Images: s.Images, Components: s.Components, IgnoreMissingComponents: s.IgnoreMissingComponents}
	for _, p := range s.Patches {
		fb.Patches = append(fb.Patches, config.FluxPatch{Patch: p.Patch, Target: p.Target})
	}
	if m := s.CommonMetadata; m != nil {
		fb.Labels, fb.Annotations = m.Labels, m.Annotations
	}
	var problems []string
	if pb := s.PostBuild; pb != nil {
		fb.PostBuild = true
		fb.SubstituteAlways = pb.SubstituteStrategy == "Always"
		vars := map[string]string{}
		ns := u.GetNamespace()
		for _, from := range pb.SubstituteFrom {
			what := fmt.Sprintf("substituteFrom %s %s/%s", from.Kind, ns, from.Name)
			obj, err := d.getValuesSource(ctx, cache, from.Kind, ns, from.Name)
			if apierrors.IsNotFound(err) && from.Optional {
				continue
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v: Flux cannot build the Kustomization either", what, err))
				continue
			}
			data, _, _ := unstructured.NestedMap(obj.Object, "data")
			for _, k := range slices.Sorted(maps.Keys(data)) {
				v, ok, err := valuesData(obj, from.Kind, k)
				if err != nil || !ok {
					problems = append(problems, fmt.Sprintf("%s key %s is not text", what, k))
					continue
				}
				v = strings.ReplaceAll(v, "\n", "")
				vars[k] = v
				if from.Kind == "Secret" {
					fb.Secret = append(fb.Secret, v)
				}
			}
		}
		for k, v := range pb.Substitute {
			vars[k] = strings.ReplaceAll(v, "\n", "")
		}
		if len(vars) > 0 {
			fb.Vars = vars
		}
	}
	return fb, problems
}
