package render

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	kyaml "go.yaml.in/yaml/v3"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyamlrnode "sigs.k8s.io/kustomize/kyaml/yaml"
)

// marshalJSONObject is what a build's resource gave before kyamlObject:
// its MarshalJSON (kyaml writes the node as YAML, reads it into Go values,
// writes those as JSON) read back with the API machinery's JSON decoder.
func marshalJSONObject(r *kyamlrnode.RNode) (map[string]any, error) {
	data, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	err = utiljson.Unmarshal(data, &obj)
	return obj, err
}

// TestAKustomizeBuildReadsAsMarshalJSON: every object of the fixtures'
// kustomizations, and of one that goes through krusty's transformers and
// generators with values of every YAML form, is what MarshalJSON gave,
// Go types included.
func TestAKustomizeBuildReadsAsMarshalJSON(t *testing.T) {
	dirs := []string{
		renderFixture(t, "kustomize/base"),
		renderFixture(t, "kustomize/overlays/prod"),
		renderFixture(t, "plain/kustomize"),
		renderFixture(t, "../backport/kustomize/overlays/prod"),
		renderFixture(t, "../backport/kustomize-crd"),
		renderFixture(t, "../discover/repo/apps/web-kustomize"),
	}
	forms := t.TempDir()
	writeTree(t, forms, map[string]string{
		"kustomization.yaml": `namePrefix: p-
namespace: shop
labels:
- pairs: {team: "007", tier: web}
  includeSelectors: true
commonAnnotations: {owner: "true", at: "2026-12-01"}
replicas: [{name: web, count: 4}]
images: [{name: nginx, newTag: "1.27"}]
resources: [deploy.yaml, forms.yaml, infinite.yaml, folded.yaml]
configMapGenerator:
- name: gen
  literals: [a=1, b=true, c=1.50, d=~, "e=two words", f=0x1F]
patches:
- target: {kind: Deployment, name: web}
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/args
      value: ["--x=1", 2, 3.0, true, null]
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      minReadySeconds: 010
      template:
        spec:
          terminationGracePeriodSeconds: 3.0e1
`,
		"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        env: &env
        - {name: A, value: "1"}
        - {name: B, value: 'yes'}
      initContainers:
      - name: init
        image: busybox
        env: *env
`,
		"infinite.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inf}\ndata: {a: .inf}\n",
		// kustomize build writes a folded scalar's more-indented line with a
		// blank line before it: what Argo CD applies holds that line break.
		"folded.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: folded}\ndata:\n  a: >\n    first\n      more indented\n    last\n",
		"forms.yaml": `apiVersion: example.com/v1
kind: Forms
metadata:
  name: forms
spec:
  ints: [0, -1, 1_000, 0o17, 0x1f, 9223372036854775807]
  big: 18446744073709551615
  floats: [1.0, -0.5, 1e3, .5, 6.02e+23]
  bools: [true, false, True, FALSE, yes, no, on, off]
  nulls: [null, ~, Null, ]
  strings: ["1", '2', "true", "", '', "null", plain words, "multi
    line", "tab\there", "é ☃"]
  stamp: 2026-12-01T10:00:00Z
  date: 2026-12-01
  literal: |
    line one
      indented

  folded: >-
    folded
    text
  tagged: !!str 12
  binary: !!binary aGVsbG8=
  merged:
    <<: {a: 1, b: 2}
    b: 3
  empty: {}
  none: []
  flowEmpty: {a: , b: c}
  ? ""
  : emptyKey
  nested: {a: [{b: [{c: d}]}]}
`,
	})
	dirs = append(dirs, forms)
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	errs := 0
	for _, dir := range dirs {
		resMap, err := k.Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if len(resMap.Resources()) == 0 {
			t.Fatalf("%s: no resources", dir)
		}
		for _, r := range resMap.Resources() {
			want, wantErr := marshalJSONObject(&r.RNode)
			got, err := kyamlObject(r.YNode())
			if (err != nil) != (wantErr != nil) {
				t.Errorf("%s %s: error %v, MarshalJSON's %v", dir, r.CurId(), err, wantErr)
				continue
			}
			if err != nil {
				errs++
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: differs from MarshalJSON (-MarshalJSON +kyamlObject):\n%s", dir, r.CurId(), cmp.Diff(want, got))
			}
		}
	}
	// Nodes a transformer may build that the parser does not.
	str := func(v string) *kyaml.Node { return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: "!!str", Value: v} }
	for _, v := range []*kyaml.Node{
		{Kind: kyaml.ScalarNode, Tag: "!!int", Value: "3", Style: kyaml.DoubleQuotedStyle},
		{Kind: kyaml.ScalarNode, Tag: "!!bool", Value: "true", Style: kyaml.SingleQuotedStyle},
		{Kind: kyaml.ScalarNode, Tag: "!!int", Value: "3", Style: kyaml.TaggedStyle | kyaml.DoubleQuotedStyle},
		{Kind: kyaml.ScalarNode, Tag: "", Value: "3"},
		{Kind: kyaml.ScalarNode, Tag: "", Value: "3", Style: kyaml.LiteralStyle},
		{Kind: kyaml.ScalarNode, Tag: "!!null", Value: ""},
		{Kind: kyaml.ScalarNode, Tag: "", Value: ""},
		{Kind: kyaml.ScalarNode, Tag: "!!str", Value: "12"},
		{Kind: kyaml.ScalarNode, Tag: "!custom", Value: "x"},
		{Kind: kyaml.MappingNode, Style: kyaml.FlowStyle, Content: []*kyaml.Node{str("k"), {Kind: kyaml.ScalarNode, Tag: "!!null"}}},
		{Kind: kyaml.SequenceNode, Style: kyaml.FlowStyle, Content: []*kyaml.Node{{Kind: kyaml.ScalarNode}}},
	} {
		n := &kyaml.Node{Kind: kyaml.MappingNode, Content: []*kyaml.Node{str("v"), v}}
		want, wantErr := marshalJSONObject(kyamlrnode.NewRNode(n))
		got, err := kyamlObject(n)
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("a built node %+v: %v (%v), MarshalJSON %v (%v)", *v, got, err, want, wantErr)
		}
	}
	// Only the infinite float is refused, by both (JSON has no such number).
	if errs != 1 {
		t.Errorf("%d objects refused, want the one with .inf", errs)
	}
}

// FuzzKYAMLObject: whatever YAML kyaml parses into an object, kyamlObject
// reads as MarshalJSON does, or refuses where it does.
func FuzzKYAMLObject(f *testing.F) {
	fuzzSmall(f, []string{
		"a: 1\nb: [x, 2.5, true, null]\nc: {d: \"3\"}\n",
		"a: &x [1, 2]\nb: *x\n",
		"<<: {a: 1}\nb: 2\n",
		"a: 2026-12-01\nb: !!binary aGVsbG8=\nc: 0x10\nd: 1e400\n",
		"a: |\n  text\n\nb: >\n  more\n",
		"? [a]\n: b\n",
		"a: 1\na: 2\n",
		"{a}",
		"a: {b: , c: [d, ]}\n? ''\n: e\n",
	}, func(t *testing.T, s string) {
		r, err := kyamlrnode.Parse(s)
		if err != nil || r.YNode().Kind != kyaml.MappingNode {
			return
		}
		want, wantErr := marshalJSONObject(r)
		got, err := kyamlObject(r.YNode())
		if wantErr != nil {
			if err == nil {
				t.Fatalf("%q: MarshalJSON refused (%v), kyamlObject gave %v", s, wantErr, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: kyamlObject refused (%v), MarshalJSON gave %v", s, err, want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: differs from MarshalJSON (-MarshalJSON +kyamlObject):\n%s", s, cmp.Diff(want, got))
		}
	})
}
