package classify

import (
	"testing"
	"time"

	"github.com/calricon/driftscan/report"
)

// FuzzIgnoreRule matches arbitrary rules against arbitrary findings: a bad
// rule is a config error, never a crash.
func FuzzIgnoreRule(f *testing.F) {
	f.Add("/spec/replicas", `.spec.template.spec.containers[] | select(.name == "app") | .image`, "/spec/replicas", "kube-controller-manager")
	f.Add("/metadata/annotations/a~1b", ".metadata.annotations", "/metadata/annotations/a~1b", "")
	f.Add("/", "..", "", "x")
	live := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a/b": "c"}}, "spec": map[string]any{"replicas": int64(3),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}}}}}
	f.Fuzz(func(t *testing.T, pointer, jq, findingPointer, manager string) {
		rule := IgnoreRule{JSONPointers: []string{pointer}, JQPathExpressions: []string{jq}, ManagedFieldsManagers: []string{manager}, Owner: "o", Reason: "r", Expires: "2030-01-01"}
		ig, err := NewIgnorer([]IgnoreRule{rule}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			return
		}
		fd := report.Finding{Manager: manager}
		ig.Apply(IgnoreTarget{Kind: "Deployment", Live: live, Pointer: findingPointer}, &fd)
		if fd.Ignored != (fd.IgnoreRule != nil) {
			t.Errorf("ignored %v with rule %v", fd.Ignored, fd.IgnoreRule)
		}
		_ = ig.Debts()
	})
}
