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

// An Argo CD directory source leaves out a file that does not parse and
// does not look like a manifest (apiVersion:, kind: and metadata:, none of
// its objects parsed): Argo CD takes it for an unrelated file. One that
// looks like a manifest is an error, there as here (e2e
// TestArgoCDComparisonErrorSyncsNothing); so is any file that does not
// parse in a folder of a config app, which is no directory source.
func TestADirectorySourceLeavesOutUnrelatedFilesThatDoNotParse(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"a.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"notes.yaml": "todo: [rotate the certs\n",
	})
	ms, err := Manifests(context.Background(), Options{Dir: dir, Directory: &config.DirectorySource{}})
	if err != nil || len(ms) != 1 {
		t.Fatalf("an unrelated file that does not parse: %d objects, %v; want a alone", len(ms), err)
	}
	if _, err := Manifests(context.Background(), Options{Dir: dir}); err == nil {
		t.Errorf("a config app's folder: no error for notes.yaml")
	}
	writeTree(t, dir, map[string]string{"bad.yaml": "apiVersion: v1\nkind: [ConfigMap\nmetadata: {name: bad}\n"})
	if _, err := Manifests(context.Background(), Options{Dir: dir, Directory: &config.DirectorySource{}}); err == nil {
		t.Errorf("a manifest that does not parse: no error")
	}
}
