package scanner

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// secretsApp writes an app that declares one small Secret and one ConfigMap
// in each of the namespaces nss, and returns its folder.
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
	abs, _ := filepath.Abs(dir)
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: abs})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", "", mf.Object)
	}
	for i := range 3 {
		env.Create(t, "kubectl-create", elsewhere, cluster.Object(t, fmt.Sprintf(
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"other-%d","labels":{"app.kubernetes.io/instance":"tiny"}},"stringData":{"key":"another-tenants-secret"}}`, i)))
	}

	p := newFaultProxy(t)
	var (
		mu    sync.Mutex
		lists []string
	)
	p.fault = func(_ int64, r *http.Request, _ http.ResponseWriter) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/secrets") {
			mu.Lock()
			lists = append(lists, r.URL.Path)
			mu.Unlock()
		}
		return false
	}
	r := runScan(t, scanConfig(nss[0], config.App{Name: "tiny", Owner: "team", Source: config.Source{Path: dir}}), func(o *Options) {
		o.RESTConfig = p.config()
		o.Extra = true
	})

	var want []string
	for _, ns := range nss {
		want = append(want, "/api/v1/namespaces/"+ns+"/secrets")
	}
	slices.Sort(lists)
	if diff := cmp.Diff(want, lists); diff != "" {
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
// scan keeps the objects apps declare, and for --extra only the identity of
// those that name an app; the rest of the page is not referenced any more.
func TestAPageKeepsOnlyDeclaredObjectsAndExtraIdentities(t *testing.T) {
	obj := func(name string, labels map[string]string) unstructured.Unstructured {
		u := unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Secret")
		u.SetNamespace("shop")
		u.SetName(name)
		u.SetLabels(labels)
		u.Object["data"] = map[string]any{"big": strings.Repeat("x", 1<<10)}
		return u
	}
	page := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{
		obj("declared", nil),
		obj("left-behind", map[string]string{"app.kubernetes.io/instance": "web"}),
		obj("another-apps", map[string]string{"app.kubernetes.io/instance": "not-scanned"}),
		obj("unrelated", nil),
	}}
	for _, extra := range []bool{false, true} {
		s := &scan{opts: Options{Extra: extra}, r: &report.Report{Apps: []report.App{{Name: "web"}}},
			declared: map[objectKey]string{{"", "Secret", "shop", "declared"}: "web"}}
		st := &liveState{objects: map[objectKey]*unstructured.Unstructured{}}
		s.keep(st, page, map[string]int{"web": 0})
		if len(st.objects) != 1 || st.objects[objectKey{"", "Secret", "shop", "declared"}] == nil {
			t.Errorf("extra %v: kept %v, want only the declared Secret", extra, st.objects)
		}
		if kept := st.objects[objectKey{"", "Secret", "shop", "declared"}]; kept == &page.Items[0] {
			t.Errorf("the kept object points into the page, which keeps every other object of it alive")
		}
		var want []extraObject
		if extra {
			want = []extraObject{{app: 0, apiVersion: "v1", kind: "Secret", namespace: "shop", name: "left-behind"}}
		}
		if diff := cmp.Diff(want, st.extra, cmp.AllowUnexported(extraObject{})); diff != "" {
			t.Errorf("extra %v: extra objects (-want +got):\n%s", extra, diff)
		}
	}
}
