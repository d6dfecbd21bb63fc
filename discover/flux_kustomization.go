package discover

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/calricon/driftscan/config"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
			Substitute     map[string]string `json:"substitute"`
			SubstituteFrom []struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"substituteFrom"`
		} `json:"postBuild"`
		// Overrides that change the rendered objects.
		NamePrefix     string         `json:"namePrefix"`
		NameSuffix     string         `json:"nameSuffix"`
		Patches        []any          `json:"patches"`
		Images         []any          `json:"images"`
		Components     []any          `json:"components"`
		CommonMetadata map[string]any `json:"commonMetadata"`
		Decryption     map[string]any `json:"decryption"`
	} `json:"spec"`
	Status struct {
		// LastAppliedRevision is the artifact revision last applied:
		// main@sha1:<commit>.
		LastAppliedRevision string `json:"lastAppliedRevision"`
	} `json:"status"`
}

// listKustomizations lists the Kustomizations and keeps those whose source
// is a GitRepository in this cluster.
func (d *discovery) listKustomizations(ctx context.Context) ([]fluxObject, error) {
	items, err := d.list(ctx, Kustomizations, d.opts.Namespace, d.opts.Selector)
	if err != nil {
		return nil, err
	}
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
		if src.Kind != "GitRepository" {
			d.skip(ref(u), "source %s is not a GitRepository: driftscan renders Git sources only", src)
			continue
		}
		out = append(out, fluxObject{u: u, ks: &ks, source: src})
	}
	return out, nil
}

// kustomizationApp is the app of a Kustomization: its path in the
// GitRepository, rendered as the scanner detects (a kustomization.yaml, else
// every YAML file, as Flux generates one), with targetNamespace given to
// objects that name no namespace. Flux's targetNamespace also replaces the
// namespace objects name, and post-build substitutions replace ${var}s:
// the scanner does neither yet, so a Kustomization with postBuild gets an
// error that lists the substitutions, and the objects are still scanned.
//
// When the Kustomization last applied another commit than its source is at
// (suspended, failing, or between two intervals), the app is that commit,
// and TargetRevision is the source's: what Flux has not applied yet is
// pending sync, not drift.
func (d *discovery) kustomizationApp(u *unstructured.Unstructured, ks *kustomization, src config.Source) (config.App, []string) {
	src.Path = cleanPath(ks.Spec.Path)
	var target string
	if applied := artifactCommit(ks.Status.LastAppliedRevision); applied != "" && applied != src.Revision {
		target, src.Revision = src.Revision, applied
	}
	app := config.App{TargetRevision: target,
		Owner: d.owner(u, u.GetNamespace()), Namespace: ks.Spec.TargetNamespace, Source: src,
		Appliers: []string{kustomizeApplier}, AppliedAs: config.AppliedAsFlux,
		// kustomize-controller re-applies every interval, so live changes
		// are reverted unless the Kustomization is suspended.
		GitOps: fluxGitOps(u, true, ks.Spec.Prune, ks.Spec.Suspend),
	}
	var problems []string
	if pb := ks.Spec.PostBuild; pb != nil && (len(pb.Substitute) > 0 || len(pb.SubstituteFrom) > 0) {
		var what []string
		if len(pb.Substitute) > 0 {
			what = append(what, "substitute "+strings.Join(slices.Sorted(maps.Keys(pb.Substitute)), ", "))
		}
		for _, f := range pb.SubstituteFrom {
			what = append(what, fmt.Sprintf("substituteFrom %s/%s", f.Kind, f.Name))
		}
		problems = append(problems, "postBuild substitutions are not applied by driftscan yet, so ${var} references stay as Git writes them and may show as drift: "+strings.Join(what, "; "))
	}
	var overrides []string
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"namePrefix", ks.Spec.NamePrefix != ""},
		{"nameSuffix", ks.Spec.NameSuffix != ""},
		{"images", len(ks.Spec.Images) > 0},
		{"patches", len(ks.Spec.Patches) > 0},
		{"components", len(ks.Spec.Components) > 0},
		{"commonMetadata", len(ks.Spec.CommonMetadata) > 0},
		{"decryption", len(ks.Spec.Decryption) > 0},
	} {
		if o.set {
			overrides = append(overrides, o.name)
		}
	}
	if len(overrides) > 0 {
		problems = append(problems, "Kustomization overrides are not applied by driftscan yet: "+strings.Join(overrides, ", "))
	}
	return app, problems
}
