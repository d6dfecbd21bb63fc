package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
)

const apiDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: app
        image: api:1.0
        env:
        - name: DB_PASSWORD
          value: git-db-password
`

// commitFiles commits files at their paths in a new working tree.
func commitFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	r, err := git.PlainInitWithOptions(root, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wt, _ := r.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Test", Email: "test@example.com", When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if _, err := wt.Commit("as Git has it", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	return root
}

func headMessage(t *testing.T, root string) string {
	t.Helper()
	r, err := git.PlainOpen(root)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := r.Head()
	c, err := r.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c.Message
}

// TestBackportWritesACredentialOnlyWithAllowSensitive: a human rotates a
// database password that Git keeps in a plain env var. backport wrote the
// new password into Git, and into the commit message and the pull request
// text, with nothing to say it was a credential. Now the scan masks it, so
// backport carries the rest and names the password as not carried back;
// with --allow-sensitive it writes the value to the file, and still shows
// it nowhere else.
func TestBackportWritesACredentialOnlyWithAllowSensitive(t *testing.T) {
	ns := env.Namespace(t, nil)
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, apiDeployment))
	env.Patch(t, "kubectl-edit", cluster.Deployment, ns, "api", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"api:1.1","env":[{"name":"DB_PASSWORD","value":"live-db-password"}]}]}}}}`)
	root := commitFiles(t, map[string]string{"apps/api/deployment.yaml": apiDeployment})
	src := filepath.Join(root, "apps", "api")
	file := filepath.Join(src, "deployment.yaml")
	args := []string{"backport", "api", "--kubeconfig", env.Kubeconfig, "--path", src, "-n", ns, "--repo", root, "--reason", "INC-1"}

	res := runCLI(t, append(args, "--branch", "hotfix/one")...)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (the password is not carried back)\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	got, _ := os.ReadFile(file)
	if !strings.Contains(string(got), "image: api:1.1") || !strings.Contains(string(got), "git-db-password") {
		t.Errorf("without --allow-sensitive the file is:\n%s\nwant the new image and the old password", got)
	}
	if !strings.Contains(res.out, `env[name="DB_PASSWORD"].value, by kubectl-edit (human): the value looks like a credential`) || !strings.Contains(res.out, "--allow-sensitive") {
		t.Errorf("the output does not say why the password was not carried back:\n%s", res.out)
	}

	res = runCLI(t, append(args, "--branch", "hotfix/two", "--allow-sensitive")...)
	if res.code != 0 {
		t.Fatalf("--allow-sensitive: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	got, _ = os.ReadFile(file)
	if !strings.Contains(string(got), "value: live-db-password") {
		t.Errorf("with --allow-sensitive the file is:\n%s\nwant the live password", got)
	}
	msg := headMessage(t, root)
	for where, text := range map[string]string{"the commit message": msg, "the output": res.out, "stderr": res.err} {
		for _, v := range []string{"live-db-password", "git-db-password"} {
			if strings.Contains(text, v) {
				t.Errorf("%s shows %q:\n%s", where, v, text)
			}
		}
	}
	if !strings.Contains(msg, `env[name="DB_PASSWORD"].value`) {
		t.Errorf("the commit message does not list the password field:\n%s", msg)
	}
}
