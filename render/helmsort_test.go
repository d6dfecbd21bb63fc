package render

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// sameAsSortManifests fails when helmSorted gives other manifests (name,
// content, head), in another order, or another error, than Helm's
// SortManifests gives of files.
func sameAsSortManifests(t *testing.T, what string, files map[string]string) {
	t.Helper()
	got, gotErr := helmSorted(files)
	_, want, wantErr := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%s: error %v, SortManifests' %v", what, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: -SortManifests +helmSorted:\n%s", what, cmp.Diff(want, got))
	}
}

// TestHelmSortedIsSortManifests: the render keeps of a chart's rendered
// files what Helm's SortManifests gives (its manifests that are not
// hooks, in install order, or its error), for every fixture file alone,
// all of them together, and the cases where reading a head takes care:
// hooks known and not, partials, empty files, kinds in and out of the
// install order, YAML 1.1 booleans, numbers and nulls in the head, keys
// that differ from a head field's only in case, and YAML Helm refuses.
func TestHelmSortedIsSortManifests(t *testing.T) {
	all := map[string]string{}
	err := filepath.WalkDir(filepath.Join("..", "fixtures"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files := map[string]string{p: string(data)}
		sameAsSortManifests(t, p, files)
		if _, err := helmSorted(files); err == nil {
			all[p] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 50 {
		t.Fatalf("only %d fixture files read without error", len(all))
	}
	sameAsSortManifests(t, "every fixture file", all)

	fast := 0
	for _, content := range all {
		for _, doc := range releaseutil.SplitManifests(content) {
			if _, ok := fastHead(doc); ok {
				fast++
			}
		}
	}
	if fast < 50 {
		t.Errorf("fastHead read only %d of the fixtures' documents", fast)
	}

	sameAsSortManifests(t, "shapes", map[string]string{
		"web/templates/_helpers.tpl": "{{- define \"x\" -}}\nkind: Pod\n{{- end }}\n",
		"web/templates/empty.yaml":   "\n  \n",
		"web/templates/hooks.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"5\"\n---\n" +
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: unknown-hook\n  annotations:\n    helm.sh/hook: sometime\n---\n" +
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: test\n  annotations:\n    helm.sh/hook: test\n",
		"web/templates/kinds.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n---\napiVersion: x/v1\nkind: Zebra\nmetadata:\n  name: z\n---\n" +
			"apiVersion: x/v1\nkind: Aardvark\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    a: b\n    c: 'd'\n    e: |\n      multi\n      line\n",
		"web/templates/yaml11.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: on\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flag\n  annotations:\n    flag: yes\n    count: \"3\"\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 1-web\n  annotations:\n    n: 3\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f\n  annotations:\n    f: 1.5\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: none\n  annotations:\n    none: ~\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: why\n  annotations: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n---\n" +
			"apiVersion: v1\nKind: Secret\nkind: ConfigMap\nmetadata:\n  Name: upper\n  name: lower\n---\n# only a comment\n---\nKIND: Deployment\n",
		"web/templates/z.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc2\n",
	})
	for i, bad := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
		"apiVersion: v1\nkind: [a]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    a: [1]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: text\n",
		"kind: ConfigMap\n\tmetadata: {}\n",
	} {
		sameAsSortManifests(t, "refused", map[string]string{"web/templates/a.yaml": "kind: Service\n", "web/templates/b.yaml": bad})
		if _, err := helmSorted(map[string]string{"b.yaml": bad}); err == nil && i < 2 {
			t.Errorf("helmSorted read %q, which Helm refuses", bad)
		}
	}
}

// FuzzFastHead: whatever head fastHead reads of a document, Helm's
// sigs.k8s.io/yaml reads the same.
func FuzzFastHead(f *testing.F) {
	fuzzSmall(f, []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    a: b\n    helm.sh/hook: test\n",
		"kind: Pod\nmetadata:\n  name: 'x'\n  labels:\n    a: b\nspec:\n  containers:\n  - name: c\n    image: \"i:1\"\n",
		"kind: on\nmetadata:\n  name: 07\n  annotations:\n    a: |\n      x\n",
		"apiVersion: v1\nmetadata: {}\n",
	}, func(t *testing.T, doc string) {
		got, ok := fastHead(doc)
		if !ok {
			return
		}
		var want releaseutil.SimpleHead
		if err := yaml.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("fastHead read %q, which sigs.k8s.io/yaml refuses: %v", doc, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: -sigs.k8s.io/yaml +fastHead:\n%s", doc, cmp.Diff(want, got))
		}
	})
}
