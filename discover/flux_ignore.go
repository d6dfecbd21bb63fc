package discover

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
)

// fluxIgnoreRule is an entry of a HelmRelease's driftDetection.ignore or a
// Kustomization's ignore: JSON pointers the controller leaves as they are
// live, on the objects its target selects (all of them without one).
type fluxIgnoreRule struct {
	Paths  []string `json:"paths"`
	Target *struct {
		Group              string `json:"group"`
		Version            string `json:"version"`
		Kind               string `json:"kind"`
		Name               string `json:"name"`
		Namespace          string `json:"namespace"`
		LabelSelector      string `json:"labelSelector"`
		AnnotationSelector string `json:"annotationSelector"`
	} `json:"target"`
}

// regexMeta are the characters that make a Flux selector's field (an
// anchored regular expression, fluxcd/pkg/ssa/jsondiff.SelectorRegex) match
// more than its own text. A dot is left out: it stands in names for itself
// (my.config), and read as a name it matches only that.
const regexMeta = `\^$*+?()[]{}|`

// fluxIgnores imports the ignore rules of a Flux object's field as ignore
// rules of app, owned by its owner, to review by the import expiry. A
// target that selects by labels or annotations, or whose group, kind,
// name or namespace is a regular expression, cannot be expressed as an
// ignore rule: it is not imported, which hides less, and is an error
// naming it. A target's version does not narrow the rule (the objects of
// a kind an app declares share one version).
func (d *discovery) fluxIgnores(u *unstructured.Unstructured, field string, rules []fluxIgnoreRule, app config.App) {
	for i, ig := range rules {
		r := classify.IgnoreRule{JSONPointers: ig.Paths, Owner: app.Owner, Reason: "imported from Flux", Expires: d.expires(), App: app.Name, Reconciler: FromFlux}
		if t := ig.Target; t != nil {
			if t.LabelSelector != "" || t.AnnotationSelector != "" {
				d.fail(ref(u), app.Name, fmt.Errorf("%s[%d] not imported: target label and annotation selectors cannot be expressed as a driftscan ignore rule", field, i))
				continue
			}
			if regex := patterned(regexMeta, "group", t.Group, "kind", t.Kind, "name", t.Name, "namespace", t.Namespace); len(regex) > 0 {
				d.fail(ref(u), app.Name, fmt.Errorf("%s[%d] not imported: target %s is a regular expression, which a driftscan ignore rule cannot express", field, i, strings.Join(regex, ", ")))
				continue
			}
			r.Group, r.Kind, r.Name, r.Namespace = t.Group, t.Kind, t.Name, t.Namespace
		}
		d.addRule(ref(u), r)
	}
}

// patterned names, as `name "value"`, each of the fields (name and value
// pairs) whose value holds one of meta's characters: a pattern where a
// driftscan ignore rule takes a name.
func patterned(meta string, fields ...string) []string {
	var out []string
	for i := 0; i+1 < len(fields); i += 2 {
		if strings.ContainsAny(fields[i+1], meta) {
			out = append(out, fmt.Sprintf("%s %q", fields[i], fields[i+1]))
		}
	}
	return out
}
