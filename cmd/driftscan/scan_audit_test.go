package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
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

// `kubectl scale` of a Deployment whose replicas Git leaves out goes
// through the scale subresource, and the API server records it under no
// manager (the Scale it updates has no managedFields): only the audit
// log names who. The event is the API server's for that request, as
// kubectl sends it.
func TestScanNamesWhoScaledReplicasNobodyOwned(t *testing.T) {
	env.Need(t)
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	data, err := os.ReadFile("../../fixtures/apps/web/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	manifest := strings.Replace(string(data), "  replicas: 3\n", "", 1)
	if err := os.WriteFile(filepath.Join(dir, "deployment.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, manifest))
	time.Sleep(time.Second)                                   // the scale after the applier's second
	env.Scale(t, "kubectl", cluster.Deployment, ns, "web", 5) // kubectl scale names no field manager
	at := time.Now()
	ev, err := json.Marshal(map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request", "auditID": "0d7f3c1a-9b2e-4c5d-8e6f-7a8b9c0d1e2f",
		"stage": "ResponseComplete", "verb": "patch",
		"requestURI": fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/web/scale", ns),
		"user":       map[string]any{"username": "dave@example.com", "groups": []string{"system:authenticated"}},
		"userAgent":  "kubectl/v1.37.2 (linux/amd64) kubernetes/0f3ea5e", "sourceIPs": []string{"10.0.7.40"},
		"objectRef":                map[string]any{"resource": "deployments", "subresource": "scale", "namespace": ns, "name": "web", "apiGroup": "apps", "apiVersion": "v1"},
		"responseStatus":           map[string]any{"code": 200},
		"requestObject":            map[string]any{"spec": map[string]any{"replicas": 5}},
		"requestReceivedTimestamp": at.Add(-20 * time.Millisecond).Format(time.RFC3339Nano),
		"stageTimestamp":           at.Add(-10 * time.Millisecond).Format(time.RFC3339Nano),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		audit string
		class report.Class
		user  string
	}{{"without an audit log", "", report.ClassUnknown, ""}, {"with the audit log", string(ev) + "\n", report.ClassHuman, "dave@example.com"}} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"scan", "--kubeconfig", env.Kubeconfig, "--path", dir, "-n", ns, "-o", "json"}
			if c.audit != "" {
				args = append(args, "--audit-log", "-")
			}
			var out, errb bytes.Buffer
			if code := execute(t.Context(), args, streams{In: strings.NewReader(c.audit), Out: &out, Err: &errb}); code != report.ExitDrift {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, errb.String())
			}
			var r report.Report
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			var got []report.Finding
			for _, o := range r.Apps[0].Objects {
				got = append(got, o.Findings...)
			}
			if len(got) != 1 || got[0].Path != ".spec.replicas" || got[0].Type != report.TypeAdded || got[0].Live != "5" || got[0].Class != c.class ||
				!strings.Contains(got[0].Hint, "not the default 1") {
				t.Fatalf("want replicas 5 Added, class %s, with the hint on the unrecorded scale; got %+v", c.class, got)
			}
			if a := got[0].Attribution; c.user == "" && a != nil || c.user != "" && (a == nil || a.User != c.user || got[0].Manager != "kubectl" || got[0].Subresource != "scale") {
				t.Errorf("want the scale named as %q's through kubectl (scale), got manager %q subresource %q attribution %+v", c.user, got[0].Manager, got[0].Subresource, a)
			}
		})
	}
}
