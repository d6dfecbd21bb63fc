package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
)

// globChart is a chart whose ConfigMap says which values file won, with
// values files under envs/ (the same files in its repository, seen with
// Argo CD v3.5.7: e2e TestArgoCDGlobValueFilesScanClean).
var globChart = map[string]string{
	"web/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	"web/values.yaml":              "level: default\n",
	"web/templates/cm.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {level: {{ .Values.level | quote }}}\n",
	"web/envs/a.yaml":              "level: a\n",
	"web/envs/b.yaml":              "level: b\n",
	"web/envs/deep/c.yaml":         "level: c\n",
	"web/envs/notes.txt":           "not values\n",
	"web/envs/[literal].yaml.orig": "level: orig\n",
	"shared/team.yaml":             "level: shared\n",
}

// An Argo CD Application's valueFiles resolve as argocd-repo-server v3.5
// resolves them: a glob is the files it matches, in order, but for one the
// list names outright, which keeps its place; each file counts once, at its
// first place; a glob that matches nothing is an error unless missing files
// are ignored. A config app's values files stay as `helm template -f` reads
// them. The render cache gives what a fresh render gives.
func TestArgoValueFilesGlobsAndRepeats(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, globChart)
	dir := filepath.Join(root, "web")
	for _, tt := range []struct {
		name    string
		files   []string
		argo    bool
		ignore  bool
		want    string // the level the ConfigMap renders, or
		wantErr string // the error it fails with
	}{
		{"a glob is its matches in order: the last wins", []string{"envs/*.yaml"}, true, false, "b", ""},
		{"a file named before the glob keeps its place", []string{"envs/b.yaml", "envs/*.yaml"}, true, false, "a", ""},
		{"a file named after the glob keeps its place", []string{"envs/*.yaml", "envs/a.yaml"}, true, false, "a", ""},
		{"** reaches any depth", []string{"envs/**/*.yaml"}, true, false, "c", ""},
		{"a glob from the repository's root", []string{"../shared/*.yaml"}, true, false, "shared", ""},
		{"a file listed twice counts at its first place", []string{"envs/a.yaml", "envs/b.yaml", "envs/a.yaml"}, true, false, "b", ""},
		{"helm -f merges a file listed twice twice", []string{"envs/a.yaml", "envs/b.yaml", "envs/a.yaml"}, false, false, "a", ""},
		{"a glob that matches nothing", []string{"envs/*.json"}, true, false, "", "values file glob envs/*.json matched no files"},
		{"a glob that matches nothing, missing files ignored", []string{"envs/*.json"}, true, true, "default", ""},
		{"a config app's values file is a name, not a glob", []string{"envs/*.yaml"}, false, false, "", "values file envs/*.yaml"},
		{"a glob that leaves the repository", []string{"../../*.yaml"}, true, false, "", "leaves the repository"},
		{"a glob in a folder that does not exist, missing files ignored", []string{"nowhere/*.yaml"}, true, true, "default", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			helm := &config.HelmSource{ValuesFiles: tt.files, ArgoValueFiles: tt.argo, IgnoreMissingValuesFiles: tt.ignore}
			cache := filepath.Join(t.TempDir(), "cache")
			for _, run := range []string{"fresh", "from the render cache"} {
				ms, _, err := chartScan(t, Options{Dir: dir, Root: root, Helm: helm}, cache)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("%s: error %v, want one saying %q", run, err, tt.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", run, err)
				}
				level := ""
				for _, m := range ms {
					level, _, _ = unstructured.NestedString(m.Object.Object, "data", "level")
				}
				if level != tt.want {
					t.Errorf("%s: the values merged last set level %q, want %q", run, level, tt.want)
				}
			}
		})
	}
	if _, err := Manifests(context.Background(), Options{Dir: dir, Root: root, Helm: &config.HelmSource{ValuesFiles: []string{"envs/[.yaml"}, ArgoValueFiles: true}}); err == nil || !strings.Contains(err.Error(), "values file glob envs/[.yaml") {
		t.Errorf("a glob that does not parse: %v, want an error naming it", err)
	}
}

// A values file glob is the tenant's: two symbolic links to the folder
// above make ** grow without end (doublestar follows them, as Argo CD's
// FilepathGlob does, which goes on past every error); the glob stops at the
// first error, and after a bounded number of reads (run in a child under
// ulimit -v, with a deadline).
func TestAValuesFileGlobOverSymlinkLoopsIsBounded(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	root := t.TempDir()
	writeTree(t, root, globChart)
	// Outside the chart, which Helm's loader walks (and refuses loops in).
	if err := os.MkdirAll(filepath.Join(root, "shared", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := os.Symlink("..", filepath.Join(root, "shared", "deep", name)); err != nil {
			t.Fatal(err)
		}
	}
	helm := &config.HelmSource{ValuesFiles: []string{"../shared/**/*.yaml"}, ArgoValueFiles: true}
	_, err := Manifests(context.Background(), Options{Dir: filepath.Join(root, "web"), Root: root, Helm: helm})
	// The kernel's limit on links in a path stops the deepest first.
	if err == nil || !strings.Contains(err.Error(), "values file glob ../shared/**/*.yaml: ") || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Errorf("a glob over two symlink loops: %v, want it stopped", err)
	}
	// A tree too large for the budget stops as well.
	_, err = doublestar.Glob(&globFS{FS: os.DirFS(root), left: 5}, "web/**/*.yaml", doublestar.WithFailOnIOErrors())
	if !errors.Is(err, errGlobBudget) {
		t.Errorf("a glob over more than its budget: %v, want %v", err, errGlobBudget)
	}
}
