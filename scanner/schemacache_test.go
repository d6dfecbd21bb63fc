package scanner

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// TestTheSchemaCacheFollowsTheServersDocuments: a warm scan types objects
// with the schemas the last scan read, without fetching their OpenAPI
// documents again, and reports what a scan without the cache reports;
// once a CRD's schema changes (its list of tags becomes a map keyed by
// name), the next scan fetches the new document and types with it.
func TestTheSchemaCacheFollowsTheServersDocuments(t *testing.T) {
	dir := t.TempDir()
	crd := func(tagsList string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "crd.yaml"), []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: dials.schemas.example.com}
spec:
  group: schemas.example.com
  scope: Namespaced
  names: {plural: dials, singular: dial, kind: Dial, listKind: DialList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              tags:
                type: array
`+tagsList+`                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    value: {type: string}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		env.InstallCRDs(t, "platform", filepath.Join(dir, "crd.yaml"))
	}
	const docPath = "/openapi/v3/apis/schemas.example.com/v1"
	crd("")
	env.RefreshMapper()
	before := schemaURL(t, "apis/schemas.example.com/v1")

	ns := env.Namespace(t, nil)
	src := filepath.Join(t.TempDir(), "dial")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "apiVersion: schemas.example.com/v1\nkind: Dial\nmetadata: {name: d}\nspec:\n  tags: [{name: a, value: \"1\"}]\n"
	if err := os.WriteFile(filepath.Join(src, "dial.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	applyDir(t, src, ns)
	dial := schema.GroupVersionKind{Group: "schemas.example.com", Version: "v1", Kind: "Dial"}
	env.Patch(t, "kubectl-edit", dial, ns, "d", types.MergePatchType, `{"spec":{"tags":[{"name":"a","value":"1"},{"name":"b","value":"2"}]}}`)
	cfg := scanConfig(ns, config.App{Name: "dial", Source: config.Source{Path: src}})
	cache := t.TempDir()

	// scan scans with the cache and says which OpenAPI documents it fetched.
	scan := func() (*report.Report, []string) {
		t.Helper()
		var log bytes.Buffer
		r := cachedScan(t, cfg, cache, func(o *Options) {
			o.Logger = slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		var docs []string
		for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
			var e struct{ Msg, Path string }
			if json.Unmarshal([]byte(l), &e) == nil && e.Msg == "api request" && strings.HasPrefix(e.Path, "/openapi/v3/") {
				docs = append(docs, e.Path)
			}
		}
		return r, docs
	}
	tagPaths := func(r *report.Report) []string {
		var out []string
		for _, f := range rows(r) {
			if strings.HasPrefix(f.Path, ".spec.tags") {
				out = append(out, f.Path)
			}
		}
		return out
	}

	cold, docs := scan()
	if !contains(docs, docPath) {
		t.Fatalf("the first scan fetched %v, want the Dial's document among them", docs)
	}
	if got := tagPaths(cold); len(got) != 1 || got[0] != ".spec.tags" {
		t.Fatalf("with an atomic list of tags, findings at %v, want the whole list", got)
	}
	warm, docs := scan()
	if len(docs) != 0 {
		t.Errorf("the warm scan fetched %v, want no document: the schemas are cached", docs)
	}
	sameAsUncached(t, cfg, warm)

	crd("                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys: [name]\n")
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return schemaURL(t, "apis/schemas.example.com/v1") != before, nil
	})
	if err != nil {
		t.Fatalf("the API server never published the Dial's new schema (still %s)", before)
	}
	after, docs := scan()
	if !contains(docs, docPath) {
		t.Errorf("after the CRD changed the scan fetched %v, want the Dial's new document", docs)
	}
	if got := tagPaths(after); len(got) != 1 || got[0] == ".spec.tags" {
		t.Errorf("with tags a map keyed by name, findings at %v, want the added tag alone", got)
	}
	sameAsUncached(t, cfg, after)

	// The file holds one document per group/version the last scan typed.
	data, err := os.ReadFile(filepath.Join(cache, schemaFileName))
	if err != nil {
		t.Fatal(err)
	}
	var file schemaFile
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Docs) != 1 || file.Docs[schemaURL(t, "apis/schemas.example.com/v1")] == nil {
		t.Errorf("the cache keeps %d documents, want the Dial's current one alone", len(file.Docs))
	}
}

// TestABrokenSchemaCacheIsLoggedAndReplaced: a schema cache file that is no
// cache file is said in the log by its path, every document is fetched,
// the report is what a scan without the cache says, and a good file takes
// its place.
func TestABrokenSchemaCacheIsLoggedAndReplaced(t *testing.T) {
	ns := env.Namespace(t, nil)
	applyDir(t, fixture("apps", "web"), ns)
	cfg := scanConfig(ns, config.App{Name: "web", Source: config.Source{Path: fixture("apps", "web")}})
	cache := t.TempDir()
	cachedScan(t, cfg, cache)
	path := filepath.Join(cache, schemaFileName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, broken := range map[string][]byte{
		"cut off":  good[:len(good)/2],
		"not JSON": []byte("\x00garbage"),
		// A document's schemas that are no schemas: fetched again.
		"a document that is no schema map": bytes.Replace(good, []byte(`":{"`), []byte(`":["`), 1),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, broken, 0o600); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			r := cachedScan(t, cfg, cache, func(o *Options) {
				o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
			})
			sameAsUncached(t, cfg, r)
			if name != "a document that is no schema map" && !strings.Contains(log.String(), path) {
				t.Errorf("nothing in the log names %s:\n%s", path, log.String())
			}
			again, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var file schemaFile
			if err := json.Unmarshal(again, &file); err != nil || len(file.Docs) == 0 {
				t.Errorf("the scan left a schema cache of %d documents (%v), want a good one", len(file.Docs), err)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// schemaURL is the address of a group/version's OpenAPI v3 document (key:
// api/v1, apis/<group>/<version>), as the API server's index names it now.
func schemaURL(t *testing.T, key string) string {
	t.Helper()
	paths, err := env.Client.Discovery().OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := paths[key]
	if !ok {
		return ""
	}
	return p.ServerRelativeURL()
}
