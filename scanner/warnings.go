package scanner

import (
	"fmt"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/report"
)

// warn records fidelity the scan lost (a report.Warning) and logs it.
func (s *scan) warn(w report.Warning) {
	s.warnMu.Lock()
	s.r.Warnings = append(s.r.Warnings, w)
	s.warnMu.Unlock()
	s.opts.Logger.Warn(w.Message, "code", string(w.Code), "app", w.App)
}

// warnAppsIn records one warning for each app that declares objects in
// namespace ns: those are the apps whose findings lose precision.
func (s *scan) warnAppsIn(ns string, code report.WarningCode, message string) {
	apps := map[int]bool{}
	// gather calls it while the pages are read, and keep lets go of Git's
	// objects as it goes (obj, load, twin): only the fields nothing
	// writes then are read, not the whole desired object copied.
	for i := range s.objects {
		if d := &s.objects[i]; d.key.ns == ns {
			apps[d.app] = true
		}
	}
	for _, ai := range sortedInts(apps) {
		s.warn(report.Warning{Code: code, App: s.r.Apps[ai].Name, Message: message})
	}
}

// warnUnpublished records, per app, the group/versions whose objects are
// typed by deduction because the server publishes no schema for them.
func (s *scan) warnUnpublished() {
	type key struct {
		app int
		gv  schema.GroupVersion
	}
	count := map[key]int{}
	var keys []key
	for _, d := range s.objects {
		gv := d.mapping.GroupVersionKind.GroupVersion()
		if !s.c.typer.unpublished[gv] {
			continue
		}
		k := key{d.app, gv}
		if count[k] == 0 {
			keys = append(keys, k)
		}
		count[k]++
	}
	for _, k := range keys {
		s.warn(report.Warning{
			Code: report.WarnSchemaNotPublished, App: s.r.Apps[k.app].Name,
			Message: fmt.Sprintf("the API server publishes no OpenAPI schema for %s, so %s of this app were compared by deduction: lists as whole values, without merge keys or defaults, which can report false drift", gvText(k.gv), objectsText(count[k])),
		})
	}
}

// selectsNamespaces reports whether a webhook chooses namespaces by label:
// only then do namespace labels that could not be read cost anything.
func selectsNamespaces(configs []admissionregistrationv1.MutatingWebhookConfiguration) bool {
	for _, c := range configs {
		for _, w := range c.Webhooks {
			if sel := w.NamespaceSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
				return true
			}
		}
	}
	return false
}

func gvText(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return gv.Version
	}
	return gv.String()
}

func objectsText(n int) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}

func sortedInts(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for i := range set {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// warnNamespaces records the namespaces whose labels could not be read,
// when a webhook selects namespaces by label (else nothing is lost).
func (s *scan) warnNamespaces(failed map[string]error, matter bool) {
	if !matter {
		return
	}
	names := make([]string, 0, len(failed))
	for ns := range failed {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		s.warnAppsIn(ns, report.WarnNamespaceUnreadable, fmt.Sprintf("cannot read the labels of namespace %s, so webhooks that select namespaces by label are not matched to its objects: %v", ns, failed[ns]))
	}
}

// warnScalerMapping records an autoscaler kind that could not be looked up
// for another reason than that the cluster does not serve it.
func (s *scan) warnScalerMapping(gvk schema.GroupVersionKind, err error) {
	if meta.IsNoMatchError(err) {
		return // not installed here: nothing to miss
	}
	s.warn(report.Warning{Code: report.WarnAutoscalersUnreadable, Message: fmt.Sprintf("cannot look up the resource of %s, so a fight with one of them gets no hint: %v", gvkString(gvk), err)})
}
