package e2e

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Argo CD reads a directory source's own files only, unless recurse, and
// narrows them with include and exclude (its glob: '*' crosses folders)
// and the +argocd:skip-file-rendering marker. A folder with subfolders of
// other manifests is common; scanning them as desired state made every
// object there Missing. The real Argo CD syncs two Applications of one
// folder, with and without recurse and patterns; each scans clean, with
// exactly the objects Argo CD applied.
func TestArgoCDDirectorySourcesScanWhatArgoCDApplies(t *testing.T) {
	needArgo(t)
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: v}\n", name)
	}
	repo := gitServer.NewRepo(t, map[string]string{
		"site/a.yaml":          cm("a"),
		"site/b.yml":           cm("b"),
		"site/skip.yaml":       "# +argocd:skip-file-rendering\n" + cm("skip"),
		"site/sub/c.yaml":      cm("c"),
		"site/sub/deep/d.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}`,
		"site/sub/deep/e.yaml": cm("e"),
	})
	for _, tt := range []struct {
		name, directory string
		objects         int
	}{
		{"dir-default", "", 2}, // a, b
		{"dir-patterns", "directory: {recurse: true, include: '*.yaml', exclude: 'sub/deep/*'}", 2}, // a, c
		{"dir-recurse", "directory: {recurse: true}", 5},                                            // a, b, c, d, e
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, nil)
			createGitApp(t, tt.name, ns, repo.URL, "site", tt.directory)
			waitArgoSynced(t, tt.name, "")
			cms, err := env.Client.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			applied := 0
			for _, cm := range cms.Items {
				if cm.Name != "kube-root-ca.crt" {
					applied++
				}
			}
			if applied != tt.objects {
				t.Fatalf("Argo CD applied %d ConfigMaps, the case expects %d", applied, tt.objects)
			}
			checkClean(t, scan(t, "--from", "argocd", "--app", tt.name), tt.objects)
		})
	}
}
