package notify

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"seconds", "7", 7 * time.Second, true},
		{"zero seconds", "0", 0, true},
		{"an HTTP date", "Wed, 01 Jul 2026 12:00:30 GMT", 30 * time.Second, true},
		{"a date in the past waits nothing", "Wed, 01 Jul 2026 11:00:00 GMT", 0, true},
		{"absent", "", 0, false},
		{"garbage", "soon", 0, false},
		{"negative", "-5", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryAfter(tt.value, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The client's Timeout bounds each attempt: a Retry-After wait longer than
// it does not time the request out.
func TestRetryWaitIsNotCountedInTheTimeout(t *testing.T) {
	f := newFakeAPI(t)
	f.fail(pathEvents, answer{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"}})
	hc := f.srv.Client()
	hc.Timeout = 500 * time.Millisecond
	rt := &retryTransport{base: hc.Transport, retry: DefaultRetry(), timeout: hc.Timeout, now: time.Now, sleep: sleepContext, log: slog.New(slog.DiscardHandler)}
	hc.Transport, hc.Timeout = rt, 0
	ev := resolveEvent(item{dedupKey: "driftscan/x"}, testSecrets["PD_KEY_WEB"])
	if err := NewPagerDuty(config.PagerDuty{EventsURL: f.srv.URL}, hc).Send(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	if reqs := f.take(); len(reqs) != 2 {
		t.Errorf("%d requests, want the 429 and its retry", len(reqs))
	}
}
