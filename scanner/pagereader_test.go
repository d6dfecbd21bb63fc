package scanner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readPageEncodingJSON is readPage as it was with encoding/json's Decoder:
// the reference the page reader must agree with.
func readPageEncodingJSON(r io.Reader, gvk schema.GroupVersionKind, fn func(*listItem) error) (string, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return "", err
	}
	apiVersion, kind := gvk.GroupVersion().String(), gvk.Kind
	cont := ""
	var raw json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		key, _ := tok.(string)
		switch key {
		case "apiVersion":
			if err := dec.Decode(&apiVersion); err != nil {
				return "", err
			}
		case "kind":
			var listKind string
			if err := dec.Decode(&listKind); err != nil {
				return "", err
			}
			if k, ok := strings.CutSuffix(listKind, "List"); ok && k != "" {
				kind = k
			}
		case "metadata":
			var m struct {
				Continue string `json:"continue"`
			}
			if err := dec.Decode(&m); err != nil {
				return "", err
			}
			cont = m.Continue
		case "items":
			tok, err := dec.Token()
			if err != nil {
				return "", err
			}
			if tok == nil {
				continue
			}
			if d, ok := tok.(json.Delim); !ok || d != '[' {
				return "", fmt.Errorf("items: want an array, got %v", tok)
			}
			for dec.More() {
				if err := dec.Decode(&raw); err != nil {
					return "", err
				}
				it := listItem{raw: raw}
				if err := readHead(raw, nil, &it.head); err != nil {
					return "", err
				}
				if it.head.Kind == "" && it.head.APIVersion == "" {
					it.head.Kind, it.head.APIVersion = kind, apiVersion
				}
				if err := fn(&it); err != nil {
					return "", err
				}
			}
			if err := expectDelim(dec, ']'); err != nil {
				return "", err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", err
			}
		}
	}
	return cont, expectDelim(dec, '}')
}

// pageRead is what reading a page gave: the continue token, each item's
// bytes and head, or that it failed.
type pageRead struct {
	cont   string
	items  []string
	heads  []itemHead
	failed bool
}

func readWith(read func(io.Reader, schema.GroupVersionKind, func(*listItem) error) (string, error), r io.Reader) pageRead {
	var got pageRead
	cont, err := read(r, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, func(it *listItem) error {
		got.items = append(got.items, string(it.raw))
		got.heads = append(got.heads, it.head)
		return nil
	})
	got.cont, got.failed = cont, err != nil
	if got.failed {
		return pageRead{failed: true}
	}
	return got
}

var pageSeeds = []string{
	string(benchPage(3)),
	`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":"eyJ2Ijo"},"items":[{"metadata":{"name":"a","namespace":"n"}},{"metadata":{"name":"b"}}]}`,
	`{"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"Route","metadata":{"name":"r"},"spec":{"n":-1.5e+3,"t":true,"f":false,"z":null,"s":"a\"b\\u00e9\n"}}],"kind":"RouteList","metadata":{"continue":""}}`,
	` { "items" : null , "metadata" : { } } `,
	`{"items":[]}`,
	`{"items":[1]}`,
	`{"items":[{"metadata":{"name":"x"}}],}`,
	`{"items":[{"metadata":{"name":"x"}} {"a":1}]}`,
	`{"it\u0065ms":[{"metadata":{"name":"x"}}]}`,
	`{"items":[{"a":01}]}`,
	`{"items":[{"a":"` + "\x01" + `"}]}`,
	`{"items":[{"a":"\x"}]}`,
	`{"items":[{"a":tru}]}`,
	`{"items":[{"a":[1,2,]}]}`,
	`{"items":[{"a":1.}]}`,
	`{"items":[{"a":-}]}`,
	`{"items":[{"metadata":{"name":"x"}}]} trailing`,
	`{"kind":5,"items":[]}`,
	`{"metadata":{"continue":7}}`,
	`{"items":{"a":1}}`,
	`[`,
	``,
	`{"items":[{"a":"` + strings.Repeat("é", 40000) + `"}]}`,
	`{"items":[` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `]}`,
	`{"items":[` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `]}`,
}

// TestThePageReaderReadsAsEncodingJSONDoes: on pages well formed and not,
// read whole, a byte at a time and cut off anywhere, the page reader
// hands on the items, heads and continue token encoding/json's Decoder
// did, and fails where it failed.
func TestThePageReaderReadsAsEncodingJSONDoes(t *testing.T) {
	for i, page := range pageSeeds {
		checkPageReader(t, fmt.Sprintf("seed %d", i), []byte(page))
	}
	big := benchPage(300) // several of the reader's chunks
	checkPageReader(t, "300 Deployments", big)
	for _, cut := range []int{1, 100, pageChunk - 1, pageChunk, pageChunk + 1, len(big) / 2, len(big) - 1} {
		checkPageReader(t, fmt.Sprintf("300 Deployments cut at %d", cut), big[:cut])
	}
}

func checkPageReader(t *testing.T, name string, page []byte) {
	t.Helper()
	want := readWith(readPageEncodingJSON, bytes.NewReader(page))
	for how, r := range map[string]io.Reader{
		"whole":          bytes.NewReader(page),
		"a byte at once": iotest.OneByteReader(bytes.NewReader(page)),
		"half at once":   iotest.HalfReader(bytes.NewReader(page)),
	} {
		got := readWith(readPage, r)
		if got.failed != want.failed || got.cont != want.cont || !equalStrings(got.items, want.items) || fmt.Sprint(got.heads) != fmt.Sprint(want.heads) {
			t.Errorf("%s, read %s: failed %v, continue %q, %d items; encoding/json: failed %v, continue %q, %d items",
				name, how, got.failed, got.cont, len(got.items), want.failed, want.cont, len(want.items))
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A reader's error reaches the caller, not a syntax error in its place.
func TestThePageReaderPassesOnTheBodysError(t *testing.T) {
	page := benchPage(50)
	broken := errors.New("connection reset")
	_, err := readPage(io.MultiReader(bytes.NewReader(page[:len(page)/2]), iotest.ErrReader(broken)), schema.GroupVersionKind{Kind: "Deployment"}, func(*listItem) error { return nil })
	if !errors.Is(err, broken) {
		t.Errorf("err = %v, want the body's error", err)
	}
}

func FuzzPageReader(f *testing.F) {
	for _, s := range pageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		want := readWith(readPageEncodingJSON, bytes.NewReader(page))
		for how, r := range map[string]io.Reader{"whole": bytes.NewReader(page), "a byte at once": iotest.OneByteReader(bytes.NewReader(page))} {
			got := readWith(readPage, r)
			if got.failed != want.failed || got.cont != want.cont || !equalStrings(got.items, want.items) || fmt.Sprint(got.heads) != fmt.Sprint(want.heads) {
				t.Fatalf("read %s: failed %v, continue %q, items %q; encoding/json: failed %v, continue %q, items %q",
					how, got.failed, got.cont, got.items, want.failed, want.cont, want.items)
			}
		}
	})
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q in the LIST response, got %v", want, tok)
	}
	return nil
}
