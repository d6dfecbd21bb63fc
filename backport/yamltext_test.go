package backport

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// op is one edit of a document in the tests: set a value, or remove. at
// is the field's pathElements, as a finding carries them.
type op struct {
	at     []string
	value  any
	remove bool
}

func editText(t *testing.T, src string, ops ...op) string {
	t.Helper()
	f := splitFile([]byte(src))
	for _, o := range ops {
		d, ok := f.docs[0]
		if !ok {
			var err error
			if d, err = parseDoc(f.chunks[0].Data); err != nil {
				t.Fatal(err)
			}
			f.docs[0] = d
		}
		p, err := PathOf(o.at)
		if err != nil {
			t.Fatal(err)
		}
		if o.remove {
			err = deleteNode(d.root, p)
		} else {
			err = setNode(&d.root, p, o.value)
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	out, err := f.bytes()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestEditsChangeOnlyTheirLines(t *testing.T) {
	cases := []struct {
		name      string
		src, want string
		ops       []op
	}{{
		name: "a changed scalar keeps its quotes and its comment, in its column",
		src:  "spec:\n  containers:\n  - name: app\n    image: \"nginx:1.25\"   # pinned\n",
		want: "spec:\n  containers:\n  - name: app\n    image: \"nginx:1.26\"   # pinned\n",
		ops:  []op{{at: []string{"f:spec", "f:containers", `k:{"name":"app"}`, "f:image"}, value: "nginx:1.26"}},
	}, {
		name: "a longer value moves its comment no further than it must",
		src:  "data:\n  A: info     # level\n  B: x\n",
		want: "data:\n  A: debug    # level\n  B: x\n",
		ops:  []op{{at: []string{"f:data", "f:A"}, value: "debug"}},
	}, {
		name: "a new key goes after the last line of its map, blank lines and comments stay",
		src:  "# head\nmetadata:\n  name: web\n  labels:\n    app: web   # selector\n\n# the spec\nspec:\n  replicas: 3\n",
		want: "# head\nmetadata:\n  name: web\n  labels:\n    app: web   # selector\n  annotations:\n    example.com/hotfix: INC-1\n\n# the spec\nspec:\n  replicas: 3\n",
		ops:  []op{{at: []string{"f:metadata", "f:annotations", "f:example.com/hotfix"}, value: "INC-1"}},
	}, {
		name: "a removed list item goes with the comment right above it",
		src:  "env:\n- name: A\n  value: a\n# B is old\n- name: B\n  value: b\n- name: C\n  value: c\n",
		want: "env:\n- name: A\n  value: a\n- name: C\n  value: c\n",
		ops:  []op{{at: []string{"f:env", `k:{"name":"B"}`}, remove: true}},
	}, {
		name: "a removed last item leaves the next key alone",
		src:  "a:\n  env:\n  - name: A\n    value: a\n  - name: B\n    value: b\n\n  other: 1\n",
		want: "a:\n  env:\n  - name: A\n    value: a\n\n  other: 1\n",
		ops:  []op{{at: []string{"f:a", "f:env", `k:{"name":"B"}`}, remove: true}},
	}, {
		name: "removing the only item removes the list",
		src:  "a:\n  env:\n  - name: A\n    value: a\n  other: 1\n",
		want: "a:\n  other: 1\n",
		ops:  []op{{at: []string{"f:a", "f:env", `k:{"name":"A"}`}, remove: true}},
	}, {
		name: "a flow map is rewritten on its line",
		src:  "template:\n  metadata:\n    labels: {app: web}  # pod labels\n",
		want: "template:\n  metadata:\n    labels: {app: web, version: v2} # pod labels\n",
		ops:  []op{{at: []string{"f:template", "f:metadata", "f:labels", "f:version"}, value: "v2"}},
	}, {
		name: "an empty key becomes a map",
		src:  "data:\nkind: ConfigMap\n",
		want: "data:\n  A: \"1\"\nkind: ConfigMap\n",
		ops:  []op{{at: []string{"f:data", "f:A"}, value: "1"}},
	}, {
		name: "new items follow the file's list indentation",
		src:  "spec:\n    containers:\n        - name: app\n          image: a\n",
		want: "spec:\n    containers:\n        - name: app\n          image: a\n          env:\n              - name: X\n                value: \"on\"\n",
		ops:  []op{{at: []string{"f:spec", "f:containers", `k:{"name":"app"}`, "f:env", `k:{"name":"X"}`}, value: map[string]any{"name": "X", "value": "on"}}},
	}, {
		name: "a keyed item lists its key first",
		src:  "ports:\n- containerPort: 80\n",
		want: "ports:\n- containerPort: 80\n- containerPort: 9090\n  protocol: TCP\n  name: metrics\n",
		ops:  []op{{at: []string{"f:ports", `k:{"containerPort":9090,"protocol":"TCP"}`}, value: map[string]any{"containerPort": int64(9090), "protocol": "TCP", "name": "metrics"}}},
	}, {
		name: "a block scalar is rewritten whole",
		src:  "data:\n  script: |\n    echo a\n    echo b\n  other: x\n",
		want: "data:\n  script: |-\n    echo c\n    echo d\n  other: x\n",
		ops:  []op{{at: []string{"f:data", "f:script"}, value: "echo c\necho d"}},
	}, {
		name: "strings a YAML 1.1 reader would misread are quoted",
		src:  "data:\n  A: x\n",
		want: "data:\n  A: \"yes\"\n  B: \"0755\"\n",
		ops:  []op{{at: []string{"f:data", "f:A"}, value: "yes"}, {at: []string{"f:data", "f:B"}, value: "0755"}},
	}, {
		name: "a structure replaces a value in the style of the old one",
		src:  "c:\n  args: [a, b]\n  command:\n  - run\n  tail: 1\n",
		want: "c:\n  args: [a, b, c]\n  command:\n  - run\n  - --fast\n  tail: 1\n",
		ops:  []op{{at: []string{"f:c", "f:args"}, value: []any{"a", "b", "c"}}, {at: []string{"f:c", "f:command"}, value: []any{"run", "--fast"}}},
	}, {
		name: "Windows line ends stay",
		src:  "data:\r\n  A: x\r\n",
		want: "data:\r\n  A: v\r\n  B: z\r\n",
		ops:  []op{{at: []string{"f:data", "f:A"}, value: "v"}, {at: []string{"f:data", "f:B"}, value: "z"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := editText(t, c.src, c.ops...)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOtherDocumentsOfTheFileStayByteForByte(t *testing.T) {
	src := "a: 1\n---\n# second\nb:   2   # odd spacing\n\n\n---\nc: {x: 1}\n"
	f := splitFile([]byte(src))
	d, err := parseDoc(f.chunks[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	f.docs[0] = d
	if err := setNode(&d.root, Path{{Field: "a"}}, int64(5)); err != nil {
		t.Fatal(err)
	}
	out, err := f.bytes()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(src, "a: 1", "a: 5", 1)
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReencodeKeepsCommentsAndTheMarker(t *testing.T) {
	src := "---\n# the config\ndata:\n  A: x   # first\n\n  B: y\n"
	d, err := parseDoc([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := setNode(&d.root, Path{{Field: "data"}, {Field: "A"}}, "z"); err != nil {
		t.Fatal(err)
	}
	out, err := d.reencode()
	if err != nil {
		t.Fatal(err)
	}
	want := "---\n# the config\ndata:\n  A: z # first\n  B: y\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
