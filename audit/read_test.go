package audit

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kept is an indexed event reduced to what these tests assert.
type kept struct {
	ID, Verb, User, Manager string
	Known                   bool
	Object                  ObjectRef
	Body, Webhook           bool
}

func keptEvents(ix *Index) []kept {
	var out []kept
	for _, evs := range ix.events {
		for _, ev := range evs {
			out = append(out, kept{ev.AuditID[len(ev.AuditID)-4:], ev.Verb, ev.User, ev.Manager, ev.ManagerKnown, ev.Object, ev.Body != nil, len(ev.Webhooks) > 0})
		}
	}
	sortKept(out)
	return out
}

func sortKept(k []kept) {
	for i := range k {
		for j := i + 1; j < len(k); j++ {
			if k[j].ID < k[i].ID {
				k[i], k[j] = k[j], k[i]
			}
		}
	}
}

var (
	web      = ObjectRef{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"}
	api      = ObjectRef{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "api"}
	webScale = ObjectRef{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", Subresource: "scale"}
)

// The events of testdata/native.log that can explain a finding; the
// others are a RequestReceived stage, a get, a dry run, a 409 and
// driftscan's own list.
var nativeKept = []kept{
	{"0001", "patch", "alice@example.com", "kubectl-edit", true, web, true, false},
	{"0006", "patch", "system:serviceaccount:ci:deployer", "kubectl-set", true, api, true, false},
	{"0007", "update", "system:serviceaccount:kube-system:horizontal-pod-autoscaler", "kube-controller-manager", true, webScale, true, false},
	{"0008", "create", "system:serviceaccount:argocd:argocd-application-controller", "argocd-controller", true, web, true, true},
}

func read(t *testing.T, paths ...string) *Index {
	t.Helper()
	opts := DefaultOptions()
	opts.Paths = paths
	return Read(t.Context(), opts)
}

func TestEachFormatKeepsTheSameEvents(t *testing.T) {
	cases := []struct {
		file       string
		read, kept int64
		want       []kept
	}{
		{"native.log", 9, 4, nativeKept},
		{"eks-subscription.json", 9, 4, nativeKept},
		{"eks-s3-export.txt", 9, 4, nativeKept},
		// GKE entries carry no request URI: the manager is the user
		// agent's program, and a dry run (0003) cannot be told apart.
		{"gke-entries.jsonl", 7, 5, []kept{
			{"0001", "patch", "alice@example.com", "kubectl", false, web, true, false},
			{"0003", "patch", "bob@example.com", "kubectl", false, web, true, false},
			{"0006", "patch", "system:serviceaccount:ci:deployer", "kubectl", false, api, true, false},
			{"0007", "update", "system:serviceaccount:kube-system:horizontal-pod-autoscaler", "kube-controller-manager", false, webScale, true, false},
			{"0008", "create", "system:serviceaccount:argocd:argocd-application-controller", "argocd-application-controller", false, web, true, true},
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			ix := read(t, filepath.Join("testdata", c.file))
			if w := ix.Warnings(); len(w) > 0 {
				t.Errorf("warnings: %q", w)
			}
			if diff := cmp.Diff(c.want, keptEvents(ix)); diff != "" {
				t.Errorf("kept events (-want +got):\n%s", diff)
			}
			if st := ix.Stats(); st.Read != c.read || st.Kept != c.kept {
				t.Errorf("read %d kept %d, want %d and %d", st.Read, st.Kept, c.read, c.kept)
			}
		})
	}
}

func TestImpersonationNamesTheImpersonatedUser(t *testing.T) {
	ev := read(t, "testdata/native.log").Events(api)[0]
	if ev.User != "system:serviceaccount:ci:deployer" || ev.ImpersonatedBy != "admin" || !strings.Contains(strings.Join(ev.Groups, ","), "system:serviceaccounts:ci") {
		t.Errorf("user %q groups %v impersonated by %q", ev.User, ev.Groups, ev.ImpersonatedBy)
	}
}

func TestAFolderOfRotatedFilesIsReadWholeAndOnce(t *testing.T) {
	data, err := os.ReadFile("testdata/native.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(strings.Join(lines[:5], "")))
	_ = zw.Close()
	// What the API server leaves with --audit-log-compress: the older
	// events in a gzip file (its name is no hint: the magic bytes are), the
	// newer in audit.log, and one event in both (rotated while read).
	for name, content := range map[string][]byte{
		"audit-2026-11-30T11-58-30.000.log.gz": gz.Bytes(),
		"audit.log":                            []byte(strings.Join(lines[4:], "")),
		".audit.log.swp":                       []byte("not read"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ix := read(t, dir)
	if diff := cmp.Diff(nativeKept, keptEvents(ix)); diff != "" {
		t.Errorf("kept events (-want +got):\n%s", diff)
	}
	if w := ix.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
	for _, ev := range ix.Events(web) {
		if strings.HasSuffix(ev.AuditID, "0001") && !strings.HasSuffix(ev.Source, ".log.gz:2") {
			t.Errorf("source %q, want line 2 of the gzip file", ev.Source)
		}
	}
}

func TestOnlyTheScannedObjectsAreKept(t *testing.T) {
	opts := DefaultOptions()
	opts.Paths = []string{"testdata/native.log"}
	opts.Keep = func(o ObjectRef) bool { return o == api }
	ix := Read(t.Context(), opts)
	if st := ix.Stats(); st.Read != 9 || st.Kept != 1 || len(ix.Events(web)) != 0 {
		t.Errorf("read %d kept %d (web: %d events), want 9 read and api's one kept", st.Read, st.Kept, len(ix.Events(web)))
	}
}

func TestReadWarnsAndKeepsWhatItCan(t *testing.T) {
	good, err := os.ReadFile("testdata/native.log")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		data    string
		warning string
		kept    int64
	}{
		{"an empty file", "", "", 0},
		{"a file of something else", "hello\n", "1 entries skipped that are not valid JSON or not audit events (first at %s:1", 0},
		{"a line too long", strings.Repeat("x", 2<<20) + "\n" + string(good), "line longer than 1048576 bytes", 4},
		{"JSON that is no audit event", `{"kind":"Pod","apiVersion":"v1"}` + "\n" + string(good), "(first at %s:1: not an audit event", 4},
		{"valid JSON with no event", `{"kind":"Pod","apiVersion":"v1"}` + "\n", "1 entries skipped", 0},
		{"a pretty page cut off", "{\n  \"events\": [\n" + `{"timestamp": 1`, "cut off at the end", 0},
		{"a pretty array", "[\n" + strings.ReplaceAll(strings.TrimSpace(string(good)), "\n", ",\n") + "\n]\n", "", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(p, []byte(c.data), 0o600); err != nil {
				t.Fatal(err)
			}
			opts := DefaultOptions()
			opts.Paths, opts.MaxLine = []string{p}, 1<<20
			ix := Read(t.Context(), opts)
			want := c.warning
			if strings.Contains(want, "%s") {
				want = strings.ReplaceAll(want, "%s", p)
			}
			switch w := ix.Warnings(); {
			case want == "" && len(w) > 0:
				t.Errorf("warnings %q, want none", w)
			case want != "" && (len(w) != 1 || !strings.Contains(w[0], want)):
				t.Errorf("warnings %q, want one saying %q", w, want)
			}
			if got := ix.Stats().Kept; got != c.kept {
				t.Errorf("kept %d, want %d", got, c.kept)
			}
		})
	}
}
