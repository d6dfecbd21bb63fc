package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/report"
)

// kubectl's connection flags override the kubeconfig as they do in kubectl,
// on the real API server: --server is where the scan connects, --as and
// --as-group whom it acts as (the test's admin kubeconfig impersonating a
// user with no rights cannot list anything; impersonating system:masters
// can), and --as-group alone is refused as kubectl refuses it.
func TestKubectlConnectionFlagsOverrideTheKubeconfig(t *testing.T) {
	env.Need(t)
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flags}\ndata: {a: b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"scan", "--kubeconfig", env.Kubeconfig, "--path", dir, "-n", ns, "--no-cache", "-o", "json"}

	if res := runCLI(t, append(base, "--server", "https://127.0.0.1:1")...); res.code != 2 || !strings.Contains(res.err, "https://127.0.0.1:1") {
		t.Errorf("--server: exit %d, stderr %q; want exit 2 naming the server", res.code, res.err)
	}
	if res := runCLI(t, append(base, "--as-group", "admins")...); res.code != 2 || !strings.Contains(res.err, "without impersonating a user") {
		t.Errorf("--as-group alone: exit %d, stderr %q", res.code, res.err)
	}

	res := runCLI(t, append(base, "--as", "nobody@example.com")...)
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil || res.code != 2 {
		t.Fatalf("--as nobody: exit %d, %v\n%s", res.code, err, res.err)
	}
	if o := r.Apps[0].Objects[0]; o.Status != report.StatusError || !strings.Contains(o.Error, "RBAC denied") {
		t.Errorf("--as nobody: %s is %s (%q); want an RBAC error", o.Ref(), o.Status, o.Error)
	}

	res = runCLI(t, append(base, "--as", "someone@example.com", "--as-group", "system:masters")...)
	if err := json.Unmarshal([]byte(res.out), &r); err != nil || res.code != 1 {
		t.Fatalf("--as a master: exit %d, %v\n%s", res.code, err, res.err)
	}
	if o := r.Apps[0].Objects[0]; o.Status != report.StatusMissing {
		t.Errorf("--as a master: %s is %s (%q); want Missing (never applied)", o.Ref(), o.Status, o.Error)
	}
}
