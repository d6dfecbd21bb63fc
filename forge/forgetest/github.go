package forgetest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// GitHub serves a fake of GitHub's REST API v3 for repository
// o.Owner/o.Name: at the root as api.github.com does, or under /api/v3 as
// GitHub Enterprise Server does (o.Enterprise).
func GitHub(t testing.TB, o Options) *Server {
	prefix := ""
	if o.Enterprise {
		prefix = "/api/v3"
	}
	return newServer(t, o, prefix, func(s *Server, mux *http.ServeMux) {
		repo := "/repos/{owner}/{repo}"
		mux.HandleFunc("GET "+repo+"/pulls", s.github(prefix, s.githubList))
		mux.HandleFunc("POST "+repo+"/pulls", s.github(prefix, s.githubCreate))
		mux.HandleFunc("GET "+repo+"/pulls/{n}", s.github(prefix, s.githubPull(func(w http.ResponseWriter, r *http.Request, p *Pull) { writeJSON(w, 200, s.githubJSON(p)) })))
		mux.HandleFunc("PATCH "+repo+"/pulls/{n}", s.github(prefix, s.githubPull(s.githubUpdate)))
		mux.HandleFunc("POST "+repo+"/issues/{n}/labels", s.github(prefix, s.githubPull(s.githubLabels)))
		mux.HandleFunc("POST "+repo+"/pulls/{n}/requested_reviewers", s.github(prefix, s.githubPull(s.githubReviewers)))
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			s.fail(w, r, 404, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`)
		})
	})
}

// github checks what GitHub checks before any route: the token (Bearer or
// token scheme), the API version when one is asked for, and the repository.
func (s *Server) github(prefix string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		scheme, token, _ := strings.Cut(auth, " ")
		switch {
		case auth == "":
			s.fail(w, r, 401, `{"message":"Requires authentication","documentation_url":"https://docs.github.com/rest"}`)
			return
		case (scheme != "Bearer" && scheme != "token") || token != s.Token:
			s.fail(w, r, 401, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
			return
		case r.Header.Get("X-GitHub-Api-Version") != "" && r.Header.Get("X-GitHub-Api-Version") != "2022-11-28":
			s.fail(w, r, 400, `{"message":"Unsupported 'X-GitHub-Api-Version' header."}`)
			return
		case r.PathValue("owner") != s.Owner || r.PathValue("repo") != s.Name:
			s.fail(w, r, 404, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`)
			return
		}
		h(w, r)
	}
}

func (s *Server) githubJSON(p *Pull) map[string]any {
	var mergedAt any
	if p.Merged {
		mergedAt = "2026-12-01T12:00:00Z"
	}
	return map[string]any{
		"number": p.Number, "html_url": fmt.Sprintf("%s/%s/%s/pull/%d", s.URL, s.Owner, s.Name, p.Number),
		"state": p.State, "title": p.Title, "body": p.Body, "merged": p.Merged, "merged_at": mergedAt,
		"head": map[string]any{"ref": p.Head, "label": s.Owner + ":" + p.Head}, "base": map[string]any{"ref": p.Base},
	}
}

// githubList is GET /pulls: state, head (owner:branch), base, per_page (at
// most 100), page; a Link header with rel="next" while more follow.
func (s *Server) githubList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		s.fail(w, r, 422, `{"message":"Validation Failed","errors":[{"resource":"Search","field":"state","code":"invalid"}]}`)
		return
	}
	head := q.Get("head")
	if head != "" && !strings.Contains(head, ":") {
		head = s.Owner + ":" + head
	}
	pulls := s.newest(func(p *Pull) bool {
		return (state == "all" || p.State == state) && (head == "" || head == s.Owner+":"+p.Head) && (q.Get("base") == "" || q.Get("base") == p.Base)
	})
	got, n, more := page(pulls, r, "per_page", 100)
	if more {
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, nextURL(s, r, n+1)))
	}
	out := []map[string]any{}
	for _, p := range got {
		out = append(out, s.githubJSON(p))
	}
	writeJSON(w, 200, out)
}

const githubInvalid = `{"message":"Invalid request.\n\nFor 'properties/%s', nil is not a string.","documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request"}`

// githubCreate is POST /pulls: title, head and base are required; one open
// pull request per head and base (422 "A pull request already exists").
func (s *Server) githubCreate(w http.ResponseWriter, r *http.Request) {
	body, ok := s.decodeBody(w, r, 400, `{"message":"Problems parsing JSON"}`)
	if !ok {
		return
	}
	for _, k := range []string{"title", "head", "base"} {
		if _, ok := str(body, k); !ok {
			s.fail(w, r, 422, fmt.Sprintf(githubInvalid, k))
			return
		}
	}
	if b, has := body["body"]; has {
		if _, ok := b.(string); !ok {
			s.fail(w, r, 422, fmt.Sprintf(githubInvalid, "body"))
			return
		}
	}
	head := strings.TrimPrefix(body["head"].(string), s.Owner+":")
	for _, p := range s.pulls {
		if p.State == "open" && p.Head == head && p.Base == body["base"] {
			s.fail(w, r, 422, fmt.Sprintf(`{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for %s:%s."}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`, s.Owner, head))
			return
		}
	}
	text, _ := body["body"].(string)
	p := &Pull{Number: len(s.pulls) + 1, Title: body["title"].(string), Body: text, Head: head, Base: body["base"].(string), State: "open"}
	s.pulls = append(s.pulls, p)
	writeJSON(w, 201, s.githubJSON(p))
}

// githubPull finds {n}, 404 when it is not there.
func (s *Server) githubPull(h func(http.ResponseWriter, *http.Request, *Pull)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := s.find(r.PathValue("n"))
		if p == nil {
			s.fail(w, r, 404, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`)
			return
		}
		h(w, r, p)
	}
}

func (s *Server) githubUpdate(w http.ResponseWriter, r *http.Request, p *Pull) {
	body, ok := s.decodeBody(w, r, 400, `{"message":"Problems parsing JSON"}`)
	if !ok {
		return
	}
	for k, v := range body {
		if _, isString := v.(string); !isString || (k != "title" && k != "body" && k != "state" && k != "base") {
			s.fail(w, r, 422, fmt.Sprintf(githubInvalid, k))
			return
		}
	}
	if t, ok := str(body, "title"); ok {
		p.Title = t
	}
	if b, ok := body["body"].(string); ok {
		p.Body = b
	}
	p.Edits++
	writeJSON(w, 200, s.githubJSON(p))
}

func (s *Server) githubLabels(w http.ResponseWriter, r *http.Request, p *Pull) {
	body, ok := s.decodeBody(w, r, 400, `{"message":"Problems parsing JSON"}`)
	if !ok {
		return
	}
	labels, ok := strs(body, "labels")
	if !ok || len(labels) == 0 {
		s.fail(w, r, 422, `{"message":"Invalid request.\n\nNo subschema in \"anyOf\" matched."}`)
		return
	}
	p.Labels = addUnique(p.Labels, labels...)
	var out []map[string]any
	for _, l := range p.Labels {
		out = append(out, map[string]any{"name": l})
	}
	writeJSON(w, 200, out)
}

func (s *Server) githubReviewers(w http.ResponseWriter, r *http.Request, p *Pull) {
	body, ok := s.decodeBody(w, r, 400, `{"message":"Problems parsing JSON"}`)
	if !ok {
		return
	}
	users, uok := strs(body, "reviewers")
	teams, tok := strs(body, "team_reviewers")
	if (!uok && !tok) || len(users)+len(teams) == 0 {
		s.fail(w, r, 422, `{"message":"Invalid request.\n\nNo subschema in \"anyOf\" matched."}`)
		return
	}
	for _, t := range teams {
		users = append(users, s.Owner+"/"+t)
	}
	p.Reviewers = addUnique(p.Reviewers, users...)
	writeJSON(w, 201, s.githubJSON(p))
}
