package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// auditLine is the API server's audit event of the kubectl set image that
// driftedWeb made, as a CI service account sent it: at the second the
// managedFields entry records. (This test's control plane writes no audit
// log; package audit tests the join on one that does.)
func auditLine(t *testing.T, ns string) string {
	t.Helper()
	live := env.Get(t, cluster.Deployment, ns, "web")
	var at time.Time
	for _, e := range live.GetManagedFields() {
		if e.Manager == "kubectl-set" && e.Time != nil {
			at = e.Time.Time
		}
	}
	if at.IsZero() {
		t.Fatal("no kubectl-set entry on the Deployment")
	}
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request", "auditID": "5b0c2d4e-1f3a-4b5c-8d9e-0a1b2c3d4e5f",
		"stage": "ResponseComplete", "verb": "patch",
		"requestURI": fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/web?fieldManager=kubectl-set", ns),
		"user":       map[string]any{"username": "system:serviceaccount:ci:deployer", "groups": []string{"system:serviceaccounts", "system:serviceaccounts:ci"}},
		"userAgent":  "kubectl/v1.32.3 (linux/amd64) kubernetes/32cc146", "sourceIPs": []string{"10.0.7.21"},
		"objectRef":                map[string]any{"resource": "deployments", "namespace": ns, "name": "web", "apiGroup": "apps", "apiVersion": "v1"},
		"responseStatus":           map[string]any{"code": 200},
		"requestObject":            map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.26"}}}}}},
		"requestReceivedTimestamp": at.Add(100 * time.Millisecond).Format(time.RFC3339Nano),
		"stageTimestamp":           at.Add(110 * time.Millisecond).Format(time.RFC3339Nano),
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(data) + "\n"
}

func TestScanNamesThePersonFromAnAuditLogOnStdin(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	t.Setenv("NO_COLOR", "1")
	var out, errb bytes.Buffer
	code := execute(t.Context(), []string{"scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", ns,
		"--audit-log", "-", "-o", "table", "-o", "json=" + filepath.Join(t.TempDir(), "r.json")},
		streams{In: strings.NewReader(auditLine(t, ns)), Out: &out, Err: &errb})
	if code != report.ExitDrift {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errb.String())
	}
	if !strings.Contains(out.String(), "kubectl-set by system:serviceaccount:ci:deployer") {
		t.Errorf("the table does not name the service account in the manager column:\n%s", out.String())
	}
}

func TestScanWithAMissingAuditLogWarnsAndStillReports(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	missing := filepath.Join(t.TempDir(), "audit.log")
	res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", ns, "--audit-log", missing, "-o", "json")
	if res.code != report.ExitDrift {
		t.Fatalf("exit %d, want 1 (drift, not an error); stderr:\n%s", res.code, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || r.Warnings[0].Code != report.WarnAuditLogUnreadable || !strings.Contains(r.Warnings[0].Message, missing) {
		t.Errorf("warnings %+v, want one AuditLogUnreadable naming %s", r.Warnings, missing)
	}
}
