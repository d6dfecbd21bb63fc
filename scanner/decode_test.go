package scanner

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// TestReadHeadReadsAnItemAsEncodingJSONDoes: the head of a listed item
// decides whether it is one Git declares (else a declared object is
// reported Missing); readHead steps over the rest of the item byte by
// byte and must read every head as json.Unmarshal into itemHead does.
func TestReadHeadReadsAnItemAsEncodingJSONDoes(t *testing.T) {
	for name, in := range map[string]string{
		"an empty object":                      `{}`,
		"spaces, nesting and quotes in values": ` { "apiVersion" : "v1" , "kind":"Pod", "metadata" : { "name" : "x", "namespace":"y", "labels":{"a":"b\"}"}} , "spec":[1,2,{"x":"}"}], "n": -1.5e3, "t": true, "f": false}`,
		"keys in another case":                 `{"KIND":"a","Metadata":{"NAME":"n","NameSpace":"ns"}}`,
		"an escape in a value":                 `{"kind":"a\u0041"}`,
		"an escaped backslash before the head": `{"spec":{"a":[[[]]],"b":"\\"},"kind":"K"}`,
		"an escape in a key":                   `{"k\u0069nd":"x"}`,
		"a key beyond ASCII":                   `{"ſind":"x","kInd":"y"}`,
		"nulls":                                `{"kind":null,"metadata":null}`,
		"a null name":                          `{"metadata":{"name":null}}`,
		"a key twice":                          `{"kind":"x","kind":"y"}`,
		"uid and resourceVersion":              `{"metadata":{"uid":"6b1f","resourceVersion":"42","RESOURCEVERSION":"43","UID":null}}`,
		"metadata twice":                       `{"metadata":{"name":"a"},"metadata":{"namespace":"b"}}`,
		"a number where a string goes":         `{"kind":1}`,
		"names deeper than the head":           `{"metadata":{"labels":{"name":"l","uid":"u"},"ownerReferences":[{"name":"o","uid":"p"}],"managedFields":[{"manager":"m","fieldsV1":{"f:metadata":{"f:name":{}}}}],"name":"n"},"spec":{"metadata":{"name":"inner"},"kind":"K"},"status":[{"kind":"S"}]}`,
		"metadata empty, then not":             `{"metadata":{},"kind":"K","metadata":{"name":"b"}}`,
		"metadata that is no object":           `{"metadata":"x"}`,
		"an item that is no object":            `["kind"]`,
		"a string item":                        `"x"`,
		"values that are not UTF-8":            "{\"kind\":\"a\xffb\",\"metadata\":{\"name\":\"\xc3\"}}",
	} {
		var want, got, gotAt itemHead
		werr := json.Unmarshal([]byte(in), &want)
		gerr := readHead([]byte(in), nil, &got)
		if (werr == nil) != (gerr == nil) || want != got {
			t.Errorf("%s: %s: got %+v (error %v), want %+v (error %v)", name, in, got, gerr, want, werr)
		}
		// As a page reads it: with the keys its check recorded.
		var keys []int
		if _, err := scanJSON([]byte(in), 0, 0, true, &keys); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := readHead([]byte(in), keys, &gotAt); (werr == nil) != (err == nil) || want != gotAt {
			t.Errorf("%s: %s: with the keys %v: got %+v (error %v), want %+v (error %v)", name, in, keys, gotAt, err, want, werr)
		}
	}
}

// TestDecodeLiveDecodesAsTheDynamicClientDoes: what the compare sees of a
// listed object is what utiljson.Unmarshal makes of it (int64 integers,
// float64 other numbers), less its status, pruned as the compare prunes
// it (PruneEmpty: no nulls, no empty lists or maps but as list items),
// with its managedFields kept as their JSON.
func TestDecodeLiveDecodesAsTheDynamicClientDoes(t *testing.T) {
	in := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","generation":3,"managedFields":[{"manager":"m","fieldsV1":{"f:data":{".":{},"f:a":{}}}}],"labels":{"k\u0041":"v\"","":"empty key"}},` +
		`"data":{"a":"\u00e9\n","b":""},"spec":{"i":42,"neg":-7,"big":123456789012345678901234,"f":1.5,"e":1e3,"z":0,"l":[],"m":{},"n":null,"t":true,"nested":[[1,[2]],{"x":[{}]}]},` +
		`"k\u0069nd2":"escaped key","status":{"phase":"Running"},"last":-2.5e-3}`
	got, managedFields, err := decodeLive([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	if err := utiljson.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	delete(want, "status")
	md := want["metadata"].(map[string]any)
	wantManaged, _ := json.Marshal(md["managedFields"])
	delete(md, "managedFields")
	PruneEmpty(want)
	if _, ok := want["spec"].(map[string]any)["l"]; ok {
		t.Fatal("PruneEmpty left spec.l, an empty list")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	var a, b any
	_ = json.Unmarshal(wantManaged, &a)
	if err := json.Unmarshal(managedFields, &b); err != nil || !cmp.Equal(a, b) {
		t.Errorf("managedFields = %s, want %s", managedFields, wantManaged)
	}
}

// FuzzDecodeLive: whatever object the page's reader accepts, decodeLive
// builds what the dynamic client's decoder (utiljson) does, without status
// and managedFields and pruned (PruneEmpty), or both refuse it.
func FuzzDecodeLive(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","managedFields":[{"manager":"m"}],"labels":{"a":"b"}},"data":{"k":"v"}}`,
		`{"spec":{"i":42,"neg":-7,"z":-0,"big":123456789012345678901234,"max":9223372036854775807,"over":9223372036854775808,"f":1.5,"e":1e3,"E":2E-2,"l":[],"m":{},"n":null,"t":true,"f2":false,"nested":[[1,[2]],{"x":[{}]}]}}`,
		`{"data":{"e":"\u00e9\n\"\\","u":"é","bad":"` + "\xff\xfe" + `","sur":"\ud83d\ude00","half":"\ud800"}, "k\u0069nd":"escaped key", "st\u0061tus":{"phase":"x"}}`,
		` { "metadata" : { "m\u0061nagedFields" : [ ] , "name" : "spaced" } , "status" : 1 , "a" : [ 1 , 2 ] } `,
		`{"metadata":null,"x":1e400}`,
		`{"a":1,"a":2,"metadata":{"name":"one"},"metadata":{"name":"two"}}`,
		`{"a":1,"a":null,"b":{"c":1,"c":{}},"d":[{},[],null,{"e":[]}],"metadata":{"name":"x","labels":{}}}`,
		`{"a":"TCP","b":"TC\"P","c":"ClusterFirstWithHostNet","d":"ClusterFirstWithHostNetXY","e":["Always","25%"],"f":"\u0054CP","g":"TCP"}`,
		`{"metadata":{"managedFields":[{"manager":"m"}]},"metadata":null}`,
		`{"` + "\xc3" + `":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		end, err := scanJSON(raw, 0, 0, true, nil)
		if err != nil || skipSpace(raw, end) != len(raw) || raw[skipSpace(raw, 0)] != '{' {
			return
		}
		got, managedFields, err := decodeLive(raw)
		var want map[string]any
		wantErr := utiljson.Unmarshal(raw, &want)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: decodeLive %v, utiljson %v", raw, err, wantErr)
		}
		if err != nil {
			return
		}
		delete(want, "status")
		var wantManaged any
		md, ok := want["metadata"].(map[string]any)
		if ok {
			wantManaged, ok = md["managedFields"]
			delete(md, "managedFields")
		}
		var gotManaged any
		if managedFields != nil {
			if err := utiljson.Unmarshal(managedFields, &gotManaged); err != nil {
				t.Fatalf("%q: managedFields %q: %v", raw, managedFields, err)
			}
		}
		if (managedFields != nil) != ok || !cmp.Equal(wantManaged, gotManaged) {
			t.Fatalf("%q: managedFields %q, utiljson %v", raw, managedFields, wantManaged)
		}
		PruneEmpty(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q: decoded (-utiljson +decodeLive):\n%s", raw, diff)
		}
	})
}

// TestNormalizeLiveNormalizesAsACopyWould: a live object decoded for its
// compare is normalized in place (normalizeLive) to what normalize makes
// of a copy of the whole object, and what the scan reads of the live
// object after (its kind, name, namespace, labels and annotations,
// kubectl's last-applied one among them, for objectFacts) stays.
func TestNormalizeLiveNormalizesAsACopyWould(t *testing.T) {
	for _, in := range []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","uid":"u-1","resourceVersion":"42","generation":3,"creationTimestamp":"2026-12-05T00:00:00Z","labels":{"app":"web"},"annotations":{"a":"1"},"managedFields":[{"manager":"m"}]},"spec":{"replicas":2},"status":{"replicas":2}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop","uid":"u-2","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"a\":\"1\"}}","b":"2"}},"data":{"a":"1"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","uid":"u-3","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"data":{"a":"1"}}`,
	} {
		decoded, _, err := decodeLive([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		whole := &unstructured.Unstructured{}
		if err := whole.UnmarshalJSON([]byte(in)); err != nil {
			t.Fatal(err)
		}
		want := normalize(whole)
		l := &unstructured.Unstructured{Object: decoded}
		got := normalizeLive(l)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: normalizeLive (-normalize +normalizeLive):\n%s", whole.GetName(), diff)
		}
		if l.GetKind() != whole.GetKind() || l.GetName() != whole.GetName() || l.GetNamespace() != whole.GetNamespace() ||
			!cmp.Equal(l.GetLabels(), whole.GetLabels()) || !cmp.Equal(l.GetAnnotations(), whole.GetAnnotations()) {
			t.Errorf("%s: the live object after normalizeLive has kind %q, name %q, namespace %q, labels %v, annotations %v; want them as listed",
				whole.GetName(), l.GetKind(), l.GetName(), l.GetNamespace(), l.GetLabels(), l.GetAnnotations())
		}
	}
}
