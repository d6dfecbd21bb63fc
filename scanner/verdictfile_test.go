package scanner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// verdictFileSeeds are cache files as the scan writes them and not.
var verdictFileSeeds = []string{
	`{"format":1,"build":"b","server":"https://127.0.0.1:6443 v1.37.2","verdicts":[{"k":"ConfigMap","ns":"shop","n":"web","git":"e160","uid":"fbb6","rv":"242","at":1796176180},{"g":"apps","k":"Deployment","ns":"shop","n":"web","git":"87","uid":"c2","rv":"241","owner":"team-web","dismissed":{"defaulted":4,"builtin":1},"ctx":"ab","at":1796176181}]}`,
	` { "format" : 1 , "verdicts" : [ { "k" : "A\u00e9\"\\" , "dismissed" : { "webh\u006fok" : 2 } } ] , "other" : [1, {"x": null}] } `,
	`{"Format":1,"VERDICTS":[{"K":"ConfigMap","N\u0073":"shop","Git":"x","nS":"y","AT":2}]}`,
	`{"format":1,"verdicts":null}`,
	`{"format":null,"build":null,"verdicts":[{"k":null,"at":null,"dismissed":null}]}`,
	`{"format":"1"}`,
	`{"format":1.5}`,
	`{"verdicts":[{"at":"x"}]}`,
	`{"verdicts":[null]}`,
	`{"verdicts":{}}`,
	`{"verdicts":[{"dismissed":{"a":1.0}}]}`,
	`{"verdicts":[{"dismissed":[]}]}`,
	`{"format":1,"verdicts":[{"k":"ConfigMap"`,
	// Bytes that are not UTF-8, in a string with an escape and without
	// one: encoding/json reads each as U+FFFD (jsoniter, which the
	// reader replaced, kept them; found by FuzzVerdictFile).
	"{\"format\":1,\"verdicts\":[{\"k\":\"A9\xb7\\u00e9\\\"\\\\\",\"dismissed\":{\"webh\\u006fok\":2}}],\"other\":[1,{\"x\":null}]}",
	"{\"build\":\"b\xff\xc3\",\"verdicts\":[{\"n\":\"web\xed\xa0\x80\",\"dismissed\":{\"w\xb7\":2}}]}",
	`{"format":1} {}`,
	`[]`,
	``,
}

// TestTheVerdictFileReadsAsJSONDoes: whatever decodeVerdictFile reads,
// encoding/json reads the same, and a file either refuses, the
// other does too, but for the few forms no scan writes (a verdict that is
// null).
func TestTheVerdictFileReadsAsJSONDoes(t *testing.T) {
	for i, seed := range verdictFileSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkVerdictFile(t, []byte(seed), true) })
	}
}

func checkVerdictFile(t *testing.T, data []byte, refusalsAlike bool) {
	t.Helper()
	got, err := decodeVerdictFile(data)
	var want verdictFile
	wantErr := json.Unmarshal(data, &want)
	switch {
	case err == nil && wantErr != nil:
		t.Fatalf("%q: read %+v, encoding/json refused: %v", data, got, wantErr)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%q: read %+v, encoding/json %+v", data, got, want)
	case err != nil && wantErr == nil && refusalsAlike && !reflect.DeepEqual(want.Verdicts, []verdict{{}}):
		t.Fatalf("%q: refused (%v), encoding/json read %+v", data, err, want)
	}
	if err == nil {
		checkVerdictFileWritten(t, got)
	}
}

// checkVerdictFileWritten: encodeVerdictFile writes file as json.Marshal
// does, byte for byte, and decodeVerdictFile reads it back as it was.
func checkVerdictFileWritten(t *testing.T, file verdictFile) {
	t.Helper()
	got := encodeVerdictFile(file)
	want, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%+v written as\n%s\njson.Marshal writes\n%s", file, got, want)
	}
	back, err := decodeVerdictFile(got)
	if err != nil {
		t.Fatalf("%s does not read back: %v", got, err)
	}
	var again verdictFile
	if err := json.Unmarshal(want, &again); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, again) {
		t.Fatalf("%s read back as %+v, encoding/json reads %+v", got, back, again)
	}
}

// TestTheVerdictFileIsWrittenAsJSONWritesIt holds the file's writer to
// json.Marshal on what the API server names objects with and what it never
// does: escapes, HTML, line separators, bytes that are not UTF-8, empty
// and nil dismissals and lists.
func TestTheVerdictFileIsWrittenAsJSONWritesIt(t *testing.T) {
	odd := []string{"", "web-0", "a\"b", `back\slash`, "tab\there", "nl\n", "\x00\x1f\x7f", "<script>&amp;</script>",
		"é ü 日本", "a<b", "a>b", "a&b", "\x7f", "\x1f", "line\u2028sep\u2029", "bad\xffutf8\xc3", "\xed\xa0\x80", "emoji \U0001F600"}
	var files []verdictFile
	for _, s := range odd {
		files = append(files, verdictFile{Format: 1, Build: s, Server: s, Verdicts: []verdict{
			{Group: s, Kind: s, Namespace: s, Name: s, Git: s, UID: s, ResourceVersion: s, Owner: s, Context: s, At: -7,
				Dismissed: report.Dismissed{report.Reason(s): 1, "defaulted": 3, "builtin": 0}},
			{Kind: "ConfigMap", Name: s, Dismissed: report.Dismissed{}},
		}})
	}
	files = append(files, verdictFile{}, verdictFile{Verdicts: []verdict{}}, verdictFile{Format: -1, Verdicts: []verdict{{}}})
	for i, f := range files {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkVerdictFileWritten(t, f) })
	}
}

// TestTheVerdictFileReadsWhatSaveWrites: a file save wrote reads back as
// the verdicts kept.
func TestTheVerdictFileReadsWhatSaveWrites(t *testing.T) {
	dir := t.TempDir()
	v, err := openVerdicts(dir, "server v1", nowForTest)
	if err != nil {
		t.Fatal(err)
	}
	kept := []verdict{
		{Kind: "ConfigMap", Namespace: "shop", Name: "web\t\"quoted\" é", Git: "g1", UID: "u1", ResourceVersion: "1"},
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Git: "g2", UID: "u2", ResourceVersion: "2", Owner: "team",
			Dismissed: report.Dismissed{"defaulted": 3, "webhook": 1}, Context: "c"},
	}
	for _, e := range kept {
		v.record(e)
	}
	if err := v.save(); err != nil {
		t.Fatal(err)
	}
	again, err := openVerdicts(dir, "server v1", nowForTest)
	if err != nil {
		t.Fatal(err)
	}
	again.link(declaredOf(kept), len(kept))
	for i, e := range kept {
		e.At = nowForTest.Unix()
		if got := again.lookup(i, e.Git, e.UID, e.ResourceVersion); got == nil || !reflect.DeepEqual(*got, e) {
			t.Errorf("read back %+v, want %+v", got, e)
		}
	}
}

func FuzzVerdictFile(f *testing.F) {
	for _, seed := range verdictFileSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkVerdictFile(t, data, false) })
}

var nowForTest = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// TestGitHashNamesEveryPartApart checks the key of Git's side of a verdict:
// a change to any part it is made of gives another key, and so does a byte
// moved from one part to the next (each part is tagged with its length), so
// no two Git sides that compare differently can share a cached verdict.
func TestGitHashNamesEveryPartApart(t *testing.T) {
	type parts struct {
		content string
		gvk     schema.GroupVersionKind
		listed  schema.GroupVersionResource
		schema  string
		applied config.AppliedAs
		owner   string
	}
	hash := func(p parts) string { return gitHash("", p.content, p.gvk, p.listed, p.schema, p.applied, p.owner) }
	base := parts{"parsed abc#0", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "/openapi/v3/apis/apps/v1?hash=1", config.AppliedAsIs, "team"}
	changed := map[string]func(*parts){
		"content":          func(p *parts) { p.content = "parsed abd#0" },
		"group":            func(p *parts) { p.gvk.Group = "extensions" },
		"version":          func(p *parts) { p.gvk.Version = "v1beta1" },
		"kind":             func(p *parts) { p.gvk.Kind = "StatefulSet" },
		"listed group":     func(p *parts) { p.listed.Group = "extensions" },
		"listed version":   func(p *parts) { p.listed.Version = "v1beta1" },
		"listed resource":  func(p *parts) { p.listed.Resource = "statefulsets" },
		"schema":           func(p *parts) { p.schema = "/openapi/v3/apis/apps/v1?hash=2" },
		"applier":          func(p *parts) { p.applied = config.AppliedAsFlux },
		"owner label":      func(p *parts) { p.owner = "teams" },
		"a byte moved on":  func(p *parts) { p.gvk.Version, p.gvk.Kind = "v1D", "eployment" },
		"a byte moved off": func(p *parts) { p.listed.Resource, p.schema = "deployments/", "openapi/v3/apis/apps/v1?hash=1" },
	}
	want := hash(base)
	if len(want) != 64 {
		t.Fatalf("gitHash = %q, want 64 hex digits", want)
	}
	if again := hash(base); again != want {
		t.Fatalf("gitHash of the same parts: %q then %q", want, again)
	}
	if split := gitHash("parsed ", "abc#0", base.gvk, base.listed, base.schema, base.applied, base.owner); split != want {
		t.Fatalf("gitHash of the content in two pieces = %q, of it whole %q", split, want)
	}
	for name, change := range changed {
		p := base
		change(&p)
		if got := hash(p); got == want {
			t.Errorf("%s changed, gitHash stayed %q", name, got)
		}
	}
	for name, p := range map[string]parts{"no content hash": {schema: base.schema}, "no schema": {content: base.content}} {
		if got := hash(p); got != "" {
			t.Errorf("%s: gitHash = %q, want \"\" (nothing cached)", name, got)
		}
	}
}

// TestSaveWritesWhatIsKeptInKeyOrder: save writes the verdicts reused and
// the ones recorded, one for each object (a recorded one in place of the
// one read on it) and in key order, whether the file it read was in that
// order (as save writes it) or in another; what was not reused goes.
func TestSaveWritesWhatIsKeptInKeyOrder(t *testing.T) {
	at := nowForTest.Unix()
	cm := func(name, rv string) verdict {
		return verdict{Kind: "ConfigMap", Namespace: "shop", Name: name, Git: "g", UID: "u-" + name, ResourceVersion: rv, At: at}
	}
	for _, order := range []string{"in key order", "in another order"} {
		t.Run(order, func(t *testing.T) {
			read := []verdict{cm("b", "1"), cm("d", "1"), cm("f", "1"), cm("h", "1")}
			if order != "in key order" {
				read = []verdict{read[2], read[0], read[3], read[1]}
			}
			dir := t.TempDir()
			data := encodeVerdictFile(verdictFile{Format: verdictFormat, Build: render.BuildIdentity(), Server: "server v1", Verdicts: read})
			if err := os.WriteFile(filepath.Join(dir, verdictFileName), data, 0o600); err != nil {
				t.Fatal(err)
			}
			v, err := openVerdicts(dir, "server v1", nowForTest)
			if err != nil {
				t.Fatal(err)
			}
			// The scan's objects: a to h; it reuses b, f and h, finds d
			// changed, and a, e and i new (g is gone from Git).
			names := []string{"a", "b", "d", "e", "f", "h", "i"}
			declared := map[objectKey]int{}
			for i, n := range names {
				declared[cm(n, "").key()] = i
			}
			v.link(declared, len(names))
			for _, n := range []string{"b", "f", "h"} {
				if v.lookup(declared[cm(n, "").key()], "g", "u-"+n, "1") == nil {
					t.Fatalf("no verdict read on %s", n)
				}
				v.reuse(declared[cm(n, "").key()])
			}
			for _, e := range []verdict{cm("i", "2"), cm("d", "2"), cm("a", "2"), cm("e", "2")} {
				v.record(e)
			}
			if err := v.save(); err != nil {
				t.Fatal(err)
			}
			data, err = os.ReadFile(filepath.Join(dir, verdictFileName))
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeVerdictFile(data)
			if err != nil {
				t.Fatal(err)
			}
			want := []verdict{cm("a", "2"), cm("b", "1"), cm("d", "2"), cm("e", "2"), cm("f", "1"), cm("h", "1"), cm("i", "2")}
			if diff := cmp.Diff(want, got.Verdicts, cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("saved (-want +got):\n%s", diff)
			}
		})
	}
}
