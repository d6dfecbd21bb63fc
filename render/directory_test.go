package render

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
)

// TestADirectorySourceReadsWhatArgoCDReads: an Argo CD directory source
// reads the folder's own files unless recurse, narrowed by include and
// exclude with Argo CD's glob, and never a file marked
// +argocd:skip-file-rendering (checked against the real Argo CD by e2e
// TestArgoCDDirectorySourcesScanWhatArgoCDApplies).
func TestADirectorySourceReadsWhatArgoCDReads(t *testing.T) {
	dir := t.TempDir()
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
	}
	writeTree(t, dir, map[string]string{
		"a.yaml":          cm("a"),
		"b.yml":           cm("b"),
		"skip.yaml":       "# +argocd:skip-file-rendering\n" + cm("skip"),
		"sub/c.yaml":      cm("c"),
		"sub/deep/d.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}`,
		"sub/deep/e.yaml": cm("e"),
	})
	tests := []struct {
		name string
		d    *config.DirectorySource
		want []string
	}{
		{"every file below, without a directory source", nil, []string{"a", "b", "skip", "c", "d", "e"}},
		{"Argo CD's default: the folder's own files", &config.DirectorySource{}, []string{"a", "b"}},
		{"recurse", &config.DirectorySource{Recurse: true}, []string{"a", "b", "c", "d", "e"}},
		{"include crosses folders, exclude a subtree", &config.DirectorySource{Recurse: true, Include: "*.yaml", Exclude: "sub/deep/*"}, []string{"a", "c"}},
		{"either of a brace", &config.DirectorySource{Recurse: true, Include: "{b.yml,sub/deep/*}"}, []string{"b", "d", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Manifests(context.Background(), Options{Dir: dir, Directory: tt.d})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.Ident().Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("objects read (-want +got):\n%s", diff)
			}
		})
	}
}
