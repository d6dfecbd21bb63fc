// Package forgetest serves fakes of the GitHub, GitLab and Gitea APIs on
// loopback over TLS for tests. Each keeps its pull requests in memory, so a
// second run finds what the first opened, and checks every request as the
// real API does: the path, the method, the token in the header that forge
// reads, the JSON body's required fields and their types. A request the
// real API would refuse gets the status and error body the real API sends,
// and fails the test, unless the test expects it (Server.Expect).
package forgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Pull is a pull request as a fake holds it.
type Pull struct {
	Number     int
	Title      string
	Body       string
	Head, Base string
	// State is "open" or "closed"; Merged is set by Merge.
	State     string
	Merged    bool
	Labels    []string
	Reviewers []string
	// Edits counts the updates of title or body.
	Edits int
}

// Request is one request a fake answered.
type Request struct {
	Method string
	// Path is the escaped path, Query the raw query.
	Path, Query string
	Status      int
}

// Server is one fake forge serving one repository.
type Server struct {
	*httptest.Server
	// APIURL is the base URL a client is given (with /api/v3, /api/v4 or
	// /api/v1 where the forge has one).
	APIURL string
	// Owner and Name are the repository's; Token the only one accepted.
	Owner, Name, Token string

	t        testing.TB
	prefix   string
	mu       sync.Mutex
	pulls    []*Pull
	requests []Request
	expect   map[int]bool
	// labels are the repository's labels (Gitea needs them to exist);
	// users the forge's users (GitLab looks reviewers up).
	labels []string
	users  []string
}

// Options say what a fake holds at the start.
type Options struct {
	// Owner/Name is the repository; Token the one accepted.
	Owner, Name, Token string
	// Labels exist in the repository; Users on the forge.
	Labels, Users []string
	// Pulls are there already, numbered from 1.
	Pulls []Pull
	// Enterprise serves GitHub under /api/v3, as GitHub Enterprise Server.
	Enterprise bool
}

func newServer(t testing.TB, o Options, prefix string, routes func(s *Server, mux *http.ServeMux)) *Server {
	t.Helper()
	s := &Server{Owner: o.Owner, Name: o.Name, Token: o.Token, t: t, prefix: prefix, labels: o.Labels, users: o.Users, expect: map[int]bool{}}
	for i := range o.Pulls {
		p := o.Pulls[i]
		p.Number = i + 1
		if p.State == "" {
			p.State = "open"
		}
		s.pulls = append(s.pulls, &p)
	}
	mux := http.NewServeMux()
	routes(s, mux)
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		s.mu.Lock()
		defer s.mu.Unlock()
		if !strings.HasPrefix(r.URL.Path, prefix+"/") {
			s.fail(rec, r, http.StatusNotFound, `{"message":"Not Found"}`)
		} else {
			r.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
			r.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, prefix)
			mux.ServeHTTP(rec, r)
		}
		s.requests = append(s.requests, Request{Method: r.Method, Path: prefix + r.URL.EscapedPath(), Query: r.URL.RawQuery, Status: rec.status})
		if rec.status >= 400 && !s.expect[rec.status] {
			t.Errorf("%s %s%s?%s: answered %d, as the real API would: the client sent what it refuses", r.Method, prefix, r.URL.EscapedPath(), r.URL.RawQuery, rec.status)
		}
	}))
	t.Cleanup(s.Close)
	s.APIURL = s.URL + prefix
	return s
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }

// Expect makes status an answer the test provokes on purpose (a duplicate,
// a wrong token), so that it does not fail the test.
func (s *Server) Expect(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expect[status] = true
}

// Pulls are the pull requests the fake holds, copied.
func (s *Server) Pulls() []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pull
	for _, p := range s.pulls {
		out = append(out, *p)
	}
	return out
}

// Requests are the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Merge merges pull request number, as a reviewer would.
func (s *Server) Merge(number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pulls {
		if p.Number == number {
			p.State, p.Merged = "closed", true
		}
	}
}

// RepoURL is the Git URL of the fake's repository on its host.
func (s *Server) RepoURL() string {
	u, _ := url.Parse(s.URL)
	return "https://" + u.Host + "/" + s.Owner + "/" + s.Name + ".git"
}

// fail answers status with body, a JSON error as the forge writes it.
func (s *Server) fail(w http.ResponseWriter, _ *http.Request, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeBody reads a JSON object body; ok is false (and the answer sent)
// when it is not one or the content type is not JSON.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, badStatus int, badBody string) (map[string]any, bool) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		s.fail(w, r, badStatus, badBody)
		return nil, false
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.fail(w, r, badStatus, badBody)
		return nil, false
	}
	return body, true
}

// str is body[key] when it is a non-empty string.
func str(body map[string]any, key string) (string, bool) {
	v, ok := body[key].(string)
	return v, ok && v != ""
}

// strs is body[key] when it is a list of strings.
func strs(body map[string]any, key string) ([]string, bool) {
	raw, ok := body[key].([]any)
	if !ok {
		return nil, false
	}
	var out []string
	for _, v := range raw {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// page cuts items to page (1-based) of size perPage and says whether
// another page follows.
func page[T any](items []T, r *http.Request, sizeKey string, maxSize int) (out []T, pageNo int, more bool) {
	size, err := strconv.Atoi(r.URL.Query().Get(sizeKey))
	if err != nil || size <= 0 {
		size = 30
	}
	size = min(size, maxSize)
	pageNo, err = strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || pageNo < 1 {
		pageNo = 1
	}
	start := min((pageNo-1)*size, len(items))
	end := min(start+size, len(items))
	return items[start:end], pageNo, end < len(items)
}

// nextURL is r's URL on page n, absolute, for a Link header.
func nextURL(s *Server, r *http.Request, n int) string {
	q := r.URL.Query()
	q.Set("page", strconv.Itoa(n))
	return s.URL + s.prefix + r.URL.EscapedPath() + "?" + q.Encode()
}

// find is the pull request numbered n.
func (s *Server) find(n string) *Pull {
	for _, p := range s.pulls {
		if strconv.Itoa(p.Number) == n {
			return p
		}
	}
	return nil
}

// newest are the pulls, newest first, kept by keep.
func (s *Server) newest(keep func(*Pull) bool) []*Pull {
	var out []*Pull
	for i := len(s.pulls) - 1; i >= 0; i-- {
		if keep(s.pulls[i]) {
			out = append(out, s.pulls[i])
		}
	}
	return out
}

func addUnique(list []string, more ...string) []string {
	for _, m := range more {
		if !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	return list
}
