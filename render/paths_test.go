package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
	"github.com/google/go-cmp/cmp"
)

// writeTree writes files (slash path to content) under root; a content
// starting with "-> " is a symlink to the rest.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNothingIsReadOutsideTheRoot renders sources that reach for a file
// outside the repository: through a chain of symlinks, a values file that
// climbs out, and a manifest that is a link out. Each is an error, and the
// file's content is in no manifest.
func TestNothingIsReadOutsideTheRoot(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\ndata: {token: pod-service-account-token}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	levels := strings.Count(secret, string(filepath.Separator)) + 8
	chain := "../" + strings.Repeat("a/b/", levels) + strings.Repeat("../", 2*levels) + strings.TrimPrefix(filepath.ToSlash(secret), "/")
	chart := map[string]string{
		"chart/Chart.yaml":          "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
		"chart/templates/leak.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak}\ndata: {token: {{ .Files.Get \"leak.txt\" | quote }}, v: {{ .Values.token | default \"\" | quote }}}\n",
	}
	tests := []struct {
		name  string
		files map[string]string
		dir   string
		helm  *config.HelmSource
		want  string
	}{
		{
			name:  "a chain of symlinks read by .Files.Get",
			files: merge(chart, map[string]string{"a/b": "-> ..", "chart/leak.txt": "-> " + chain}),
			dir:   "chart", want: "leak.txt",
		},
		{
			name:  "a values file that climbs out of the repository",
			files: chart,
			dir:   "chart", helm: &config.HelmSource{ValuesFiles: []string{"../../" + strings.Repeat("../", levels) + strings.TrimPrefix(secret, "/")}},
			want: "leaves the repository: refused",
		},
		{
			name:  "an absolute values file",
			files: chart,
			dir:   "chart", helm: &config.HelmSource{ValuesFiles: []string{secret}},
			want: "leaves the repository: refused",
		},
		{
			name:  "a values file that is a symlink out",
			files: merge(chart, map[string]string{"chart/values-prod.yaml": "-> " + secret}),
			dir:   "chart", helm: &config.HelmSource{ValuesFiles: []string{"values-prod.yaml"}},
			want: "values-prod.yaml",
		},
		{
			name:  "a plain manifest that is a symlink out",
			files: map[string]string{"apps/web/stolen.yaml": "-> " + secret},
			dir:   "apps/web", want: "stolen.yaml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			ms, err := Manifests(t.Context(), Options{Dir: filepath.Join(root, tt.dir), Root: root, Helm: tt.helm})
			for _, m := range ms {
				if strings.Contains(m.Object.GetName(), "stolen") || strings.Contains(strings.Join(values(m.Object.Object), " "), "pod-service-account-token") {
					t.Errorf("read from outside the root: %v", m.Object.Object)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// values lists the strings in an object.
func values(v any) []string {
	switch t := v.(type) {
	case map[string]any:
		var out []string
		for _, x := range t {
			out = append(out, values(x)...)
		}
		return out
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, values(x)...)
		}
		return out
	case string:
		return []string{t}
	}
	return nil
}

// TestSymlinksInsideTheRepositoryAreRead: a plain manifest may be a link to
// another file of the repository, in its own folder or outside it; each
// renders as the file it points at.
func TestSymlinksInsideTheRepositoryAreRead(t *testing.T) {
	root := t.TempDir()
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
	}
	writeTree(t, root, map[string]string{
		"shared/common.yaml":   cm("common"),
		"apps/web/own.yaml":    cm("own"),
		"apps/web/alias.yaml":  "-> own.yaml",
		"apps/web/common.yaml": "-> ../../shared/common.yaml",
	})
	ms, err := Manifests(t.Context(), Options{Dir: filepath.Join(root, "apps", "web"), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := []renderedObject{
		{File: "alias.yaml", Line: 1, ID: "v1 ConfigMap own"},
		{File: "common.yaml", Line: 1, ID: "v1 ConfigMap common"},
		{File: "own.yaml", Line: 1, ID: "v1 ConfigMap own"},
	}
	if diff := cmp.Diff(want, renderSummary(ms)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestAChartsLinksInsideTheRepositoryAreRead: a chart's file, a file read
// with .Files.Get and a whole folder of templates may be links to elsewhere
// in the repository (a chart reads its own folder through a root of its
// own, and a link out of it through the repository's); each renders as
// what it points at.
func TestAChartsLinksInsideTheRepositoryAreRead(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"shared/values.yaml":           "level: debug\n",
		"shared/banner.txt":            "hello from shared\n",
		"shared/templates/extra.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n",
		"charts/web/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":       "-> ../../shared/values.yaml",
		"charts/web/banner.txt":        "-> ../../shared/banner.txt",
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {level: {{ .Values.level | quote }}, banner: {{ .Files.Get \"banner.txt\" | quote }}}\n",
		"charts/web/templates/more":    "-> ../../../shared/templates",
	})
	ms, err := Manifests(t.Context(), Options{Dir: filepath.Join(root, "charts", "web"), Root: root, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, m := range ms {
		got[m.Object.GetName()] = m.Object.Object["data"]
	}
	want := map[string]any{"cm": map[string]any{"level": "debug", "banner": "hello from shared\n"}, "extra": nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestASourceFolderThatIsALinkIsReadThroughIt: an app's path may itself be
// a link to a folder of the repository (envs/prod -> ../base); its files
// render as that folder's. One to a folder outside the repository is an
// error naming the source folder, not an app of no objects. (Walked with
// filepath.WalkDir, which does not follow a link at its root, both once
// rendered nothing, without an error.)
func TestASourceFolderThatIsALinkIsReadThroughIt(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeTree(t, root, map[string]string{
		"base/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n",
		"base/sub/x.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"envs/prod":      "-> ../base",
		"envs/away":      "-> " + outside,
	})
	writeTree(t, outside, map[string]string{"stolen.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n"})
	ms, err := Manifests(t.Context(), Options{Dir: filepath.Join(root, "envs", "prod"), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := []renderedObject{
		{File: "cm.yaml", Line: 1, ID: "v1 ConfigMap cm"},
		{File: "sub/x.yml", Line: 1, ID: "v1 ConfigMap x"},
	}
	if diff := cmp.Diff(want, renderSummary(ms)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	away := filepath.Join(root, "envs", "away")
	ms, err = Manifests(t.Context(), Options{Dir: away, Root: root})
	if len(ms) > 0 || err == nil || !strings.Contains(err.Error(), "read "+away+":") {
		t.Fatalf("a source folder linked out of the repository: %d manifests, %v; want an error naming it", len(ms), err)
	}
}
