package backport

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

// now is the clock of every backport in the tests.
var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// worktree commits the fixture folder at sub in a new Git working tree on
// branch main and returns the tree's root.
func worktree(t *testing.T, fixture, sub string) string {
	t.Helper()
	root := t.TempDir()
	r, err := git.PlainInitWithOptions(root, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range gitrepo.Files(t, fixture) {
		p := filepath.Join(root, filepath.FromSlash(sub), filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Test", Email: "test@example.com", When: now.Add(-time.Hour)}
	if _, err := wt.Commit("the app as Git has it", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	return root
}

// renderOf is how the scanner renders app.
func renderOf(app config.App) render.Options {
	return render.Options{Dir: app.Source.Path, Root: workTreeOf(app.Source.Path), Namespace: app.Namespace, Helm: app.Source.Helm, Kustomize: app.Source.Kustomize}
}

// workTreeOf is the Git work tree holding dir (see worktree), which a
// kustomize overlay reads its base from; dir itself outside one.
func workTreeOf(dir string) string {
	for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
	}
	return dir
}

// sync applies every object of app to its namespace as Argo CD would.
func sync(t *testing.T, app config.App) {
	t.Helper()
	manifests, err := render.Manifests(t.Context(), renderOf(app))
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", app.Namespace, mf.Object)
	}
}

// scanApp scans one app whose source is a local folder.
func scanApp(t *testing.T, app config.App) report.App {
	t.Helper()
	env.Need(t)
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Appliers: config.DefaultAppliers(), Apps: []config.App{app}}
	opts := scanner.DefaultOptions()
	opts.RESTConfig = env.Config
	r, err := scanner.Scan(t.Context(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Apps[0].Error != "" {
		t.Fatalf("scan: %s", r.Apps[0].Error)
	}
	return r.Apps[0]
}

// options are backport's options for app in the working tree at root.
func options(root string, app config.App, reason string) Options {
	opts := DefaultOptions()
	opts.Repo, opts.SourceDir = root, app.Source.Path
	opts.Namespace, opts.Helm, opts.Kustomize = app.Namespace, app.Source.Helm, app.Source.Kustomize
	opts.Reason = reason
	opts.Now = func() time.Time { return now }
	return opts
}

// unbackported lists the pipeline and human findings of a scan:
// Kind/name .path, without the test's namespace.
func unbackported(app report.App) []string {
	var out []string
	for _, o := range app.Objects {
		for _, f := range o.Findings {
			if Backported(f) {
				out = append(out, o.Kind+"/"+o.Name+" "+f.Path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// fields lists Kind/name .path of changes or skips.
func fields[T interface{ Field() string }](items []T, ns string) []string {
	var out []string
	for _, it := range items {
		out = append(out, strings.Replace(it.Field(), "/"+ns+"/", "/", 1))
	}
	slices.Sort(out)
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// committed checks the commit of a result: on its branch, checked out, one
// commit on the base holding exactly files, and a clean tree after it.
func committed(t *testing.T, root string, res *Result, files ...string) *object.Commit {
	t.Helper()
	r, err := git.PlainOpen(root)
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	if head.Name().Short() != res.Branch || head.Hash().String() != res.Commit {
		t.Fatalf("HEAD is %s at %s, want %s at %s", head.Name().Short(), head.Hash(), res.Branch, res.Commit)
	}
	c, err := r.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != res.Base {
		t.Errorf("parents %v, want the base %s", c.ParentHashes, res.Base)
	}
	parent, err := c.Parent(0)
	if err != nil {
		t.Fatal(err)
	}
	pt, _ := parent.Tree()
	ct, _ := c.Tree()
	changes, err := object.DiffTree(pt, ct)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range changes {
		name := ch.To.Name
		if name == "" {
			name = ch.From.Name
		}
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(files)
	if diff := cmp.Diff(files, got); diff != "" {
		t.Errorf("files of the commit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(files, res.Files); diff != "" {
		t.Errorf("Result.Files (-want +got):\n%s", diff)
	}
	wt, _ := r.Worktree()
	if st, err := wt.Status(); err != nil || !st.IsClean() {
		t.Errorf("the tree is not clean after the commit: %v %v", st, err)
	}
	if c.Message != res.Message {
		t.Errorf("commit message %q, want Result.Message", c.Message)
	}
	return c
}

// plainApp commits the plain fixture, syncs it into a new namespace and
// returns the app and the working tree's root.
func plainApp(t *testing.T) (config.App, string) {
	t.Helper()
	ns := env.Namespace(t, nil)
	root := worktree(t, "../fixtures/backport/plain", "apps/web")
	app := config.App{Name: "web", Namespace: ns, Source: config.Source{Path: filepath.Join(root, "apps", "web")}}
	sync(t, app)
	return app, root
}

func TestADirtyWorktreeIsRefusedAndUntouched(t *testing.T) {
	app, root := plainApp(t)
	env.Patch(t, "kubectl-set", cluster.Deployment, app.Namespace, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	scanned := scanApp(t, app)

	config := filepath.Join(app.Source.Path, "config.yaml")
	dirty := append(readFile(t, config), "# work in progress\n"...)
	if err := os.WriteFile(config, dirty, 0o644); err != nil {
		t.Fatal(err)
	}
	deployment := readFile(t, filepath.Join(app.Source.Path, "deployment.yaml"))
	r, _ := git.PlainOpen(root)
	before, _ := r.Head()

	res, err := Run(t.Context(), scanned, options(root, app, "INC-1"))
	if !errors.Is(err, ErrDirty) || res != nil || !strings.Contains(err.Error(), "apps/web/config.yaml") {
		t.Fatalf("Run = %v, %v; want ErrDirty naming apps/web/config.yaml", res, err)
	}
	if got := readFile(t, config); string(got) != string(dirty) {
		t.Errorf("the dirty file changed:\n%s", got)
	}
	if got := readFile(t, filepath.Join(app.Source.Path, "deployment.yaml")); string(got) != string(deployment) {
		t.Errorf("deployment.yaml changed:\n%s", got)
	}
	after, _ := r.Head()
	if after.Name() != before.Name() || after.Hash() != before.Hash() {
		t.Errorf("HEAD moved from %s to %s", before, after)
	}
	branches, _ := r.Branches()
	_ = branches.ForEach(func(ref *plumbing.Reference) error {
		if ref.Name().Short() != "main" {
			t.Errorf("branch %s was created", ref.Name().Short())
		}
		return nil
	})
}

func TestNothingToBackportTouchesNothing(t *testing.T) {
	app, root := plainApp(t)
	env.Scale(t, "kube-controller-manager", cluster.Deployment, app.Namespace, "web", 5) // operator drift only
	scanned := scanApp(t, app)
	res, err := Run(t.Context(), scanned, options(root, app, ""))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != "" || res.Branch != "" || len(res.Changes)+len(res.Skipped) != 0 {
		t.Errorf("result %+v, want nothing done", res)
	}
	r, _ := git.PlainOpen(root)
	head, _ := r.Head()
	if head.Name().Short() != "main" {
		t.Errorf("HEAD is %s", head.Name())
	}
}
