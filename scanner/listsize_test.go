package scanner

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

func TestListPageSizeFollowsTheServerVersion(t *testing.T) {
	for version, want := range map[string]int64{
		"v1.37.2":                  0,
		"v1.34.0":                  0,
		"v1.34.1-eks-2a1f3e7":      0,
		"v1.35.3-gke.1234000":      0,
		"v1.40.0+k3s1":             0,
		"v1.33.9":                  pagedPageSize,
		"v1.31.14-eks-b8ab8ad":     pagedPageSize,
		"v1.28.2+k3s1":             pagedPageSize,
		"":                         pagedPageSize,
		"not a version":            pagedPageSize,
		"v1":                       pagedPageSize,
		"v2.0.0-alpha.0.1+abcdef0": 0,
	} {
		if got := listPageSize(version); got != want {
			t.Errorf("listPageSize(%q) = %d, want %d", version, got, want)
		}
	}
}

// TestListsAreWholeWhereTheWatchCacheServesThem: against an API server
// that serves a LIST without a limit from its watch cache (v1.34 on, the
// test's v1.37), the scan lists each kind in one request, Secrets too;
// against an older one (the proxy answers /version as v1.33 would) it
// pages as kubectl does (Secrets by 50), and so it does when told a page
// size. The objects, and what the scan finds of them, are the same every
// way.
func TestListsAreWholeWhereTheWatchCacheServesThem(t *testing.T) {
	ns := env.Namespace(t, nil)
	const configMaps, secrets = 7, 2
	dir := t.TempDir()
	var docs []string
	for i := range configMaps {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: %s}\ndata: {k: v%d}\n", i, ns, i))
	}
	for i := range secrets {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s-%d, namespace: %s}\nstringData: {k: v%d}\n", i, ns, i))
	}
	const objects = configMaps + secrets
	if err := os.WriteFile(filepath.Join(dir, "cms.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	applyDir(t, dir, ns)
	cfg := scanConfig(ns, config.App{Name: "cms", Owner: "team", Source: config.Source{Path: dir}})

	for _, tc := range []struct {
		name     string
		version  string // what /version says; "" is the server's own
		pageSize int64
		want     map[string][]string // each resource's LISTs, their parameters
	}{
		{name: "v1.37, whole", want: map[string][]string{"configmaps": {""}, "secrets": {""}}},
		{name: "v1.33, pages", version: "v1.33.4", want: map[string][]string{"configmaps": {"limit=500"}, "secrets": {"limit=50"}}},
		{name: "told a page size", pageSize: 3, want: map[string][]string{"configmaps": {"limit=3", "continue,limit=3", "continue,limit=3"}, "secrets": {"limit=3"}}},
		{name: "v1.33, told to list whole", version: "v1.33.4", pageSize: -1, want: map[string][]string{"configmaps": {""}, "secrets": {""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFaultProxy(t)
			var (
				mu    sync.Mutex
				lists = map[string][]string{}
			)
			p.fault = func(_ int64, r *http.Request, w http.ResponseWriter) bool {
				if r.URL.Path == "/version" && tc.version != "" {
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(map[string]string{"major": "1", "minor": strings.Split(tc.version, ".")[1], "gitVersion": tc.version, "platform": "linux/amd64"})
					return true
				}
				resource, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/"+ns+"/")
				if r.Method == http.MethodGet && ok && (resource == "configmaps" || resource == "secrets") {
					var params []string
					for k := range r.URL.Query() {
						if k == "limit" {
							k += "=" + r.URL.Query().Get(k)
						}
						params = append(params, k)
					}
					mu.Lock()
					lists[resource] = append(lists[resource], strings.Join(slices.Sorted(slices.Values(params)), ","))
					mu.Unlock()
				}
				return false
			}
			r := runScan(t, cfg, func(o *Options) {
				o.RESTConfig = p.config()
				o.PageSize = tc.pageSize
			})
			mu.Lock()
			got := lists
			mu.Unlock()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the LISTs' parameters (-want +got):\n%s", diff)
			}
			if len(r.Apps) != 1 || len(r.Apps[0].Objects) != objects || r.HasErrors() {
				t.Fatalf("report: %d apps, errors %v", len(r.Apps), r.HasErrors())
			}
			for _, o := range r.Apps[0].Objects {
				if o.Status != report.StatusInSync {
					t.Errorf("%s: %s, want InSync", o.Ref(), o.Status)
				}
			}
		})
	}
}
