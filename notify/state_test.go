package notify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func key(name string) Key {
	return Key{Cluster: "prod-eu-1", App: "web", Kind: "ConfigMap", Namespace: "prod-web", Name: name}
}

func delivery(fp string, at time.Time) Delivery {
	return Delivery{Fingerprint: fp, Owner: "team-web", Target: "#web-oncall", SentAt: at.UTC()}
}

var cmpState = cmpopts.IgnoreUnexported(State{})

func TestParseStateRef(t *testing.T) {
	tests := []struct {
		in      string
		want    StateRef
		wantErr bool
	}{
		{"configmap:driftscan/notify-state", StateRef{Namespace: "driftscan", Name: "notify-state"}, false},
		{"file:.driftscan/state.json", StateRef{Path: ".driftscan/state.json"}, false},
		{"file:/abs/state.json", StateRef{Path: "/abs/state.json"}, false},
		{"configmap:notify-state", StateRef{}, true},
		{"configmap:a/b/c", StateRef{}, true},
		{"file:", StateRef{}, true},
		{"state.json", StateRef{}, true},
		{"secret:a/b", StateRef{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseStateRef(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseStateRef(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err == nil && got.String() != tt.in {
				t.Errorf("String() = %q, want %q back", got.String(), tt.in)
			}
		})
	}
}

func TestFileStoreSavesAndLoads(t *testing.T) {
	ctx := t.Context()
	store := &FileStore{Path: filepath.Join(t.TempDir(), "sub", "state.json")}
	st, err := store.Load(ctx)
	if err != nil {
		t.Fatalf("Load of a missing file: %v", err)
	}
	st.Record(key("b"), ChannelSlack, delivery("sha256:1", testNow))
	st.Record(key("a"), ChannelPagerDuty, delivery("sha256:2", testNow))
	st.Record(key("c"), ChannelSlack, delivery("sha256:3", testNow))
	st.Forget(key("c"), ChannelSlack, testNow)
	if err := store.Save(ctx, st); err != nil {
		t.Fatal(err)
	}
	got, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, got, cmpState); diff != "" {
		t.Errorf("loaded state (-saved +loaded):\n%s", diff)
	}
	if names := []string{got.Objects[0].Name, got.Objects[1].Name}; len(got.Objects) != 2 || names[0] != "a" || names[1] != "b" {
		t.Errorf("objects %+v, want a and b in order (c forgotten)", got.Objects)
	}
	entries, _ := os.ReadDir(filepath.Dir(store.Path))
	if len(entries) != 1 {
		t.Errorf("the folder holds %d files, want only the state (no temporary file left)", len(entries))
	}
}

func TestFileStoreKeepsACorruptStateAside(t *testing.T) {
	tests := []struct {
		name, content, why string
	}{
		{"a torn file", `{"apiVersion":"driftscan.dev/v1alpha1","kind":"NotifyS`, "unexpected end of JSON input"},
		{"another tool's JSON", `{"apiVersion":"v1","kind":"ConfigMap","objects":[]}`, `want apiVersion driftscan.dev/v1alpha1 and kind NotifyState`},
		{"not JSON at all", "slack: sent\n", "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			store := &FileStore{Path: path, Now: func() time.Time { return testNow }}
			st, err := store.Load(t.Context())
			var corrupt *CorruptStateError
			if !errors.As(err, &corrupt) {
				t.Fatalf("Load = %v, want a *CorruptStateError", err)
			}
			kept := path + ".corrupt-20260701-120030"
			if corrupt.KeptAs != kept || corrupt.Ref != "file:"+path || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("error %q (kept as %q), want it to name %s, %s and say %q", err, corrupt.KeptAs, path, kept, tt.why)
			}
			if st == nil || len(st.Objects) != 0 {
				t.Errorf("state %+v, want an empty one beside the error", st)
			}
			if data, err := os.ReadFile(kept); err != nil || string(data) != tt.content {
				t.Errorf("kept aside: %q, %v; want the content untouched", data, err)
			}
			// A second corrupt file in the same second is kept beside the first.
			if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Load(t.Context()); !errors.As(err, &corrupt) || corrupt.KeptAs != kept+"-1" {
				t.Errorf("second corrupt file: %v, want it kept as %s-1", err, kept)
			}
			if data, _ := os.ReadFile(kept); string(data) != tt.content {
				t.Errorf("the first copy was overwritten")
			}
		})
	}
}

// Two scans that loaded the same state and saved one after the other both
// keep their changes; a change loses only to a newer delivery.
func TestFileStoreMergesWhatAnotherScanSaved(t *testing.T) {
	ctx := t.Context()
	store := &FileStore{Path: filepath.Join(t.TempDir(), "state.json")}
	base, _ := store.Load(ctx)
	base.Record(key("shared"), ChannelSlack, delivery("sha256:old", testNow))
	base.Record(key("resolved-by-b"), ChannelSlack, delivery("sha256:r", testNow))
	if err := store.Save(ctx, base); err != nil {
		t.Fatal(err)
	}
	a, _ := store.Load(ctx)
	b, _ := store.Load(ctx)
	a.Record(key("from-a"), ChannelSlack, delivery("sha256:a", testNow.Add(time.Minute)))
	a.Record(key("shared"), ChannelSlack, delivery("sha256:a-newer", testNow.Add(2*time.Minute)))
	b.Record(key("from-b"), ChannelPagerDuty, delivery("sha256:b", testNow.Add(time.Minute)))
	b.Record(key("shared"), ChannelSlack, delivery("sha256:b-older", testNow.Add(time.Minute)))
	b.Forget(key("resolved-by-b"), ChannelSlack, testNow.Add(time.Minute))
	if err := store.Save(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	summary := map[string]string{}
	for _, e := range got.Objects {
		for ch, d := range map[Channel]*Delivery{ChannelSlack: e.Slack, ChannelPagerDuty: e.PagerDuty} {
			if d != nil {
				summary[e.Name+"/"+string(ch)] = d.Fingerprint
			}
		}
	}
	want := map[string]string{"from-a/slack": "sha256:a", "from-b/pagerduty": "sha256:b", "shared/slack": "sha256:a-newer"}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("merged state (-want +got):\n%s", diff)
	}
}

// A state a newer driftscan wrote, with fields this one does not know, is
// read, not set aside.
func TestFileStoreReadsANewerState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	newer := `{"apiVersion":"driftscan.dev/v1alpha1","kind":"NotifyState","compression":"none","objects":[
	  {"cluster":"prod","app":"web","kind":"ConfigMap","name":"a","teams":{"id":"T1"},"slack":{"fingerprint":"sha256:1","owner":"team-web","target":"#web","sentAt":"2026-07-01T12:00:00Z","thread":"1.2"}}]}`
	if err := os.WriteFile(path, []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := (&FileStore{Path: path}).Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Get(Key{Cluster: "prod", App: "web", Kind: "ConfigMap", Name: "a"}, ChannelSlack); d == nil || d.Fingerprint != "sha256:1" {
		t.Errorf("delivery %+v, want the saved one", d)
	}
}
