package scanner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// secretsApp writes an app that declares one small Secret and one ConfigMap
// in each of the namespaces nss, applies them as Argo CD would, and returns
// its folder.
func secretsApp(t *testing.T, nss []string) string {
	t.Helper()
	dir := t.TempDir()
	var docs []string
	for _, ns := range nss {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: tiny, namespace: %s}\nstringData: {token: tiny-%s}\n", ns, ns),
			fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tiny, namespace: %s}\ndata: {k: v}\n", ns))
	}
	if err := os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: abs})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", "", mf.Object)
	}
	return dir
}

// TestSecretsAreListedOnlyWhereAppsDeclareThem is the regression test of a
// scan that, for four small Secrets in four namespaces, listed every Secret
// in the cluster (its apps spanned more namespaces than ClusterWideAbove)
// and held them all. Secrets are now listed per namespace, only where an
// app declares one, and the Secrets of other tenants are never read, not
// even to look for --extra objects.
func TestSecretsAreListedOnlyWhereAppsDeclareThem(t *testing.T) {
	var nss []string
	for range 4 {
		ns := env.Namespace(t, nil)
		nss = append(nss, ns)
	}
	elsewhere := env.Namespace(t, nil)
	dir := secretsApp(t, nss)
	for i := range 3 {
		env.Create(t, "kubectl-create", elsewhere, cluster.Object(t, fmt.Sprintf(
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"other-%d","labels":{"app.kubernetes.io/instance":"tiny"}},"stringData":{"key":"another-tenants-secret"}}`, i)))
	}

	p, lists := recordLists(t, "/secrets")
	r := runScan(t, scanConfig(nss[0], config.App{Name: "tiny", Owner: "team", Source: config.Source{Path: dir}}), func(o *Options) {
		o.RESTConfig = p.config()
		o.Extra = true
	})

	var want []string
	for _, ns := range nss {
		want = append(want, "/api/v1/namespaces/"+ns+"/secrets")
	}
	if diff := cmp.Diff(want, lists()); diff != "" {
		t.Errorf("Secret LISTs (-want +got):\n%s", diff)
	}
	got := map[string]report.Status{}
	for _, o := range r.Apps[0].Objects {
		got[o.Ref()] = o.Status
	}
	for _, ns := range nss {
		for _, kind := range []string{"Secret", "ConfigMap"} {
			if s := got[kind+"/"+ns+"/tiny"]; s != report.StatusInSync {
				t.Errorf("%s/%s/tiny: %q, want InSync", kind, ns, s)
			}
		}
	}
	if len(got) != 8 || r.HasErrors() {
		t.Errorf("objects %v (errors %v), want the 8 declared: another tenant's Secrets are not read", got, r.HasErrors())
	}
}

// TestAPageKeepsOnlyDeclaredObjectsAndExtraIdentities: of a LIST page the
// scan decodes whole only the objects apps declare, and for --extra keeps
// only the identity of those that name an app; a typed list's items get
// their kind and apiVersion from the list, as the dynamic client gives them.
func TestAPageKeepsOnlyDeclaredObjectsAndExtraIdentities(t *testing.T) {
	item := func(name string, labels map[string]string) map[string]any {
		u := unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace("shop")
		u.SetName(name)
		u.SetLabels(labels)
		u.Object["data"] = map[string]any{"big": strings.Repeat("x", 1<<10)}
		return u.Object
	}
	page, err := json.Marshal(map[string]any{
		"kind": "SecretList", "apiVersion": "v1", "metadata": map[string]any{"continue": "next"},
		"items": []any{
			item("declared", nil),
			item("left-behind", map[string]string{"app.kubernetes.io/instance": "web"}),
			item("another-apps", map[string]string{"app.kubernetes.io/instance": "not-scanned"}),
			item("unrelated", nil),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []bool{false, true} {
		s := &scan{opts: Options{Extra: extra}, r: &report.Report{Apps: []report.App{{Name: "web"}}},
			tracking: []classify.Tracking{trackingOf(config.App{Name: "web"}, "")},
			declared: map[objectKey]int{{"", "Secret", "shop", "declared"}: 0}}
		var found []*unstructured.Unstructured
		var extras []extraObject
		cont, err := readPage(bytes.NewReader(page), schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, func(it *listItem) error {
			_, f, e, err := s.keep(it, extraOwners{byName: map[string]int{"web": 0}})
			if f != nil {
				found = append(found, f.live)
			}
			if e != nil {
				extras = append(extras, *e)
			}
			return err
		})
		if err != nil || cont != "next" {
			t.Fatalf("readPage = %q, %v; want the continue token", cont, err)
		}
		if len(found) != 1 || found[0].GetName() != "declared" || found[0].GetKind() != "Secret" || found[0].GetAPIVersion() != "v1" {
			t.Fatalf("extra %v: kept %v, want only the declared Secret, as a v1 Secret", extra, found)
		}
		if data, _, _ := unstructured.NestedString(found[0].Object, "data", "big"); len(data) != 1<<10 {
			t.Errorf("the declared Secret's data was not decoded whole: %d bytes", len(data))
		}
		var want []extraObject
		if extra {
			want = []extraObject{{app: 0, apiVersion: "v1", kind: "Secret", namespace: "shop", name: "left-behind"}}
		}
		if diff := cmp.Diff(want, extras, cmp.AllowUnexported(extraObject{})); diff != "" {
			t.Errorf("extra %v: extra objects (-want +got):\n%s", extra, diff)
		}
	}
}
