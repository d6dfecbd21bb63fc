package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/calricon/driftscan/internal/httpca"
)

// httpAPI sends JSON requests to one forge's API with its token.
type httpAPI struct {
	kind     Kind
	base     string
	token    string
	client   *http.Client
	pageSize int
}

// httpClient trusts ca besides the system's certificates.
func httpClient(ca []byte) (*http.Client, error) {
	if len(ca) == 0 {
		return &http.Client{Timeout: 30 * time.Second}, nil
	}
	t, err := httpca.Transport(ca)
	if err != nil {
		return nil, fmt.Errorf("forge: the CA bundle %w", err)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: t}, nil
}

// maxBody bounds what is read of an answer.
const maxBody = 8 << 20

// do sends method path (relative to the base, with its query) with body as
// JSON, decodes a 2xx answer into out, and returns the answer's headers.
// Any other status is an *APIError with the forge's message.
func (a *httpAPI) do(ctx context.Context, method, path string, body, out any) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	target := path
	if !strings.HasPrefix(path, "https://") {
		target = a.base + path
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "driftscan")
	a.authorize(req)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s API %s %s: %w", a.kind, method, apiPath(req.URL), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%s API %s %s: %w", a.kind, method, apiPath(req.URL), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &APIError{Forge: a.kind, Method: method, Path: apiPath(req.URL), Status: resp.StatusCode, Message: errorMessage(data)}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("%s API %s %s: the answer is not what the API documents: %w", a.kind, method, apiPath(req.URL), err)
		}
	}
	return resp.Header, nil
}

// authorize sets the header each forge reads its token from.
func (a *httpAPI) authorize(req *http.Request) {
	switch a.kind {
	case GitHub:
		req.Header.Set("Authorization", "Bearer "+a.token)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	case GitLab:
		req.Header.Set("PRIVATE-TOKEN", a.token)
	case Gitea:
		req.Header.Set("Authorization", "token "+a.token)
		req.Header.Set("Accept", "application/json")
	}
}

// apiPath is a request's path, escaped as sent, without its query.
func apiPath(u *url.URL) string { return u.EscapedPath() }

// errorMessage reads what a forge said in an error body: GitHub's
// {"message", "errors": [{"message"}]}, GitLab's {"message": string, list
// or map} or {"error"}, Gitea's {"message"}; the text itself otherwise.
func errorMessage(data []byte) string {
	var body struct {
		Message any `json:"message"`
		Error   any `json:"error"`
		Errors  []struct {
			Message string `json:"message"`
			Code    string `json:"code"`
			Field   string `json:"field"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		s := strings.TrimSpace(string(data))
		if len(s) > 300 {
			s = s[:300] + "..."
		}
		return s
	}
	parts := flatten(body.Message)
	for _, e := range body.Errors {
		switch {
		case e.Message != "":
			parts = append(parts, e.Message)
		case e.Code != "":
			parts = append(parts, e.Field+" "+e.Code)
		}
	}
	if len(parts) == 0 {
		parts = flatten(body.Error)
	}
	return strings.Join(parts, "; ")
}

func flatten(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, flatten(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range v {
			for _, m := range flatten(e) {
				out = append(out, k+" "+m)
			}
		}
		return out
	}
	return nil
}

var linkNext = regexp.MustCompile(`<([^>]+)>;\s*rel="next"`)

// nextLink is the rel="next" URL of a Link header (GitHub, Gitea), "".
func nextLink(h http.Header) string {
	for _, v := range h.Values("Link") {
		if m := linkNext.FindStringSubmatch(v); m != nil {
			return m[1]
		}
	}
	return ""
}

// sameOrigin keeps a next-page link on the API's own origin: the token is
// never sent anywhere else.
func (a *httpAPI) sameOrigin(link string) bool {
	u, err := url.Parse(link)
	b, berr := url.Parse(a.base)
	return err == nil && berr == nil && u.Scheme == b.Scheme && u.Host == b.Host
}

// maxPages bounds a list: a forge that keeps sending next links is cut off.
const maxPages = 100

// rawJSON keeps an answer's body for a second decode.
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error { *r = append((*r)[:0], b...); return nil }

func decode(data []byte, out any) error { return json.Unmarshal(data, out) }

// pull is a pull or merge request as one forge's API writes it.
type pull interface{ pr() *PullRequest }

// doPull sends one request that the forge answers with a pull request.
func doPull[P pull](ctx context.Context, a *httpAPI, method, path string, body any) (*PullRequest, error) {
	var p P
	if _, err := a.do(ctx, method, path, body, &p); err != nil {
		return nil, err
	}
	return p.pr(), nil
}

// createPull sends body to path (POST) and returns the pull request it
// made; an *APIError that duplicate says is the forge's "one is open
// already" answer is marked so Ensure updates that one instead.
func createPull[P pull](ctx context.Context, a *httpAPI, path string, body any, duplicate func(*APIError) bool) (*PullRequest, error) {
	pr, err := doPull[P](ctx, a, http.MethodPost, path, body)
	if e, ok := err.(*APIError); ok && duplicate(e) {
		e.exists = true
	}
	return pr, err
}

// requestReviewers asks users and teams to review (POST to path, the
// requested_reviewers body GitHub and Gitea share); nothing when both are
// empty.
func requestReviewers(ctx context.Context, a *httpAPI, path string, users, teams []string) error {
	if len(users)+len(teams) == 0 {
		return nil
	}
	_, err := a.do(ctx, http.MethodPost, path, map[string]any{"reviewers": users, "team_reviewers": teams}, nil)
	return err
}
