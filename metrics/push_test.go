package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// pushgateway is an httptest server that accepts pushes the way the
// Pushgateway does and records what it got.
type pushgateway struct {
	*httptest.Server
	status int

	mu     sync.Mutex
	method string
	path   string
	user   string
	pass   string
	body   map[string]*dto.MetricFamily
	err    error
}

func newPushgateway(t *testing.T, status int) *pushgateway {
	t.Helper()
	pg := &pushgateway{status: status}
	pg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pg.mu.Lock()
		defer pg.mu.Unlock()
		pg.method, pg.path = r.Method, r.URL.EscapedPath()
		pg.user, pg.pass, _ = r.BasicAuth()
		pg.body = map[string]*dto.MetricFamily{}
		dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err == io.EOF {
				break
			} else if err != nil {
				pg.err = err
				break
			}
			pg.body[mf.GetName()] = mf
		}
		w.WriteHeader(pg.status)
		io.WriteString(w, http.StatusText(pg.status))
	}))
	t.Cleanup(pg.Close)
	return pg
}

func TestPushReplacesTheJobsGroupOnThePushgateway(t *testing.T) {
	pg := newPushgateway(t, http.StatusOK)
	err := Push(t.Context(), pg.URL, "driftscan", Gather(sampleReport(), endedAt), pg.Client(), map[string]string{"shard": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if pg.err != nil {
		t.Fatalf("the pushgateway could not decode the body: %v", pg.err)
	}
	if pg.method != http.MethodPut {
		t.Errorf("method %s, want PUT: a push replaces the last run's series", pg.method)
	}
	if want := "/metrics/job/driftscan/shard/2"; pg.path != want {
		t.Errorf("path %s, want %s", pg.path, want)
	}
	if pg.user != "" {
		t.Errorf("basic auth user %q sent without credentials in the URL", pg.user)
	}
	want := samples(parse(t, writeSample(t, sampleReport())))
	if diff := cmp.Diff(want, samples(pg.body)); diff != "" {
		t.Errorf("pushed series (-want +got):\n%s", diff)
	}
}

func TestPushToHostPortWithoutGroupingUsesTheJobAlone(t *testing.T) {
	pg := newPushgateway(t, http.StatusAccepted)
	hostPort := strings.TrimPrefix(pg.URL, "http://") + "/"
	if err := Push(t.Context(), hostPort, "driftscan", Gather(sampleReport(), endedAt), pg.Client(), nil); err != nil {
		t.Fatal(err)
	}
	if pg.path != "/metrics/job/driftscan" {
		t.Errorf("path %s, want /metrics/job/driftscan", pg.path)
	}
}

func TestPushSendsURLCredentialsAsBasicAuthAndNeverPrintsThem(t *testing.T) {
	pg := newPushgateway(t, http.StatusInternalServerError)
	withAuth := strings.Replace(pg.URL, "http://", "http://pusher:s3cr3t-pw@", 1)
	err := Push(t.Context(), withAuth, "driftscan", Gather(sampleReport(), endedAt), pg.Client(), nil)
	if err == nil {
		t.Fatal("a 500 from the pushgateway is not an error")
	}
	if pg.user != "pusher" || pg.pass != "s3cr3t-pw" {
		t.Errorf("basic auth %q:%q, want pusher and the password", pg.user, pg.pass)
	}
	for _, want := range []string{"push metrics to", "500", `job "driftscan"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Errorf("error prints the password: %v", err)
	}
}

func TestPushRejectsABadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://host/", "http://user:hunter2@", "http://user:hunter2@host:bad port/"} {
		err := Push(t.Context(), u, "driftscan", Gather(sampleReport(), endedAt), nil, nil)
		if err == nil {
			t.Errorf("Push(%q) = nil, want an error", u)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Push(%q) error prints the password: %v", u, err)
		}
	}
}
