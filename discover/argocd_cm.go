package discover

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/classify"
)

// argoOverrideIgnore is the ignoreDifferences of an argocd-cm resource
// customization (v1alpha1.OverrideIgnoreDiff).
type argoOverrideIgnore struct {
	JSONPointers          []string `json:"jsonPointers"`
	JQPathExpressions     []string `json:"jqPathExpressions"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers"`
}

const argoCustomizations = "resource.customizations"

// argoCMIgnores imports argocd-cm's system-level ignore rules, which Argo
// CD applies to every Application (util/settings GetResourceOverrides):
// the ignoreDifferences of each group/kind in resource.customizations (a
// YAML map whose ignoreDifferences is itself YAML text), replaced by a
// resource.customizations.ignoreDifferences.<group>_<kind> key (<kind>
// alone for the core group, `all` for every kind) for the same group and
// kind. Each becomes a rule of every Argo CD app (Tool), owned by
// argocd-cm's owner (the owner label, else "argocd"), to review by the
// import expiry. A group or kind that is a glob other than `*` cannot be a
// driftscan rule: it is not imported, and is an error naming the key.
func (d *discovery) argoCMIgnores(cm *unstructured.Unstructured, data map[string]string) {
	object := ref(cm)
	overrides := map[string]argoOverrideIgnore{}
	origin := map[string]string{}
	if text := data[argoCustomizations]; text != "" {
		var combined map[string]struct {
			IgnoreDifferences string `json:"ignoreDifferences"`
		}
		if err := yaml.Unmarshal([]byte(text), &combined); err != nil {
			d.fail(object, "", fmt.Errorf("%s: %w", argoCustomizations, err))
		}
		for key, c := range combined {
			if c.IgnoreDifferences == "" {
				continue
			}
			var ig argoOverrideIgnore
			if err := yaml.Unmarshal([]byte(c.IgnoreDifferences), &ig); err != nil {
				d.fail(object, "", fmt.Errorf("%s %s ignoreDifferences: %w", argoCustomizations, key, err))
				continue
			}
			overrides[key], origin[key] = ig, argoCustomizations+" "+key
		}
	}
	const split = argoCustomizations + ".ignoreDifferences."
	for k, text := range data {
		gk, ok := strings.CutPrefix(k, split)
		if !ok {
			continue
		}
		key, err := argoOverrideKey(gk)
		if err != nil {
			d.fail(object, "", fmt.Errorf("%s: %w", k, err))
			continue
		}
		var ig argoOverrideIgnore
		if err := yaml.Unmarshal([]byte(text), &ig); err != nil {
			d.fail(object, "", fmt.Errorf("%s: %w", k, err))
			continue
		}
		overrides[key], origin[key] = ig, k
	}
	owner := d.owner(cm, "argocd")
	for _, key := range slices.Sorted(maps.Keys(overrides)) {
		ig := overrides[key]
		if len(ig.JSONPointers)+len(ig.JQPathExpressions)+len(ig.ManagedFieldsManagers) == 0 {
			continue
		}
		group, kind, ok := strings.Cut(key, "/")
		if !ok {
			group, kind = "", key
		}
		group, kind = anyIfStar(group), anyIfStar(kind)
		if globs := patterned(`*?[]{}\`, "group", group, "kind", kind); len(globs) > 0 {
			d.fail(object, "", fmt.Errorf("%s not imported: %s is a pattern, which a driftscan ignore rule cannot express", origin[key], strings.Join(globs, ", ")))
			continue
		}
		d.addRule(object, classify.IgnoreRule{Group: group, Kind: kind,
			JSONPointers: ig.JSONPointers, JQPathExpressions: ig.JQPathExpressions, ManagedFieldsManagers: ig.ManagedFieldsManagers,
			Owner: owner, Reason: "imported from Argo CD's argocd-cm (" + origin[key] + ")", Expires: d.expires(), Tool: FromArgoCD, Reconciler: FromArgoCD})
	}
}

// argoCompareOptions is the key of argocd-cm's diff options
// (util/settings ArgoCDDiffOptions).
const argoCompareOptions = "resource.compareoptions"

// aggregatedRules selects the rules of a ClusterRole with an
// aggregationRule: what Argo CD's ignoreAggregatedRoles leaves out of every
// diff (gitops-engine normalizeRole, on an object whose aggregationRule is
// a map).
const aggregatedRules = `select(.aggregationRule | type == "object") | .rules`

// argoCompareIgnores imports what argocd-cm's resource.compareoptions hide
// from every Application's diff. ignoreAggregatedRoles (off by default)
// hides an aggregated ClusterRole's rules, which kube-controller-manager
// writes: a rule of every Argo CD app, like argoCMIgnores's, but of its
// diff only: RespectIgnoreDifferences does not keep the live rules at a
// sync (controller/sync.go normalizes with ignores and overrides). The other
// options change nothing driftscan reports (status is never compared).
func (d *discovery) argoCompareIgnores(cm *unstructured.Unstructured, data map[string]string) {
	text := data[argoCompareOptions]
	if text == "" {
		return
	}
	var opts struct {
		IgnoreAggregatedRoles bool `json:"ignoreAggregatedRoles"`
	}
	if err := yaml.Unmarshal([]byte(text), &opts); err != nil {
		d.fail(ref(cm), "", fmt.Errorf("%s: %w", argoCompareOptions, err))
		return
	}
	if !opts.IgnoreAggregatedRoles {
		return
	}
	d.addRule(ref(cm), classify.IgnoreRule{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole",
		JQPathExpressions: []string{aggregatedRules},
		Owner:             d.owner(cm, "argocd"), Reason: "imported from Argo CD's argocd-cm (" + argoCompareOptions + " ignoreAggregatedRoles)", Expires: d.expires(), Tool: FromArgoCD, Reconciler: FromArgoCD, DiffOnly: true})
}

// argoOverrideKey is the group/kind of a split key's <group>_<kind> (Argo
// CD's convertToOverrideKey): <kind> alone for the core group, and `all`
// for every group and kind.
func argoOverrideKey(gk string) (string, error) {
	if gk == "all" {
		return "*/*", nil
	}
	parts := strings.Split(gk, "_")
	switch {
	case len(parts) == 2:
		return parts[0] + "/" + parts[1], nil
	case len(parts) == 1 && gk != "":
		return gk, nil
	}
	return "", fmt.Errorf("want <group>_<kind> or <kind> after ignoreDifferences., have %q", gk)
}
