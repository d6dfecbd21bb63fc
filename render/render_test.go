package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// renderedObject is what render tests compare of a Manifest: where it came
// from and which object it is.
type renderedObject struct {
	File string
	Line int
	// ID reads "apps/v1 Deployment web/web" (namespace/name; generateName
	// ends in "-").
	ID string
}

func renderSummary(ms []Manifest) []renderedObject {
	out := make([]renderedObject, 0, len(ms))
	for _, m := range ms {
		h := m.Ident()
		name := h.Name
		if name == "" {
			name = h.GenerateName
		}
		if h.Namespace != "" {
			name = h.Namespace + "/" + name
		}
		out = append(out, renderedObject{File: m.File, Line: m.Line, ID: h.APIVersion + " " + h.Kind + " " + name})
	}
	return out
}

// renderErrors lists the errors joined in err, one per line of its text.
func renderErrors(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func renderFixture(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "fixtures", "render", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRenderPlainFolder(t *testing.T) {
	got, err := Manifests(context.Background(), Options{Dir: renderFixture(t, "plain")})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	want := []renderedObject{
		{File: "apps/list.yaml", Line: 4, ID: "v1 ConfigMap web/flags"},
		{File: "apps/list.yaml", Line: 11, ID: "v1 ServiceAccount web/web"},
		{File: "apps/web/config.json", Line: 1, ID: "v1 ConfigMap web/web-config"},
		{File: "apps/web/deploy.yaml", Line: 3, ID: "apps/v1 Deployment web/web"},
		{File: "apps/web/deploy.yaml", Line: 27, ID: "v1 Service web/web"},
		{File: "apps/web/job.yml", Line: 1, ID: "batch/v1 Job web/web-migrate-"},
		{File: "namespace.yaml", Line: 1, ID: "v1 Namespace web"},
	}
	if diff := cmp.Diff(want, renderSummary(got)); diff != "" {
		t.Errorf("rendered objects (-want +got):\n%s", diff)
	}
}

func TestRenderPlainValues(t *testing.T) {
	got, err := Manifests(context.Background(), Options{Dir: renderFixture(t, "plain")})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	byID := map[string]Manifest{}
	for _, m := range got {
		byID[m.Object.GetKind()+"/"+m.Object.GetName()] = m
	}
	tests := []struct {
		name   string
		object string
		path   []string
		want   any
	}{
		{"integers are int64 as unstructured objects need", "Deployment/web", []string{"spec", "replicas"}, int64(2)},
		{"nested lists keep their values", "Deployment/web", []string{"spec", "template", "spec", "containers"}, []any{map[string]any{
			"name": "web", "image": "nginx:1.25", "ports": []any{map[string]any{"containerPort": int64(80)}},
		}}},
		{"JSON files are read too", "ConfigMap/web-config", []string{"data", "WORKERS"}, "4"},
		{"List items keep their fields", "ConfigMap/flags", []string{"data", "beta"}, "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := byID[tt.object]
			if !ok {
				t.Fatalf("no %s rendered", tt.object)
			}
			var got any = m.Object.Object
			for _, key := range tt.path {
				got = got.(map[string]any)[key]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", tt.object, strings.Join(tt.path, "."), diff)
			}
		})
	}
}

func TestRenderBrokenFolderKeepsGoodObjects(t *testing.T) {
	got, err := Manifests(context.Background(), Options{Dir: renderFixture(t, "broken")})
	want := []renderedObject{
		{File: "good.yaml", Line: 1, ID: "v1 ConfigMap good"},
		{File: "malformed.yaml", Line: 1, ID: "v1 ConfigMap before-malformed"},
		{File: "malformed.yaml", Line: 13, ID: "v1 ConfigMap after-malformed"},
		{File: "noname.yaml", Line: 1, ID: "v1 ConfigMap named"},
	}
	if diff := cmp.Diff(want, renderSummary(got)); diff != "" {
		t.Errorf("rendered objects (-want +got):\n%s", diff)
	}
	wantErrs := []string{
		`broken.json:6: invalid character '}' looking for beginning of object key string`,
		// Stored in Git LFS: a scalar document, which reads as no object.
		`lfs.yaml:1: a Git LFS pointer, not the file: driftscan reads the repository's Git objects, not LFS storage, so its manifests are not compared`,
		`malformed.yaml:11: mapping values are not allowed in this context`,
		`nokind.yaml:1: object has apiVersion v1 but no kind`,
		`nokind.yaml:5: object has kind Service but no apiVersion`,
		`noname.yaml:7: object has kind Deployment but no metadata.name`,
	}
	if diff := cmp.Diff(wantErrs, renderErrors(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Errorf("errors.As(%v, *FileError) = false, want true", err)
	}
}

func TestRenderDocuments(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		data    string
		want    []renderedObject
		wantErr []string
	}{{
		name: "a marker with content on its line starts a document",
		file: "inline.yaml",
		data: "--- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n--- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n",
		want: []renderedObject{{"inline.yaml", 1, "v1 ConfigMap a"}, {"inline.yaml", 2, "v1 ConfigMap b"}},
	}, {
		name: "directives and comments stay with the document they precede",
		file: "directive.yaml",
		data: "%TAG !k8s! tag:kubernetes.io,2026:\n# header\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		want: []renderedObject{{"directive.yaml", 4, "v1 ConfigMap a"}},
	}, {
		name: "Windows line endings split documents too",
		file: "crlf.yaml",
		data: "apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\n---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: b\r\n",
		want: []renderedObject{{"crlf.yaml", 1, "v1 ConfigMap a"}, {"crlf.yaml", 6, "v1 ConfigMap b"}},
	}, {
		name: "a block scalar holding an indented marker stays one document",
		file: "script.yaml",
		data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  front-matter: |\n    ---\n    title: x\n",
		want: []renderedObject{{"script.yaml", 1, "v1 ConfigMap a"}},
	}, {
		name:    "a duplicate key is an error at its line",
		file:    "dup.yaml",
		data:    "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
		wantErr: []string{"dup.yaml:1: object has kind ConfigMap but no metadata.name", `dup.yaml:8: mapping key "name" already defined at line 7`},
	}, {
		name:    "a List item without kind is an error at the item",
		file:    "list.yaml",
		data:    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- metadata: {name: b}\n",
		want:    []renderedObject{{"list.yaml", 4, "v1 ConfigMap a"}},
		wantErr: []string{"list.yaml:7: object has no apiVersion and no kind"},
	}, {
		name: "JSON values one after another are documents",
		file: "stream.json",
		data: "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}}\n\n  {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",\n \"metadata\": {\"name\": \"b\"}}\n",
		want: []renderedObject{{"stream.json", 1, "v1 ConfigMap a"}, {"stream.json", 3, "v1 ConfigMap b"}},
	}, {
		name: "a file with only comments is no manifest",
		file: "comments.yaml",
		data: "# nothing here\n---\n# nor here\n",
	}, {
		name: "non-string keys become strings",
		file: "keys.yaml",
		data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  1: one\n",
		want: []renderedObject{{"keys.yaml", 1, "v1 ConfigMap a"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Manifests(context.Background(), Options{Dir: dir})
			if diff := cmp.Diff(tt.want, renderSummary(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErr, renderErrors(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderDetectsTheRenderer(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		// want are the kinds and names rendered, sorted.
		want []string
	}{{
		name: "a folder with Chart.yaml is a Helm chart",
		opts: Options{Dir: renderFixture(t, "helm/web"), Namespace: "shop"},
		want: []string{"ConfigMap web-cluster", "CustomResourceDefinition widgets.example.com", "Deployment web", "Service web"},
	}, {
		name: "a folder with kustomization.yaml is a kustomization",
		opts: Options{Dir: renderFixture(t, "kustomize/overlays/prod"), Root: renderFixture(t, ".")},
		want: []string{"Deployment prod-web", "Service prod-web"},
	}, {
		name: "a folder with neither is plain files",
		opts: Options{Dir: renderFixture(t, "kustomize/base")},
		want: []string{"Deployment web", "Service web"},
	}, {
		name: "Kustomize set explicitly wins over detection",
		opts: Options{Dir: renderFixture(t, "kustomize/base"), Kustomize: &config.KustomizeSource{}},
		want: []string{"Deployment web", "Service web"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Manifests(context.Background(), tt.opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.Object.GetKind()+" "+m.Object.GetName())
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rendered (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{{
		name: "a folder that does not exist",
		opts: Options{Dir: "/nonexistent/driftscan"},
		want: "read /nonexistent/driftscan: open /nonexistent/driftscan: no such file or directory",
	}, {
		name: "both Helm and Kustomize",
		opts: Options{Dir: "/tmp", Helm: &config.HelmSource{}, Kustomize: &config.KustomizeSource{}},
		want: "source has both helm and kustomize",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Manifests(context.Background(), tt.opts)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Manifests() error = %v, want %s", err, tt.want)
			}
			if len(ms) != 0 {
				t.Errorf("Manifests() returned %d manifests with the error, want none", len(ms))
			}
		})
	}
}
