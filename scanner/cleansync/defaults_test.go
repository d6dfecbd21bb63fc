package cleansync_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/report"
)

// TestPublishedDefaultsDecideWhatADefaultIs: a CRD's structural schema
// publishes the defaults it fills in inside an atomic value. What live
// holds there beyond Git is dismissed only when it is that default; a value
// left over from an older Git (protocol UDP, which Git no longer declares)
// is a change the next sync makes, and is reported.
func TestPublishedDefaultsDecideWhatADefaultIs(t *testing.T) {
	env.InstallCRDs(t, "argocd-controller", fixture("crd"))
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ns := env.Namespace(t, nil)
			a := prepare(t, "widget", ns)
			a.sync(t, m, ns)
			r := a.scan(t, m, ns)
			clean(t, r)
			wantDismissed(t, r, "Widget/gateway .spec.endpoint: defaulted")

			// Git used to say UDP; the last sync applied it, and Git has
			// since dropped the key.
			old := a.objects[0].DeepCopy()
			_ = unstructured.SetNestedField(old.Object, "UDP", "spec", "endpoint", "protocol")
			old.SetNamespace(ns)
			resync(t, m, ns, old)
			r = a.scan(t, m, ns)
			want := []row{{Object: "Widget/gateway", Path: ".spec.endpoint", Type: report.TypeChanged, Class: report.ClassUnknown, Manager: m.manager}}
			if diff := cmp.Diff(want, rows(r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
