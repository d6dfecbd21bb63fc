package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/fixtures/golden"
)

// webWorktree commits fixtures/apps/web at apps/web in a new Git working
// tree and returns its root.
func webWorktree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	r, err := git.PlainInitWithOptions(root, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range gitrepo.Files(t, "../../fixtures/apps/web") {
		p := filepath.Join(root, "apps", "web", filepath.FromSlash(name))
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
	if _, err := wt.Commit("web as Git has it", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestBackportCommitsTheHotfixAndPrintsAPullRequest(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t) // a pipeline set the image, a human edited the ConfigMap
	root := webWorktree(t)
	src := filepath.Join(root, "apps", "web")
	res := runCLI(t, "backport", "web", "--kubeconfig", env.Kubeconfig, "--path", src, "-n", ns,
		"--repo", root, "--branch", "hotfix/inc-4211", "--reason", "INC-4211 payment certs", "-o", "markdown")
	if res.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	r, err := git.PlainOpen(root)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := r.Head()
	if head.Name().Short() != "hotfix/inc-4211" {
		t.Errorf("HEAD is %s", head.Name())
	}
	out := strings.ReplaceAll(res.out, ns, "NAMESPACE")
	out = strings.ReplaceAll(out, head.Hash().String()[:12], "COMMIT")
	golden.Check(t, "backport.markdown.golden", []byte(out))

	// The new commit is what Git declares now: no pipeline or human drift.
	scan := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--path", src, "-n", ns, "-o", "json", "--fail-on", "pipeline,human")
	if scan.code != 0 {
		t.Errorf("scan of the new commit: exit %d\n%s%s", scan.code, scan.out, scan.err)
	}
}

func TestBackportRefusesADirtyTreeAndNeverWritesSecrets(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	password := base64.StdEncoding.EncodeToString([]byte("rotated-at-3am"))
	env.Patch(t, "kubectl-edit", cluster.Secret, ns, "web-db", types.MergePatchType, `{"data":{"password":"`+password+`"}}`)
	root := webWorktree(t)
	src := filepath.Join(root, "apps", "web")
	args := []string{"backport", "web", "--kubeconfig", env.Kubeconfig, "--path", src, "-n", ns, "--repo", root}

	config := filepath.Join(src, "configmap.yaml")
	clean, _ := os.ReadFile(config)
	dirty := append(bytes.Clone(clean), "# wip\n"...)
	if err := os.WriteFile(config, dirty, 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, args...)
	if res.code != 2 || !strings.Contains(res.err, "uncommitted changes") || !strings.Contains(res.err, "apps/web/configmap.yaml") || res.out != "" {
		t.Errorf("dirty tree: exit %d\nstdout %q\nstderr %q", res.code, res.out, res.err)
	}
	if got, _ := os.ReadFile(config); !bytes.Equal(got, dirty) {
		t.Errorf("the dirty file was touched:\n%s", got)
	}

	if err := os.WriteFile(config, clean, 0o644); err != nil {
		t.Fatal(err)
	}
	res = runCLI(t, args...)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (the Secret stays drift)\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	for _, want := range []string{"carried back to Git (2):", "not carried back (1):", "Secret/" + ns + "/web-db .data.password, by kubectl-edit (human): Secret data is masked"} {
		if !strings.Contains(res.out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.out)
		}
	}
	if !regexp.MustCompile(`branch  hotfix/web-\d{8}T\d{6}Z\n`).MatchString(res.out) {
		t.Errorf("no default branch in:\n%s", res.out)
	}
	secret, _ := os.ReadFile(filepath.Join(src, "secret.yaml"))
	if strings.Contains(string(secret), password) || strings.Contains(string(secret), "rotated") || strings.Contains(string(secret), "***") {
		t.Errorf("secret.yaml holds the live value:\n%s", secret)
	}
}

func TestBackportBadInvocationsSayWhatIsWrong(t *testing.T) {
	env.Need(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "scan.yaml")
	if err := os.WriteFile(config, []byte("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\napps:\n- name: web\n  source: {path: .}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"backport", "web", "--kubeconfig", env.Kubeconfig, "--path", dir}, "--repo PATH is required"},
		{[]string{"backport", "web", "--kubeconfig", env.Kubeconfig, "--repo", dir}, "give --config FILE or --path DIR"},
		{[]string{"backport", "web", "--kubeconfig", env.Kubeconfig, "--repo", dir, "--path", dir, "--config", config}, "cannot be used together"},
		{[]string{"backport", "shop", "--kubeconfig", env.Kubeconfig, "--repo", dir, "--config", config}, "app shop: not in the config"},
		{[]string{"backport", "web", "--kubeconfig", env.Kubeconfig, "--repo", dir, "--path", dir, "-o", "json"}, `--output "json": want text or markdown`},
		{[]string{"backport", "--kubeconfig", env.Kubeconfig, "--repo", dir, "--path", dir}, "name the app: backport APP, or --app APP"},
		{[]string{"backport", "web", "--app", "shop", "--kubeconfig", env.Kubeconfig, "--repo", dir, "--path", dir}, `APP "web" and --app "shop" disagree`},
	}
	for _, c := range cases {
		res := runCLI(t, c.args...)
		if res.code != 2 || !strings.Contains(res.err, c.want) || res.out != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit 2 and %q", c.args, res.code, res.out, res.err, c.want)
		}
	}
}
