package render

import (
	"testing"
)

// ChartCRDsFile tells the files of a chart's crds/ folder, and of its
// subcharts', from its templates, by the Files the render gives them.
func TestChartCRDsFile(t *testing.T) {
	for file, want := range map[string]bool{
		"crds/widgets.yaml":                    true,
		"crds/v1/widgets.yaml":                 true,
		"charts/cache/crds/caches.yaml":        true,
		"charts/a/charts/b/crds/x.yaml":        true,
		"templates/crds/widgets.yaml":          false,
		"templates/crds.yaml":                  false,
		"charts/cache/templates/sts.yaml":      false,
		"charts/crds/templates/x.yaml":         false, // a subchart named crds
		"charts/crds":                          false,
		"crds.yaml":                            false,
		".":                                    false,
		"charts/cache/charts/crds/crds/x.yaml": true,
	} {
		if got := ChartCRDsFile(file); got != want {
			t.Errorf("ChartCRDsFile(%q) = %v, want %v", file, got, want)
		}
	}
	// What the render names: a subchart's CRD is under charts/<name>/crds/.
	dir := t.TempDir()
	crd := func(name string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + name + ".example.com}\n"
	}
	writeTree(t, dir, map[string]string{
		"Chart.yaml":                     "apiVersion: v2\nname: shop\nversion: 1.0.0\n",
		"crds/widgets.yaml":              crd("widgets"),
		"templates/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop}\n",
		"charts/cache/Chart.yaml":        "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
		"charts/cache/crds/caches.yaml":  crd("caches"),
		"charts/cache/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cache}\n",
	})
	ms, err := Manifests(t.Context(), Options{Dir: dir, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	crds := 0
	for _, m := range ms {
		isCRD := m.Object.GetKind() == "CustomResourceDefinition"
		if ChartCRDsFile(m.File) != isCRD {
			t.Errorf("%s %s from %s: ChartCRDsFile %v", m.Object.GetKind(), m.Object.GetName(), m.File, !isCRD)
		}
		if isCRD {
			crds++
		}
	}
	if crds != 2 || len(ms) != 4 {
		t.Errorf("rendered %d objects, %d CRDs; want 4, the chart's and its subchart's CRD among them", len(ms), crds)
	}
}
