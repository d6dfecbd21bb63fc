package scanner

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// configMapLists scans an app with one ConfigMap (and one Secret) in each
// of nss and returns the paths of the ConfigMap LISTs it sent.
func configMapLists(t *testing.T, nss []string) []string {
	t.Helper()
	dir := secretsApp(t, nss)
	p, lists := recordLists(t, "/configmaps")
	r := runScan(t, scanConfig(nss[0], config.App{Name: "tiny", Owner: "team", Source: config.Source{Path: dir}}), func(o *Options) {
		o.RESTConfig = p.config()
	})
	for _, o := range r.Apps[0].Objects {
		if o.Status != report.StatusInSync {
			t.Errorf("%s: %s %s, want InSync", o.Ref(), o.Status, o.Error)
		}
	}
	return slices.Compact(lists())
}

// recordLists is a proxy to the test API server that records the path of
// every GET whose path ends in suffix; lists returns them sorted.
func recordLists(t *testing.T, suffix string) (p *faultProxy, lists func() []string) {
	p = newFaultProxy(t)
	var (
		mu   sync.Mutex
		seen []string
	)
	p.fault = func(_ int64, r *http.Request, _ http.ResponseWriter) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, suffix) {
			mu.Lock()
			seen = append(seen, r.URL.Path)
			mu.Unlock()
		}
		return false
	}
	return p, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(seen))
	}
}

func namespaceCount(t *testing.T) int {
	t.Helper()
	l, err := env.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// TestAFewNamespacesOfManyAreListedOneByOne: a shard of a sharded Job (or
// any scan) whose apps are in a few namespaces of many lists each of them,
// not every namespace: a cluster-wide LIST would make the API server
// serialize every other tenant's objects for it. Four namespaces is above
// ClusterWideAbove (3) but well under half of the cluster's.
func TestAFewNamespacesOfManyAreListedOneByOne(t *testing.T) {
	env.Need(t)
	var nss []string
	for range 4 {
		nss = append(nss, env.Namespace(t, nil))
	}
	for namespaceCount(t) <= 2*len(nss) {
		env.Namespace(t, nil)
	}
	var want []string
	for _, ns := range nss {
		want = append(want, "/api/v1/namespaces/"+ns+"/configmaps")
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, configMapLists(t, nss)); diff != "" {
		t.Errorf("ConfigMap LISTs (-want +got):\n%s", diff)
	}
}

// TestMostNamespacesAreListedClusterWide: apps that cover more than half of
// the cluster's namespaces are read with one cluster-wide LIST per kind, as
// before: one request instead of one per namespace, for little the API
// server would not serialize anyway.
func TestMostNamespacesAreListedClusterWide(t *testing.T) {
	env.Need(t)
	var nss []string
	for n := namespaceCount(t); len(nss) <= n; {
		nss = append(nss, env.Namespace(t, nil))
	}
	if diff := cmp.Diff([]string{"/api/v1/configmaps"}, configMapLists(t, nss)); diff != "" {
		t.Errorf("ConfigMap LISTs (-want +got):\n%s", diff)
	}
}
