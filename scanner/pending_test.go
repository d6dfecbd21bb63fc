package scanner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// What the next sync changes, from two renders of an app: objects added,
// removed, and changed with the paths that differ, never their values.
func TestPendingSyncNamesObjectsAndPathsNotValues(t *testing.T) {
	manifests := func(docs ...string) []render.Manifest {
		var out []render.Manifest
		for _, d := range docs {
			out = append(out, render.Manifest{Object: cluster.Object(t, d)})
		}
		return out
	}
	synced := manifests(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {LOG_LEVEL: info, SAME: x}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: data}\ndata: {password: b2xk}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}\n",
	)
	target := manifests(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, annotations: {example.com/rev: \"2\"}}\ndata: {LOG_LEVEL: warn, SAME: x}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: data}\ndata: {password: bmV3}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\n",
	)
	want := []report.PendingObject{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "gone", Change: report.PendingRemoved},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "new", Change: report.PendingAdded},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "web", Change: report.PendingChanged, Paths: []string{".data.LOG_LEVEL", `.metadata.annotations["example.com/rev"]`}},
		{APIVersion: "v1", Kind: "Secret", Namespace: "data", Name: "db", Change: report.PendingChanged, Paths: []string{".data.password"}},
	}
	if diff := cmp.Diff(want, pendingObjects("shop", synced, target)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	if got := pendingObjects("shop", synced, synced); len(got) != 0 {
		t.Errorf("the same render is pending %v", got)
	}
}
