package notify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry bounds how a request to Slack or PagerDuty is retried when the
// server answers 429 Too Many Requests or a 5xx.
type Retry struct {
	// Attempts is how many times a request is sent in all; 1 sends it once.
	Attempts int
	// Backoff is the first wait when the server gives no Retry-After; it
	// doubles with each attempt.
	Backoff time.Duration
	// MaxWait caps one wait. When Retry-After asks for longer, the send
	// fails at once and the next scan tries again.
	MaxWait time.Duration
}

// DefaultRetry sends a request at most three times and waits at most 30s.
func DefaultRetry() Retry {
	return Retry{Attempts: 3, Backoff: time.Second, MaxWait: 30 * time.Second}
}

// retryTransport retries requests answered with 429 or 5xx, honouring
// Retry-After (seconds or an HTTP date, RFC 9110 section 10.2.3). Errors
// before an answer (connection refused, timeouts) are not retried: the
// request may have arrived, and a Slack message must not be posted twice.
type retryTransport struct {
	base  http.RoundTripper
	retry Retry
	// timeout bounds each attempt, as http.Client.Timeout would bound them
	// all, waits included; 0 for none.
	timeout time.Duration
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
	log     *slog.Logger
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	getBody := req.GetBody
	if req.Body != nil && getBody == nil {
		data, err := io.ReadAll(req.Body)
		if cerr := req.Body.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("read the request body: %w", err)
		}
		getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(data))
	}
	attempts := max(t.retry.Attempts, 1)
	for attempt := 1; ; attempt++ {
		r := req
		if attempt > 1 && getBody != nil {
			body, err := getBody()
			if err != nil {
				return nil, err
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		resp, err := t.attempt(r)
		if err != nil || !retryable(resp.StatusCode) || attempt >= attempts {
			return resp, err
		}
		wait, ok := t.wait(resp, attempt)
		if !ok {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		// Only the host: a webhook URL's path is its credential.
		t.log.LogAttrs(req.Context(), slog.LevelWarn, "notify: retrying",
			slog.String("host", req.URL.Host), slog.Int("status", resp.StatusCode),
			slog.Int("attempt", attempt), slog.Duration("wait", wait))
		if err := t.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// attempt sends r once within t.timeout; the timer ends when the body is
// closed.
func (t *retryTransport) attempt(r *http.Request) (*http.Response, error) {
	if t.timeout <= 0 {
		return t.base.RoundTrip(r)
	}
	ctx, cancel := context.WithTimeout(r.Context(), t.timeout)
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// wait is how long to wait before the next attempt; false when the server
// asked for longer than MaxWait.
func (t *retryTransport) wait(resp *http.Response, attempt int) (time.Duration, bool) {
	if d, ok := retryAfter(resp.Header.Get("Retry-After"), t.now()); ok {
		return d, d <= t.retry.MaxWait
	}
	d := t.retry.Backoff << (attempt - 1)
	if d <= 0 || d > t.retry.MaxWait {
		d = t.retry.MaxWait
	}
	return d, true
}

// retryAfter parses a Retry-After value: delay-seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 1<<31)) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// sleepContext waits d or until ctx ends.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
