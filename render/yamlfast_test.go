package render

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/internal/kubekeys"
)

// yamlV3Document is what splitYAML made of one document before
// fastDocument: yaml.v3's node tree, read by YAMLNodeValue; false when
// yaml.v3 refuses data, or it holds other than one document.
func yamlV3Document(data []byte) (any, int, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil || len(n.Content) == 0 {
		return nil, 0, false
	}
	root := n.Content[0]
	v, err := YAMLNodeValue(root)
	if err != nil {
		return nil, 0, false
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, 0, false
	}
	return v, root.Line, true
}

// sameAsYAMLv3 fails when fastDocument reads data, and yaml.v3 refuses it
// or reads another value or line. It says whether fastDocument read it.
func sameAsYAMLv3(t *testing.T, what string, data []byte) bool {
	t.Helper()
	got, line, ok := fastDocument(data)
	if !ok {
		return false
	}
	want, wantLine, wantOK := yamlV3Document(data)
	if !wantOK {
		t.Fatalf("%s: fastDocument read %q, which yaml.v3 refuses", what, data)
	}
	if !reflect.DeepEqual(any(got), want) || line != wantLine {
		t.Fatalf("%s: %q: line %d, yaml.v3's %d; -yaml.v3 +fastDocument:\n%s", what, data, line, wantLine, cmp.Diff(want, any(got)))
	}
	return true
}

// TestFastDocumentReadsAsYAMLv3: every document of every fixture that
// fastDocument reads, it reads as yaml.v3 does, value (Go types too) and
// line; and it reads the shapes it is for, not only gives up.
func TestFastDocumentReadsAsYAMLv3(t *testing.T) {
	read, all := 0, 0
	err := filepath.WalkDir(filepath.Join("..", "fixtures"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, c := range SplitYAMLDocuments(data) {
			all++
			if sameAsYAMLv3(t, p, c.Data) {
				read++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fastDocument read %d of the fixtures' %d documents", read, all)
	if read < all/2 {
		t.Errorf("fastDocument read only %d of the fixtures' %d documents", read, all)
	}

	for _, doc := range []string{
		// What kubectl and Helm write.
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app.kubernetes.io/name: web\n  annotations: {}\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: app\n        image: \"nginx:1.25\"\n        args: [] # none\n        ports:\n        - containerPort: 80\n          protocol: TCP\n        resources:\n          limits:\n            cpu: 500m\n",
		"# Source: web/templates/cm.yaml\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 'web''s'\ndata:\n  script: |\n    #!/bin/sh\n      echo hi\n\n    exit 0\n  strip: |-\n    a\n    b\n\n  after: x\n",
		"---\nkind: X\nlist:\n- a\n-   b # comment\n- 'c: d'\n-\n  e: f\n- g: h\n  i: j\nnext: 1\n",
		// Every kind of plain scalar.
		"a: 0\nb: -12\nc: +7\nd: 0x1F\ne: 0o17\nf: 017\ng: 1_000\nh: 1.5\ni: -.5\nj: 1e3\nk: 08\nl: 500m\nm: 25%\nn: 1Gi\no: true\np: False\nq: yes\nr: ~\ns: null\nt: 9223372036854775807\nv: .\nw: 1.\ny: http://x:80/y\nz: a#b\naa: -0x1f\nab: 1.2.3\nac: 10.0.0.1\nad: -1e-3\nae: 0e\naf: 1e\nag: 0xfg\nah: 12h\nai: -1_000.5\n",
		"key:\nother: 1\nempty: ''\nq: \"\"\n",
		// What controller-gen writes: long descriptions wrapped.
		"description: spec defines the\n  specification of   x\n   more  \nb:\n  next\n  line\nc:\n- item\n  wrapped\n-   1\n    2\nd: x\n\ne: 1\n",
		"containerName:\n  description: 'Container name: required for volumes,\n    optional for env vars'\n  other: 'it''s\n    wrapped ''twice'''\nrole: of the `Services`,\n  `Tasks`, or - [Nodes].\n",
		// What toYaml and RBAC rules write.
		"securityContext:\n  {}\nresources:\n  []\nvalue:\n  -Djava.security.egd=file:/dev/urandom\nn:\n  3 # c\nq:\n  'x'\n",
		"metadata:\n  annotations:\n    \"helm.sh/hook\": test\n    'it''s': \"a: b\"\n    \"\": empty\nrules:\n- apiGroups: [\"\"]\n  resources: ['extensions', \"x\"]\n  verbs: [\"*\"]\n- verbs: [get, list, 1, true, 0x1F]\n  command: [ \"powershell\" ]\n  args: []\n",
	} {
		if !sameAsYAMLv3(t, "shape", []byte(doc)) {
			t.Errorf("fastDocument gave up on %q", doc)
		}
	}
	for _, doc := range []string{
		"a: 2026-12-01\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "a: [1,]\n", "a: [*]\n", "a: [a b]\n", "a: [{}]\n", "a: [1, 2\n", "a: {b: c}\n",
		"a: \"x\" y\n", "a: \"x\"y\n", "a: 'x' y\n", "a: >\n  folded\n", "a: |+\n  kept\n", "a: |2\n  indented\n", "a: \"esc\\n\"\n",
		"a: multi # c\n  line\n", "a: x\n\n  y\n", "a: x\n  y: z\n", "a: x\n  # c\n  y\n", "a: x\n  y #c\n", "a: 'x\n\n  y'\n", "a: 'x\n  y' z\n", "a: 'x #\n  y'\n", "a: 'x\ny'\n", "a:\n  {}\n  b: 1\n", "\"a\\\"b\": 1\n", "\"a\":b\n", "\"a\"x 1\n", "\"a\\\\\": 1\n", "a: [\"b\\\\\"]\n", "'a''b': 1\n''''", "a: 1\na: 2\n", "1: a\n", "a:\tb\n", "a: b\r\n",
		"a: é\n", "items:\n- a\n", "- a\n", "a: b: c\n", "a: 1\n...\n", "%YAML 1.2\n---\na: 1\n",
		"a: |\n  no break at the end", "a:\n  - b\n - c\n", "? a\n: b\n", "a: .inf\n", "<<: {a: 1}\n", "a: 9223372036854775808\n", "a: -\n", "a: 0bz\n", "a: -0o9z\n",
	} {
		sameAsYAMLv3(t, "refused", []byte(doc))
		if _, _, ok := fastDocument([]byte(doc)); ok {
			t.Errorf("fastDocument read %q, which is for yaml.v3 to read", doc)
		}
	}
}

// TestFastDocumentKeepsOneCopyOfCommonValues: the strings kubekeys keeps
// one copy of (apps/v1, Deployment, TCP) read as yaml.v3 reads them plain
// and quoted, as that copy, and a value wrapped over two lines is not one.
func TestFastDocumentKeepsOneCopyOfCommonValues(t *testing.T) {
	for _, v := range kubekeys.Values() {
		for _, doc := range []string{"a: " + v + "\n", "a: '" + v + "'\n", "a: \"" + v + "\" # c\n", "a:\n  " + v + "\n"} {
			if !sameAsYAMLv3(t, "kept value", []byte(doc)) {
				t.Errorf("fastDocument gave up on %q", doc)
			}
		}
		kept, _ := kubekeys.Value([]byte(v))
		for _, doc := range []string{"a: " + v + "\n", "a: \"" + v + "\"\n", "a: '" + v + "' # c\n"} {
			got, _, _ := fastDocument([]byte(doc))
			if unsafe.StringData(got["a"].(string)) != unsafe.StringData(kept.(string)) {
				t.Errorf("%q: fastDocument made a new string, not kubekeys' copy", doc)
			}
		}
	}
	for _, doc := range []string{"a: apps/v1\n  more\n", "a: 'TCP\n  UDP'\n", "a: 'TCP'x\n", "a: \"TCP\"\n  b\n", "a: 'TCP'\n  b: c\n"} {
		sameAsYAMLv3(t, "wrapped", []byte(doc))
	}
	if got, _, _ := fastDocument([]byte("a: TCP\n  UDP\n")); got["a"] != "TCP UDP" {
		t.Errorf("a plain value over two lines read as %q", got["a"])
	}
}

// fuzzSmall feeds check every input the fuzzer makes from seeds, up to
// 4 KiB: a longer one adds time, not shapes.
func fuzzSmall[T string | []byte](f *testing.F, seeds []T, check func(t *testing.T, in T)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in T) {
		if len(in) <= 4096 {
			check(t, in)
		}
	})
}

// FuzzFastDocument: whatever fastDocument reads, yaml.v3 reads the same.
func FuzzFastDocument(f *testing.F) {
	fuzzSmall(f, []string{
		"a: 1\nb:\n  c: [] \n  d:\n  - e\n  - f: g\n    h: 'i'\n",
		"a: |\n  x\n\n  y\nb: |-\n  z\n",
		"---\n# c\nk: v # c\n",
		"a:\n- 1\n- -2\n- 0.5\n- .5\n- 1e-3\n- 0x10\n- 0o7\n- 0b1\n- 1_0\n",
		"a:\n  b:\n    c: d\n  e: f\ng: h\n",
		"a:\n-\n  b: c\n- - d\n",
		"\"a\": [\"*\", 'b''c', d, 1]\n'e': \n  {}\nf:\n  g\n",
		"a: b\n  c\n  - d\nf: 'g\n   h''i'\n- j\n  k\n",
	}, func(t *testing.T, doc string) {
		sameAsYAMLv3(t, "fuzz", []byte(doc))
	})
}

// TestSplitLinesSplitsAsBytesSplit: splitLines gives the lines
// bytes.Split gives, into a slice that held another document's lines.
func TestSplitLinesSplitsAsBytesSplit(t *testing.T) {
	held := splitLines(nil, []byte("a\nb\nc\nd\ne\nf\n"))
	for _, data := range []string{"", "\n", "\n\n", "a", "a\n", "a\nb", "a\n\nb\n", "kind: ConfigMap\nmetadata:\n  name: x\n"} {
		want := bytes.Split([]byte(data), []byte{'\n'})
		if got := splitLines(held[:0], []byte(data)); !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("splitLines(%q) = %q, want %q", data, got, want)
		}
	}
}
