package e2e

import (
	"fmt"
	"testing"
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
			createArgoManifest(t, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  source:
    repoURL: %s
    targetRevision: main
    path: site
    %s
  syncPolicy:
    automated: {prune: true}
`, tt.name, argo.Namespace, ns, repo.URL, tt.directory))
			waitArgoSynced(t, tt.name, "")
			checkClean(t, scan(t, "--from", "argocd", "--app", tt.name), tt.objects)
		})
	}
}
