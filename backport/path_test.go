package backport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePathReadsWhatTheReportWrites(t *testing.T) {
	cases := []struct {
		path string
		want Path
	}{
		{`.spec.replicas`, Path{{Field: "spec"}, {Field: "replicas"}}},
		{`.spec.template.spec.containers[name="app"].image`, Path{{Field: "spec"}, {Field: "template"}, {Field: "spec"}, {Field: "containers"}, {Key: []KeyField{{"name", "app"}}}, {Field: "image"}}},
		{`.spec.ports[port=80,protocol="TCP"].targetPort`, Path{{Field: "spec"}, {Field: "ports"}, {Key: []KeyField{{"port", int64(80)}, {"protocol", "TCP"}}}, {Field: "targetPort"}}},
		{`.metadata.finalizers[="example.com/a,b]"]`, Path{{Field: "metadata"}, {Field: "finalizers"}, {Value: "example.com/a,b]", HasValue: true}}},
		{`.spec.args[3]`, Path{{Field: "spec"}, {Field: "args"}, {Index: 3, IsIndex: true}}},
		{`.data.key\"quoted`, Path{{Field: "data"}, {Field: `key\"quoted`}}},
		{`.spec.items[name="a\"b"].on[flag=true]`, Path{{Field: "spec"}, {Field: "items"}, {Key: []KeyField{{"name", `a"b`}}}, {Field: "on"}, {Key: []KeyField{{"flag", true}}}}},
	}
	for _, c := range cases {
		got, err := ParsePath(c.path)
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.path, diff)
		}
	}
}

func TestParsePathRefusesWhatIsNoPath(t *testing.T) {
	for _, s := range []string{"", "spec", ".", ".a..b", `.a[name="x"`, ".a[name=]", ".a[=]", `.a[k="v"x]`} {
		if p, err := ParsePath(s); err == nil {
			t.Errorf("%q parsed as %v", s, p)
		}
	}
}

func TestResolveJoinsDottedKeys(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]any{"sidecar.istio.io/status": "x"},
			"labels":      map[string]any{"app": "web"},
		},
		"data": map[string]any{"app.properties": "a=b"},
		"spec": map[string]any{"selector": map[string]any{"app": "web"}},
	}
	cases := []struct {
		path, kind string
		want       []string
	}{
		{".metadata.annotations.sidecar.istio.io/status", "Deployment", []string{"metadata", "annotations", "sidecar.istio.io/status"}},
		{".metadata.annotations.example.com/new", "Deployment", []string{"metadata", "annotations", "example.com/new"}},
		{".metadata.labels.app.kubernetes.io/name", "Deployment", []string{"metadata", "labels", "app.kubernetes.io/name"}},
		{".data.app.properties", "ConfigMap", []string{"data", "app.properties"}},
		{".data.new.key", "ConfigMap", []string{"data", "new.key"}},
		{".spec.selector.app.kubernetes.io/name", "Service", []string{"spec", "selector", "app.kubernetes.io/name"}},
		{".spec.template.metadata.annotations.a.b/c", "Deployment", []string{"spec", "template", "metadata", "annotations", "a.b/c"}},
		{".spec.strategy.rollingUpdate.maxSurge", "Deployment", []string{"spec", "strategy", "rollingUpdate", "maxSurge"}},
	}
	for _, c := range cases {
		p, err := ParsePath(c.path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range Resolve(p, obj, c.kind) {
			got = append(got, e.Field)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.path, diff)
		}
	}
}

func TestTextValueKeepsGitsType(t *testing.T) {
	cases := []struct {
		name, text string
		like       any
		hasLike    bool
		kind, path string
		want       any
	}{
		{"a Git string stays a string", "3", "2", true, "", ".data.N", "3"},
		{"a Git number stays a number", "5", int64(3), true, "", ".spec.replicas", int64(5)},
		{"a Git bool stays a bool", "false", true, true, "", ".spec.paused", false},
		{"a structure is JSON", `{"name":"X","value":"1"}`, nil, false, "Deployment", `.spec.template.spec.containers[name="app"].env[name="X"]`, map[string]any{"name": "X", "value": "1"}},
		{"an annotation is a string", "true", nil, false, "Deployment", ".metadata.annotations.example.com/flag", "true"},
		{"ConfigMap data is a string", "42", nil, false, "ConfigMap", ".data.ANSWER", "42"},
		{"a new number field is a number", "42", nil, false, "Deployment", ".spec.minReadySeconds", int64(42)},
		{"an annotation holding JSON is a string", `{"a":1}`, nil, false, "Deployment", ".metadata.annotations.x", `{"a":1}`},
	}
	for _, c := range cases {
		if got := textValue(c.text, c.like, c.hasLike, c.kind, c.path); !cmp.Equal(c.want, got) {
			t.Errorf("%s: got %#v, want %#v", c.name, got, c.want)
		}
	}
}
