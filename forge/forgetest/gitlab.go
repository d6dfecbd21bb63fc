package forgetest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// GitLab serves a fake of GitLab's REST API v4 under /api/v4 for project
// o.Owner/o.Name, which every request must name URL-encoded
// (/projects/owner%2Fname/...), as GitLab requires of a path as the id.
func GitLab(t testing.TB, o Options) *Server {
	return newServer(t, o, "/api/v4", func(s *Server, mux *http.ServeMux) {
		mr := "/projects/{id}/merge_requests"
		mux.HandleFunc("GET "+mr, s.gitlab(s.gitlabList))
		mux.HandleFunc("POST "+mr, s.gitlab(s.gitlabCreate))
		mux.HandleFunc("GET "+mr+"/{iid}", s.gitlab(s.gitlabMR(func(w http.ResponseWriter, r *http.Request, p *Pull) { writeJSON(w, 200, s.gitlabJSON(p)) })))
		mux.HandleFunc("PUT "+mr+"/{iid}", s.gitlab(s.gitlabMR(s.gitlabUpdate)))
		mux.HandleFunc("GET /users", s.gitlab(s.gitlabUsers))
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, 404, `{"error":"404 Not Found"}`) })
	})
}

// gitlab checks the token (PRIVATE-TOKEN, or an OAuth Bearer) and, for a
// project route, that the id is the project's path, URL-encoded.
func (s *Server) gitlab(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get("PRIVATE-TOKEN")
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token == "" {
			token = bearer
		}
		if token != s.Token {
			s.fail(w, r, 401, `{"message":"401 Unauthorized"}`)
			return
		}
		if id := r.PathValue("id"); id != "" {
			raw := r.URL.EscapedPath()
			if id != s.Owner+"/"+s.Name || !strings.Contains(raw, "/projects/"+s.Owner+"%2F"+s.Name+"/") {
				s.fail(w, r, 404, `{"message":"404 Project Not Found"}`)
				return
			}
		}
		h(w, r)
	}
}

func (s *Server) gitlabState(p *Pull) string {
	switch {
	case p.Merged:
		return "merged"
	case p.State == "open":
		return "opened"
	}
	return "closed"
}

func (s *Server) gitlabJSON(p *Pull) map[string]any {
	reviewers := []map[string]any{}
	for _, u := range p.Reviewers {
		reviewers = append(reviewers, map[string]any{"username": u})
	}
	return map[string]any{
		"iid": p.Number, "id": 1000 + p.Number, "web_url": fmt.Sprintf("%s/%s/%s/-/merge_requests/%d", s.URL, s.Owner, s.Name, p.Number),
		"state": s.gitlabState(p), "title": p.Title, "description": p.Body, "source_branch": p.Head, "target_branch": p.Base,
		"labels": append([]string{}, p.Labels...), "reviewers": reviewers,
	}
}

// gitlabList is GET merge_requests: state, source_branch, target_branch,
// per_page (at most 100), page; X-Next-Page is empty on the last page.
func (s *Server) gitlabList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "all"
	}
	if !slices.Contains([]string{"opened", "closed", "locked", "merged", "all"}, state) {
		s.fail(w, r, 400, `{"error":"state does not have a valid value"}`)
		return
	}
	pulls := s.newest(func(p *Pull) bool {
		return (state == "all" || s.gitlabState(p) == state) &&
			(q.Get("source_branch") == "" || q.Get("source_branch") == p.Head) &&
			(q.Get("target_branch") == "" || q.Get("target_branch") == p.Base)
	})
	got, n, more := page(pulls, r, "per_page", 100)
	next := ""
	if more {
		next = strconv.Itoa(n + 1)
	}
	w.Header().Set("X-Page", strconv.Itoa(n))
	w.Header().Set("X-Next-Page", next)
	w.Header().Set("X-Total", strconv.Itoa(len(pulls)))
	out := []map[string]any{}
	for _, p := range got {
		out = append(out, s.gitlabJSON(p))
	}
	writeJSON(w, 200, out)
}

// gitlabCreate is POST merge_requests: source_branch, target_branch and
// title are required (400 naming what is missing); one open merge request
// per source and target branch (409).
func (s *Server) gitlabCreate(w http.ResponseWriter, r *http.Request) {
	body, ok := s.decodeBody(w, r, 400, `{"message":"400 Bad request"}`)
	if !ok {
		return
	}
	var missing []string
	for _, k := range []string{"source_branch", "target_branch", "title"} {
		if _, ok := str(body, k); !ok {
			missing = append(missing, k+" is missing")
		}
	}
	if len(missing) > 0 {
		s.fail(w, r, 400, fmt.Sprintf(`{"error":%q}`, strings.Join(missing, ", ")))
		return
	}
	for _, p := range s.pulls {
		if p.State == "open" && p.Head == body["source_branch"] && p.Base == body["target_branch"] {
			s.fail(w, r, 409, fmt.Sprintf(`{"message":["Another open merge request already exists for this source branch: !%d"]}`, p.Number))
			return
		}
	}
	desc, _ := body["description"].(string)
	p := &Pull{Number: len(s.pulls) + 1, Title: body["title"].(string), Body: desc, Head: body["source_branch"].(string), Base: body["target_branch"].(string), State: "open"}
	s.pulls = append(s.pulls, p)
	writeJSON(w, 201, s.gitlabJSON(p))
}

func (s *Server) gitlabMR(h func(http.ResponseWriter, *http.Request, *Pull)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := s.find(r.PathValue("iid"))
		if p == nil {
			s.fail(w, r, 404, `{"message":"404 Not found"}`)
			return
		}
		h(w, r, p)
	}
}

// gitlabUpdate is PUT merge_requests/:iid: at least one known parameter;
// add_labels is a comma-separated string, reviewer_ids user IDs.
func (s *Server) gitlabUpdate(w http.ResponseWriter, r *http.Request, p *Pull) {
	body, ok := s.decodeBody(w, r, 400, `{"message":"400 Bad request"}`)
	if !ok {
		return
	}
	known := []string{"title", "description", "add_labels", "labels", "reviewer_ids", "state_event", "target_branch"}
	if len(body) == 0 {
		s.fail(w, r, 400, `{"error":"title, description, add_labels, reviewer_ids are missing, at least one parameter must be provided"}`)
		return
	}
	for k, v := range body {
		if !slices.Contains(known, k) {
			s.fail(w, r, 400, fmt.Sprintf(`{"error":"%s does not have a valid value"}`, k))
			return
		}
		if k == "reviewer_ids" {
			ids, ok := v.([]any)
			if !ok {
				s.fail(w, r, 400, `{"error":"reviewer_ids is invalid"}`)
				return
			}
			for _, id := range ids {
				f, ok := id.(float64)
				if !ok || int(f) < 1 || int(f) > len(s.users) {
					s.fail(w, r, 400, `{"error":"reviewer_ids is invalid"}`)
					return
				}
				p.Reviewers = addUnique(p.Reviewers, s.users[int(f)-1])
			}
			continue
		}
		if _, ok := v.(string); !ok {
			s.fail(w, r, 400, fmt.Sprintf(`{"error":"%s is invalid"}`, k))
			return
		}
	}
	if t, ok := str(body, "title"); ok {
		p.Title = t
	}
	if d, ok := body["description"].(string); ok {
		p.Body = d
	}
	if l, ok := str(body, "add_labels"); ok {
		p.Labels = addUnique(p.Labels, strings.Split(l, ",")...)
	}
	if _, ok := body["title"]; ok {
		p.Edits++
	}
	writeJSON(w, 200, s.gitlabJSON(p))
}

// gitlabUsers is GET /users?username=: the user (IDs from 1 in the order
// of Options.Users) or an empty list.
func (s *Server) gitlabUsers(w http.ResponseWriter, r *http.Request) {
	out := []map[string]any{}
	if i := slices.Index(s.users, r.URL.Query().Get("username")); i >= 0 {
		out = append(out, map[string]any{"id": i + 1, "username": s.users[i]})
	}
	writeJSON(w, 200, out)
}
