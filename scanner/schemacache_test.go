package scanner

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// TestTheSchemaCacheFollowsTheServersDocuments: a warm scan types objects
// with the schemas the last scan read, without fetching their OpenAPI
// documents again, and reports what a scan without the cache reports;
// once a CRD's schema changes (its list of tags becomes a map keyed by
// name), the next scan fetches the new document and types with it.
func TestTheSchemaCacheFollowsTheServersDocuments(t *testing.T) {
	crd := func(tagsList string) {
		t.Helper()
		installCRD(t, "schemas.example.com", "Dial", "dials", `              tags:
                type: array
`+tagsList+`                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    value: {type: string}
`)
	}
	const docPath = "/openapi/v3/apis/schemas.example.com/v1"
	crd("")
	env.RefreshMapper()
	before := schemaURL(t, "apis/schemas.example.com/v1")

	ns := env.Namespace(t, nil)
	src := appliedApp(t, ns, "dial", "apiVersion: schemas.example.com/v1\nkind: Dial\nmetadata: {name: d}\nspec:\n  tags: [{name: a, value: \"1\"}]\n")
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

// TestAKindIsTypedWithTheSchemasItNeedsAsWithAllOfThem: on the real API
// server's documents, a converter built from the schemas neededSchemas
// names for a few kinds types their objects exactly as one built from
// every schema of the documents does (same fields, lists keyed alike), and
// names far fewer schemas.
func TestAKindIsTypedWithTheSchemasItNeedsAsWithAllOfThem(t *testing.T) {
	env.Need(t)
	objects := map[schema.GroupVersionKind]string{
		{Version: "v1", Kind: "ConfigMap"}:                 `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a":"b"},"managedFields":[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]},"data":{"k":"v"}}`,
		{Version: "v1", Kind: "Service"}:                   `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80,"protocol":"TCP","targetPort":8080},{"port":443,"protocol":"TCP"}],"selector":{"app":"web"}}}`,
		{Group: "apps", Version: "v1", Kind: "Deployment"}: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"nginx","ports":[{"containerPort":80,"protocol":"TCP"}],"env":[{"name":"A","value":"1"}],"volumeMounts":[{"name":"v","mountPath":"/v"}]}],"volumes":[{"name":"v","configMap":{"name":"c"}}],"tolerations":[{"key":"k","operator":"Exists"}]}}}}`,
	}
	needed := newTyper(env.Client.Discovery().OpenAPIV3())
	var kinds []schema.GroupVersionKind
	for gvk := range objects {
		kinds = append(kinds, gvk)
	}
	if err := needed.load(kinds); err != nil {
		t.Fatal(err)
	}
	// All of the documents' schemas, as before neededSchemas.
	all := map[string]*spec.Schema{}
	total := 0
	for _, gv := range []schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}} {
		components, err := needed.fetch(gv)
		if err != nil {
			t.Fatal(err)
		}
		total += len(components)
		for name, raw := range components {
			s := &spec.Schema{}
			if err := json.Unmarshal(raw, s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			all[name] = s
		}
	}
	if len(needed.schemas) == 0 || len(needed.schemas) > total/2 {
		t.Errorf("%d schemas decoded of %d: want the kinds' own, far fewer", len(needed.schemas), total)
	}
	full, err := managedfields.NewTypeConverter(all, false)
	if err != nil {
		t.Fatal(err)
	}
	for gvk, text := range objects {
		var obj map[string]any
		if err := json.Unmarshal([]byte(text), &obj); err != nil {
			t.Fatal(err)
		}
		got, err := needed.toTyped(obj, gvk.GroupVersion())
		if err != nil {
			t.Fatalf("%s with the schemas it needs: %v", gvk.Kind, err)
		}
		want, err := full.ObjectToTyped(unstructuredOf(obj), typed.AllowDuplicates)
		if err != nil {
			t.Fatalf("%s with every schema: %v", gvk.Kind, err)
		}
		gotSet, err := got.ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		wantSet, err := want.ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		if !gotSet.Equals(wantSet) {
			t.Errorf("%s typed with the schemas it needs has fields\n%s\nwith every schema\n%s", gvk.Kind, gotSet, wantSet)
		}
	}
}

// TestNeededSchemasFallsBackToAll: a document neededSchemas cannot read by
// its text alone (a kind no schema names, a reference written with
// escapes, a reference-like text in a description) has all its schemas
// decoded, as is one whose reference is of another form; references are
// followed through any depth, and one to a schema
// the document lacks is left out.
func TestNeededSchemasFallsBackToAll(t *testing.T) {
	gv := schema.GroupVersion{Group: "g.example.com", Version: "v1"}
	kind := `"x-kubernetes-group-version-kind":[{"group":"g.example.com","version":"v1","kind":"Thing"}]`
	ref := func(name string) string { return `{"allOf":[{"$ref":"#/components/schemas/` + name + `"}]}` }
	docs := map[string]struct {
		components map[string]string
		want       []string
	}{
		"references followed": {map[string]string{
			"Thing":  `{"type":"object","properties":{"spec":` + ref("Spec") + `,"gone":` + ref("Missing") + `},` + kind + `}`,
			"Spec":   `{"type":"object","properties":{"deep":` + ref("Deep") + `}}`,
			"Deep":   `{"type":"string"}`,
			"Unused": `{"type":"string"}`,
		}, []string{"Deep", "Spec", "Thing"}},
		"a kind no schema names": {map[string]string{
			"Other": `{"type":"object",` + strings.Replace(kind, "Thing", "Other", 1) + `}`,
			"Spec":  `{"type":"string"}`,
		}, []string{"Other", "Spec"}},
		"an escaped reference": {map[string]string{
			"Thing": `{"properties":{"spec":{"$ref":"#\/components\/schemas\/Spec"}},` + kind + `}`,
			"Spec":  `{"type":"string"}`,
			"Else":  `{"type":"string"}`,
		}, []string{"Else", "Spec", "Thing"}},
		"a reference of another form": {map[string]string{
			"Thing": `{"properties":{"spec":{"$ref":"#/definitions/Spec"}},` + kind + `}`,
			"Spec":  `{"type":"string"}`,
			"Else":  `{"type":"string"}`,
		}, []string{"Else", "Spec", "Thing"}},
		"a reference in a description": {map[string]string{
			"Thing": `{"description":"see \"#/components/schemas/Spec\"",` + kind + `}`,
			"Spec":  `{"type":"string"}`,
			"Else":  `{"type":"string"}`,
		}, []string{"Else", "Spec", "Thing"}},
	}
	for name, doc := range docs {
		components := map[string]json.RawMessage{}
		for n, text := range doc.components {
			if !json.Valid([]byte(text)) {
				t.Fatalf("%s: %s is no JSON", name, n)
			}
			components[n] = json.RawMessage(text)
		}
		if got := neededSchemas(components, gv, []string{"Thing"}); !slices.Equal(got, doc.want) {
			t.Errorf("%s: %v, want %v", name, got, doc.want)
		}
	}
}

// installCRD installs (or changes) through env.InstallCRDs the namespaced
// CRD of kind in group, version v1, whose spec has the properties given
// (YAML, indented for spec.properties).
func installCRD(t *testing.T, group, kind, plural, specProperties string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: `+plural+`.`+group+`}
spec:
  group: `+group+`
  scope: Namespaced
  names: {plural: `+plural+`, singular: `+strings.ToLower(kind)+`, kind: `+kind+`, listKind: `+kind+`List}
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
`+specProperties), 0o644); err != nil {
		t.Fatal(err)
	}
	env.InstallCRDs(t, "platform", path)
}

// appliedApp writes an app folder named name holding the one manifest
// given, applies it into ns as the GitOps applier, and returns the folder.
func appliedApp(t *testing.T, ns, name, manifest string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, name+".yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	applyDir(t, src, ns)
	return src
}
