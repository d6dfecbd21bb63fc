package audit_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

// editedApp is an app whose Deployment alice edited, and the audit ID of
// her request, with the audit log written.
func editedApp(t *testing.T, name string) (*app, string) {
	t.Helper()
	env.Need(t)
	a := newApp(t, nil, fmt.Sprintf(deployment, name, name, name, name))
	u := as(t, alice)
	u.Update(t, "kubectl-edit", cluster.Deployment, a.ns, name, setImage("nginx:1.26"))
	id := u.LastAuditID(t)
	env.AuditLog.Wait(t, id)
	return a, id
}

// nsLines returns the audit log's lines about namespace ns.
func nsLines(t *testing.T, ns string) []string {
	t.Helper()
	env.Need(t)
	lines, err := env.AuditLog.Lines(`"namespace":"` + ns + `"`)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func withAudit(paths ...string) func(*config.Config, *scanner.Options) {
	return func(_ *config.Config, o *scanner.Options) { o.AuditLogs = paths }
}

func TestAnEventRotatedIntoAGzipFileIsFound(t *testing.T) {
	a, id := editedApp(t, "rotated")
	// Write more than the 1 MB the log rotates at: ConfigMaps are logged
	// with their bodies.
	big := strings.Repeat("x", 300<<10)
	cm := cluster.Object(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: filler}\ndata: {v: %s}\n", big))
	for i := 0; i < 5; i++ {
		cm.Object["data"] = map[string]any{"v": big + fmt.Sprint(i)}
		env.Apply(t, "filler", a.ns, cm)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !inGzip(t, id) {
		if time.Now().After(deadline) {
			t.Fatalf("the API server never rotated request %s into a gzip file", id)
		}
		time.Sleep(100 * time.Millisecond)
	}

	f := finding(t, a.scan(nil), "Deployment", "rotated", imagePath)
	if f.Attribution.Confidence != report.ConfidenceExact || f.Attribution.AuditID != id || f.Attribution.User != alice.Name {
		t.Fatalf("attribution %+v, want alice's request %s, exact", f.Attribution, id)
	}
	if src := f.Attribution.Source; !strings.Contains(src, ".gz:") {
		t.Errorf("source = %q, want a line of a rotated gzip file", src)
	}
}

// inGzip reports whether the event of request id is in a rotated gzip file
// whose uncompressed original is gone (compression has finished).
func inGzip(t *testing.T, id string) bool {
	env.Need(t)
	files, err := env.AuditLog.Files()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range files {
		if strings.HasSuffix(f, ".log") && filepath.Base(f) != "audit.log" {
			return false // a rotated file still being compressed
		}
		if !strings.HasSuffix(f, ".gz") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		gz, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			continue
		}
		var out bytes.Buffer
		_, _ = out.ReadFrom(gz)
		found = found || strings.Contains(out.String(), `"auditID":"`+id+`"`)
	}
	return found
}

// eksPage is what `aws logs filter-log-events --log-group-name
// /aws/eks/CLUSTER/cluster --log-stream-name-prefix kube-apiserver-audit`
// prints: CloudWatch Logs entries whose message is the event.
func eksPage(t *testing.T, lines []string) []byte {
	t.Helper()
	type event struct {
		LogStreamName string `json:"logStreamName"`
		Timestamp     int64  `json:"timestamp"`
		Message       string `json:"message"`
		IngestionTime int64  `json:"ingestionTime"`
		EventID       string `json:"eventId"`
	}
	page := struct {
		Events             []event          `json:"events"`
		SearchedLogStreams []map[string]any `json:"searchedLogStreams"`
	}{SearchedLogStreams: []map[string]any{{"logStreamName": "kube-apiserver-audit-5f2c", "searchedCompletely": true}}}
	for i, l := range lines {
		var ev struct {
			StageTimestamp time.Time `json:"stageTimestamp"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		ms := ev.StageTimestamp.UnixMilli()
		page.Events = append(page.Events, event{"kube-apiserver-audit-5f2c", ms, l, ms + 900, fmt.Sprintf("3764%050d", i)})
	}
	out, err := json.MarshalIndent(page, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gkeEntries is what `gcloud logging read 'resource.type="k8s_cluster"
// logName:"cloudaudit.googleapis.com"' --format=json` prints: Cloud Audit
// Logs entries, made from the events the way GKE records them (see
// docs/audit.md).
func gkeEntries(t *testing.T, lines []string) []byte {
	t.Helper()
	var out []map[string]any
	for _, l := range lines {
		var ev struct {
			AuditID          string `json:"auditID"`
			Stage            string `json:"stage"`
			Verb             string `json:"verb"`
			User             struct{ Username string }
			ImpersonatedUser *struct{ Username string }
			SourceIPs        []string `json:"sourceIPs"`
			UserAgent        string   `json:"userAgent"`
			ObjectRef        *struct {
				Resource, Namespace, Name, APIGroup, APIVersion, Subresource string
			} `json:"objectRef"`
			RequestObject  map[string]any    `json:"requestObject"`
			StageTimestamp time.Time         `json:"stageTimestamp"`
			Annotations    map[string]string `json:"annotations"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Stage != "ResponseComplete" || ev.ObjectRef == nil {
			continue // GKE writes one entry per request
		}
		user := ev.User.Username
		if ev.ImpersonatedUser != nil {
			user = ev.ImpersonatedUser.Username
		}
		o := ev.ObjectRef
		group := o.APIGroup
		if group == "" {
			group = "core"
		}
		name := fmt.Sprintf("%s/%s/namespaces/%s/%s/%s", group, o.APIVersion, o.Namespace, o.Resource, o.Name)
		method := fmt.Sprintf("io.k8s.%s.%s.%s", group, o.APIVersion, o.Resource)
		if o.Subresource != "" {
			name += "/" + o.Subresource
			method += "." + o.Subresource
		}
		payload := map[string]any{
			"@type":              "type.googleapis.com/google.cloud.audit.AuditLog",
			"serviceName":        "k8s.io",
			"methodName":         method + "." + ev.Verb,
			"resourceName":       name,
			"authenticationInfo": map[string]any{"principalEmail": user},
			"requestMetadata":    map[string]any{"callerIp": ev.SourceIPs[0], "callerSuppliedUserAgent": ev.UserAgent},
			"status":             map[string]any{},
		}
		if ev.RequestObject != nil {
			ev.RequestObject["@type"] = group + ".k8s.io/" + o.APIVersion + "." + o.Resource
			payload["request"] = ev.RequestObject
		}
		out = append(out, map[string]any{
			"insertId":         ev.AuditID,
			"logName":          "projects/shop-prod/logs/cloudaudit.googleapis.com%2Factivity",
			"operation":        map[string]any{"id": ev.AuditID, "producer": "k8s.io", "first": true, "last": true},
			"protoPayload":     payload,
			"receiveTimestamp": ev.StageTimestamp.Add(2 * time.Second).Format(time.RFC3339Nano),
			"resource":         map[string]any{"type": "k8s_cluster", "labels": map[string]any{"cluster_name": "prod", "location": "europe-west1", "project_id": "shop-prod"}},
			"timestamp":        ev.StageTimestamp.Format(time.RFC3339Nano),
			"labels":           ev.Annotations,
		})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestEKSAndGKEExportsNameTheSamePerson(t *testing.T) {
	a, id := editedApp(t, "exported")
	lines := nsLines(t, a.ns)

	t.Run("EKS CloudWatch Logs", func(t *testing.T) {
		p := writeFile(t, "eks.json", eksPage(t, lines))
		f := finding(t, a.scan(withAudit(p)), "Deployment", "exported", imagePath)
		want := who{Confidence: report.ConfidenceExact, User: alice.Name, FieldManager: "kubectl-edit", AuditID: id}
		if got := whoOf(f.Attribution); got != want {
			t.Errorf("attribution %+v, want %+v", got, want)
		}
	})
	t.Run("GKE Cloud Audit Logs", func(t *testing.T) {
		p := writeFile(t, "gke.json", gkeEntries(t, lines))
		f := finding(t, a.scan(withAudit(p)), "Deployment", "exported", imagePath)
		// GKE records no request URI: the field manager kubectl-edit can
		// only be matched by the user agent's program, kubectl.
		want := who{Confidence: report.ConfidenceCandidate, User: alice.Name, AuditID: id}
		if got := whoOf(f.Attribution); got != want {
			t.Errorf("attribution %+v, want %+v", got, want)
		}
		if !strings.Contains(f.Attribution.Reason, "no request URI") {
			t.Errorf("reason %q does not say why it is only a candidate", f.Attribution.Reason)
		}
	})
}

func TestAnAuditLogThatIsMissingCutOffOrMalformedIsAWarning(t *testing.T) {
	a, id := editedApp(t, "damaged")
	lines := nsLines(t, a.ns)
	good := strings.Join(lines, "\n") + "\n"
	last := lines[len(lines)-1]

	// A gzip file cut off in the middle: alice's request first, then reads
	// that do not compress away.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(good))
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(zw, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%x","stage":"ResponseComplete","verb":"get","stageTimestamp":"2026-12-01T10:00:00Z"}`+"\n", sha256.Sum256([]byte(fmt.Sprint(i))))
	}
	_ = zw.Close()

	cases := []struct {
		name    string
		data    []byte // nil: the file does not exist
		warning string
		found   bool // alice's request is still read
	}{
		{name: "missing", warning: "no such file or directory"},
		{name: "truncated.log", data: []byte(good + last[:len(last)/2]), warning: "cut off at the end", found: true},
		{name: "malformed.log", data: []byte("this is not JSON\n" + good + "{\"kind\":\"Pod\"}\n"), warning: "2 entries skipped", found: true},
		{name: "truncated.log.gz", data: gz.Bytes()[:gz.Len()*3/4], warning: "cut off", found: true},
		{name: "empty-folder", data: nil, warning: "no files in it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), c.name)
			switch {
			case c.name == "empty-folder":
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
			case c.data != nil:
				p = writeFile(t, c.name, c.data)
			}
			r := a.scan(withAudit(p))
			if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0].Message, p) || !strings.Contains(r.Warnings[0].Message, c.warning) {
				t.Errorf("warnings = %q, want one naming %s and saying %q", r.Warnings, p, c.warning)
			}
			if r.HasErrors() || r.ExitCode(nil) != report.ExitDrift {
				t.Errorf("the scan failed (exit %d, errors %q): a damaged audit log must only warn", r.ExitCode(nil), r.Errors)
			}
			f := finding(t, r, "Deployment", "damaged", imagePath)
			if got := f.Attribution.AuditID == id; got != c.found {
				t.Errorf("alice's request found = %v, want %v (attribution %+v)", got, c.found, f.Attribution)
			}
		})
	}
}

func TestAnAuditLogReadFromStandardInput(t *testing.T) {
	a, id := editedApp(t, "piped")
	in := strings.NewReader(strings.Join(nsLines(t, a.ns), "\n"))
	r := a.scan(func(_ *config.Config, o *scanner.Options) { o.AuditLogs, o.AuditStdin = []string{"-"}, in })
	f := finding(t, r, "Deployment", "piped", imagePath)
	if f.Attribution.AuditID != id || f.Attribution.Confidence != report.ConfidenceExact || !strings.HasPrefix(f.Attribution.Source, "-:") {
		t.Errorf("attribution %+v, want alice's request %s read from -", f.Attribution, id)
	}
	if st := r.Stats.Audit; st == nil || st.Read == 0 || st.Kept == 0 || st.Matched != 1 {
		t.Errorf("audit stats %+v, want events read, kept and one matched", st)
	}
}
