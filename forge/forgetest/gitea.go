package forgetest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Gitea serves a fake of the REST API v1 of Gitea and Forgejo under
// /api/v1 for repository o.Owner/o.Name.
func Gitea(t testing.TB, o Options) *Server {
	return newServer(t, o, "/api/v1", func(s *Server, mux *http.ServeMux) {
		repo := "/repos/{owner}/{repo}"
		mux.HandleFunc("GET "+repo+"/pulls", s.gitea(s.giteaList))
		mux.HandleFunc("POST "+repo+"/pulls", s.gitea(s.giteaCreate))
		mux.HandleFunc("GET "+repo+"/pulls/{n}", s.gitea(s.giteaPull(func(w http.ResponseWriter, r *http.Request, p *Pull) { writeJSON(w, 200, s.giteaJSON(p)) })))
		mux.HandleFunc("PATCH "+repo+"/pulls/{n}", s.gitea(s.giteaPull(s.giteaUpdate)))
		mux.HandleFunc("GET "+repo+"/labels", s.gitea(s.giteaLabels))
		mux.HandleFunc("POST "+repo+"/issues/{n}/labels", s.gitea(s.giteaPull(s.giteaAddLabels)))
		mux.HandleFunc("POST "+repo+"/pulls/{n}/requested_reviewers", s.gitea(s.giteaPull(s.giteaReviewers)))
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, 404, `{"message":"not found","url":""}`) })
	})
}

// gitea checks the token ("token" scheme, or Bearer) and the repository.
func (s *Server) gitea(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if (scheme != "token" && scheme != "Bearer") || token != s.Token {
			s.fail(w, r, 401, `{"message":"user does not exist [uid: 0, name: ]","url":""}`)
			return
		}
		if r.PathValue("owner") != s.Owner || r.PathValue("repo") != s.Name {
			s.fail(w, r, 404, `{"errors":["The target couldn't be found."],"message":"The target couldn't be found.","url":""}`)
			return
		}
		h(w, r)
	}
}

func (s *Server) giteaJSON(p *Pull) map[string]any {
	return map[string]any{
		"number": p.Number, "html_url": fmt.Sprintf("%s/%s/%s/pulls/%d", s.URL, s.Owner, s.Name, p.Number),
		"state": p.State, "title": p.Title, "body": p.Body, "merged": p.Merged,
		"head": map[string]any{"ref": p.Head, "label": p.Head}, "base": map[string]any{"ref": p.Base, "label": p.Base},
	}
}

// giteaPaged writes one page of a list (limit at most 50, Gitea's default
// MAX_RESPONSE_ITEMS) with Link rel="next" and X-Total-Count.
func giteaPaged[T any](s *Server, w http.ResponseWriter, r *http.Request, items []T, each func(T) map[string]any) {
	got, n, more := page(items, r, "limit", 50)
	if more {
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, nextURL(s, r, n+1)))
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(len(items)))
	out := []map[string]any{}
	for _, it := range got {
		out = append(out, each(it))
	}
	writeJSON(w, 200, out)
}

// giteaList is GET /pulls: state (open, closed, all), page, limit; it has
// no branch filter.
func (s *Server) giteaList(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		s.fail(w, r, 422, `{"message":"Invalid state","url":""}`)
		return
	}
	if sort := r.URL.Query().Get("sort"); sort != "" && !slices.Contains([]string{"oldest", "recentupdate", "leastupdate", "mostcomment", "leastcomment", "priority"}, sort) {
		s.fail(w, r, 422, `{"message":"[Sort]: Invalid","url":""}`)
		return
	}
	pulls := s.newest(func(p *Pull) bool { return state == "all" || p.State == state })
	giteaPaged(s, w, r, pulls, s.giteaJSON)
}

// giteaCreate is POST /pulls: head, base and title required (422); one
// open pull request per head and base (409).
func (s *Server) giteaCreate(w http.ResponseWriter, r *http.Request) {
	body, ok := s.decodeBody(w, r, 422, `{"message":"[]: invalid JSON","url":""}`)
	if !ok {
		return
	}
	for _, k := range []string{"head", "base", "title"} {
		if _, ok := str(body, k); !ok {
			s.fail(w, r, 422, fmt.Sprintf(`{"message":"[%s]: Required","url":""}`, strings.ToUpper(k[:1])+k[1:]))
			return
		}
	}
	for _, p := range s.pulls {
		if p.State == "open" && p.Head == body["head"] && p.Base == body["base"] {
			s.fail(w, r, 409, fmt.Sprintf(`{"message":"pull request already exists for these targets [id: %d, issue_id: %d, head_repo_id: 1, base_repo_id: 1, head_branch: %s, base_branch: %s]","url":""}`, p.Number, p.Number, p.Head, p.Base))
			return
		}
	}
	text, _ := body["body"].(string)
	p := &Pull{Number: len(s.pulls) + 1, Title: body["title"].(string), Body: text, Head: body["head"].(string), Base: body["base"].(string), State: "open"}
	s.pulls = append(s.pulls, p)
	writeJSON(w, 201, s.giteaJSON(p))
}

func (s *Server) giteaPull(h func(http.ResponseWriter, *http.Request, *Pull)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := s.find(r.PathValue("n"))
		if p == nil {
			s.fail(w, r, 404, `{"errors":["pull request does not exist"],"message":"The target couldn't be found.","url":""}`)
			return
		}
		h(w, r, p)
	}
}

func (s *Server) giteaUpdate(w http.ResponseWriter, r *http.Request, p *Pull) {
	body, ok := s.decodeBody(w, r, 422, `{"message":"[]: invalid JSON","url":""}`)
	if !ok {
		return
	}
	if t, ok := str(body, "title"); ok {
		p.Title = t
	}
	if b, ok := body["body"].(string); ok {
		p.Body = b
	}
	p.Edits++
	writeJSON(w, 201, s.giteaJSON(p)) // Gitea answers an edit with 201
}

func (s *Server) giteaLabels(w http.ResponseWriter, r *http.Request) {
	giteaPaged(s, w, r, s.labels, func(name string) map[string]any {
		return map[string]any{"id": slices.Index(s.labels, name) + 1, "name": name, "color": "e11d21"}
	})
}

// giteaAddLabels is POST /issues/{n}/labels with label IDs.
func (s *Server) giteaAddLabels(w http.ResponseWriter, r *http.Request, p *Pull) {
	body, ok := s.decodeBody(w, r, 422, `{"message":"[]: invalid JSON","url":""}`)
	if !ok {
		return
	}
	ids, ok := body["labels"].([]any)
	if !ok || len(ids) == 0 {
		s.fail(w, r, 422, `{"message":"[Labels]: Required","url":""}`)
		return
	}
	for _, id := range ids {
		f, ok := id.(float64)
		if !ok || int(f) < 1 || int(f) > len(s.labels) {
			s.fail(w, r, 422, `{"message":"label does not exist","url":""}`)
			return
		}
		p.Labels = addUnique(p.Labels, s.labels[int(f)-1])
	}
	out := []map[string]any{}
	for _, l := range p.Labels {
		out = append(out, map[string]any{"id": slices.Index(s.labels, l) + 1, "name": l})
	}
	writeJSON(w, 200, out)
}

func (s *Server) giteaReviewers(w http.ResponseWriter, r *http.Request, p *Pull) {
	body, ok := s.decodeBody(w, r, 422, `{"message":"[]: invalid JSON","url":""}`)
	if !ok {
		return
	}
	users, _ := strs(body, "reviewers")
	teams, _ := strs(body, "team_reviewers")
	if len(users)+len(teams) == 0 {
		s.fail(w, r, 422, `{"message":"no reviewers","url":""}`)
		return
	}
	for _, t := range teams {
		users = append(users, s.Owner+"/"+t)
	}
	p.Reviewers = addUnique(p.Reviewers, users...)
	writeJSON(w, 201, []map[string]any{})
}
