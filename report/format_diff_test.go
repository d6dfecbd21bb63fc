package report

import (
	"strings"
	"testing"
	"time"
)

func TestDiffHunks(t *testing.T) {
	r := New(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), "prod")
	r.Apps = []App{{Name: "ops", Objects: []Object{{
		Kind: "ClusterRole", Name: "reader",
		Findings: []Finding{
			{Path: ".rules", Type: TypeChanged, Class: ClassHuman, Manager: "kubectl-edit", Git: `[{"verbs":["get"]}]`, Live: `[{"verbs":["get","list"]}]`},
			{Path: ".metadata.annotations.note", Type: TypeAdded, Class: ClassUnknown, Live: "line one\nline two"},
			{Path: ".metadata.labels.tier", Type: TypeRemoved, Class: ClassPipeline, Manager: "ci", Git: "gold", Ignored: true},
		},
	}}}}
	r.Finalize()
	want := `--- git/ClusterRole/reader
+++ live/ClusterRole/reader
@@ .metadata.annotations.note @@ unknown Added by no manager
+line one
+line two
@@ .rules @@ human Changed by kubectl-edit
-[
-  {
-    "verbs": [
-      "get"
-    ]
-  }
-]
+[
+  {
+    "verbs": [
+      "get",
+      "list"
+    ]
+  }
+]
`
	if got := string(mustWrite(t, FormatDiff, r)); got != want {
		t.Errorf("diff =\n%s\nwant (cluster-scoped name, multi-line values, ignored finding left out)\n%s", got, want)
	}
}

func TestDiffOfNoDriftIsEmpty(t *testing.T) {
	r := New(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), "prod")
	r.Apps = []App{{Name: "web", Objects: []Object{{Kind: "ConfigMap", Namespace: "web", Name: "a"}}}}
	r.Finalize()
	if got := mustWrite(t, FormatDiff, r); len(got) != 0 {
		t.Errorf("diff of an in-sync report = %q, want nothing", got)
	}
}

func TestDiffLeavesErrorObjectsOut(t *testing.T) {
	out := string(render(t, FormatDiff, DefaultWriteOptions()))
	if strings.Contains(out, "PodDisruptionBudget") {
		t.Error("diff shows the object in Error")
	}
}
