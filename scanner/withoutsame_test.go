package scanner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/fixtures/cluster"
)

// withoutSameApp is Git's side of TestWithoutSameFindsWhatTheWholeCompareFinds:
// a Deployment (an atomic selector, keyed lists of containers, ports and
// env), a Service (a keyed list of ports, a map selector) and a custom
// resource whose spec the schema leaves open.
const withoutSameApp = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front}
  annotations: {example.com/owner: "x"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {a: "1"}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        args: [serve, --port, "8080"]
        ports: [{containerPort: 8080, name: http}]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        resources: {requests: {cpu: "0.1", memory: 64Mi}, limits: {memory: 128Mi}}
      - name: side
        image: busybox:1.37
        command: [sleep, "3600"]
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {app: web, tier: front}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: metrics, port: 9090, targetPort: 9090}
---
` + openWidget

// openWidget is a custom resource whose spec its CRD leaves open: it is
// typed by deduction.
const openWidget = `apiVersion: example.com/v1
kind: Widget
metadata:
  name: web
spec:
  size: 3
  config: {a: "x", nested: {b: "y", c: [1, 2]}}
`

// TestWithoutSameFindsWhatTheWholeCompareFinds holds structured-merge-
// diff's compare of what withoutSame leaves of two objects (all but what
// both hold as one value), which diff falls back to where walkCompare
// gives up, to its compare of the whole objects, with the server's
// schemas: for objects the
// API server applied and returned, and for thousands of edits of either
// side (values changed, keys added and removed, list items added, removed
// and reordered), the changes are the same, value for value and pointer
// for pointer, and so is whether the compare fails.
func TestWithoutSameFindsWhatTheWholeCompareFinds(t *testing.T) {
	typer, objects := applyApp(t, withoutSameApp)
	compared := 0
	for _, o := range objects {
		gvk, git, live := o.gvk, o.git, o.live
		for seed := range uint64(400) {
			g, l := runtime.DeepCopyJSONValue(git).(map[string]any), runtime.DeepCopyJSONValue(live).(map[string]any)
			r := rand.New(rand.NewPCG(seed, uint64(len(gvk.Kind))))
			if seed > 0 {
				for range 1 + r.IntN(4) {
					if r.IntN(4) == 0 {
						edit(r, g)
					} else {
						edit(r, l)
					}
				}
			}
			name := fmt.Sprintf("%s seed %d", gvk.Kind, seed)
			// structured-merge-diff's compare, which diff falls back to
			// where walkCompare gives up, of what withoutSame leaves and
			// of the whole objects.
			smdChanges := func(tg, tl map[string]any) ([]change, error) {
				cmp, err := smdCompare(typer, gvk, l, tg, tl)
				if err != nil {
					return nil, err
				}
				return changesOf(cmp, g, l), nil
			}
			rg, rl, _, _ := withoutSame(g, l, true)
			got, gotErr := smdChanges(rg, rl)
			want, wantErr := smdChanges(g, l)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%s: compare without the same members failed with %v, the whole compare with %v\ngit %v\nlive %v", name, gotErr, wantErr, g, l)
			}
			// The changes come in no order; a report sorts its findings.
			sortChanges(got)
			sortChanges(want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: compare without the same members found\n%+v\nthe whole compare\n%+v\ngit %v\nlive %v", name, got, want, g, l)
			}
			if _, _, changed, _ := withoutSame(g, l, true); changed && wantErr == nil && len(want) > 0 {
				compared++
			}
		}
	}
	// Most edits must leave a compare that finds changes in objects of
	// which some members were left out.
	if compared < 400 {
		t.Fatalf("%d of 1,200 pairs compared with changes found and members left out: the test no longer tests", compared)
	}
}

// appliedObject is one object of applyApp's: its kind, and Git's and the
// live object, normalized.
type appliedObject struct {
	gvk       schema.GroupVersionKind
	git, live map[string]any
}

// applyApp applies app, YAML documents of objects that share one name, in
// a namespace of the test's own (with the CRDs of the Widget and Route
// custom resources installed), and returns a typer with the server's
// schemas of their kinds and each object as Git declares it and as the
// API server returned it, in the documents' order.
func applyApp(t *testing.T, app string) (*typer, []appliedObject) {
	t.Helper()
	env.InstallCRDs(t, "argocd-controller", fixture("render", "helm", "web", "crds"))
	env.InstallCRDs(t, "argocd-controller", fixture("crds", "routes.example.com.yaml"))
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(app), 0o644); err != nil {
		t.Fatal(err)
	}
	applyDir(t, dir, ns)
	var docs []*unstructured.Unstructured
	var kinds []schema.GroupVersionKind
	for _, text := range strings.Split(app, "\n---\n") {
		doc := cluster.Object(t, text)
		doc.SetNamespace(ns)
		docs = append(docs, doc)
		kinds = append(kinds, doc.GroupVersionKind())
	}
	typer := newTyper(env.Client.Discovery().OpenAPIV3())
	if err := typer.load(kinds); err != nil {
		t.Fatal(err)
	}
	var out []appliedObject
	for _, doc := range docs {
		gvk := doc.GroupVersionKind()
		out = append(out, appliedObject{gvk: gvk, git: normalize(doc), live: normalize(env.Get(t, gvk, ns, doc.GetName()))})
	}
	return typer, out
}

// sortChanges orders changes by their paths.
func sortChanges(changes []change) {
	slices.SortFunc(changes, func(a, b change) int { return a.Path.Compare(b.Path) })
}

// edit makes one random change somewhere in v: a value changed, a key
// added or removed, or a list item added, removed or moved.
func edit(r *rand.Rand, v map[string]any) {
	var cur any = v
	for depth := 0; ; depth++ {
		switch c := cur.(type) {
		case map[string]any:
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range c {
					if !yield(k) {
						return
					}
				}
			})
			if len(keys) == 0 || depth > 0 && r.IntN(3) == 0 {
				switch r.IntN(3) {
				case 0:
					c[fmt.Sprintf("added%d", r.IntN(3))] = "new"
				case 1:
					if len(keys) > 0 {
						delete(c, keys[r.IntN(len(keys))])
					}
				default:
					if len(keys) > 0 {
						c[keys[r.IntN(len(keys))]] = "changed"
					}
				}
				return
			}
			k := keys[r.IntN(len(keys))]
			if l, ok := c[k].([]any); ok && r.IntN(3) == 0 {
				// A list item added (a copy of one) or removed.
				i := r.IntN(len(l) + 1)
				if len(l) == 0 {
					c[k] = []any{"new"}
				} else if i == len(l) || r.IntN(2) == 0 {
					c[k] = append(slices.Clone(l), runtime.DeepCopyJSONValue(l[min(i, len(l)-1)]))
				} else {
					c[k] = slices.Delete(slices.Clone(l), i, i+1)
				}
				return
			}
			if _, ok := c[k].(map[string]any); !ok {
				if _, ok := c[k].([]any); !ok {
					c[k] = edited(c[k])
					return
				}
			}
			cur = c[k]
		case []any:
			if len(c) == 0 {
				return
			}
			switch r.IntN(4) {
			case 0:
				c[0], c[len(c)-1] = c[len(c)-1], c[0]
				return
			case 1:
				i := r.IntN(len(c))
				if m, ok := c[i].(map[string]any); ok {
					cur = m
					continue
				}
				c[i] = edited(c[i])
				return
			default:
				cur = c[r.IntN(len(c))]
				if _, ok := cur.(map[string]any); !ok {
					return
				}
			}
		default:
			return
		}
	}
}

// edited is another value of v's type: the API server has accepted
// whatever the two sides hold as one value, so an edit that gives both
// sides one value the schema refuses would test nothing a scan meets.
func edited(v any) any {
	switch v := v.(type) {
	case string:
		return v + "-edited"
	case int64:
		return v + 1
	case float64:
		return v + 0.5
	case bool:
		return !v
	}
	return v
}
