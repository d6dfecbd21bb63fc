package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// gitlabClient speaks GitLab's REST API v4 (gitlab.com and self-managed):
// https://docs.gitlab.com/api/merge_requests/.
type gitlabClient struct {
	api  *httpAPI
	repo Repo
}

// gitlabMR is what GitLab answers for a merge request.
type gitlabMR struct {
	IID          int    `json:"iid"`
	WebURL       string `json:"web_url"`
	State        string `json:"state"` // opened, closed, locked, merged
	Title        string `json:"title"`
	Description  string `json:"description"`
	SourceBranch string `json:"source_branch"`
	TargetBranch string `json:"target_branch"`
}

func (m gitlabMR) pr() *PullRequest {
	st := StateClosed
	switch m.State {
	case "opened", "locked":
		st = StateOpen
	case "merged":
		st = StateMerged
	}
	return &PullRequest{Number: m.IID, URL: m.WebURL, Title: m.Title, Body: m.Description, Head: m.SourceBranch, Base: m.TargetBranch, State: st}
}

func (c *gitlabClient) Kind() Kind { return GitLab }

// path is under /projects/{id}, the id being the URL-encoded full path
// ("group%2Fsub%2Fname").
func (c *gitlabClient) path(format string, args ...any) string {
	return "/projects/" + url.PathEscape(c.repo.Path) + fmt.Sprintf(format, args...)
}

// Find lists GET /projects/:id/merge_requests?source_branch=..., every
// page (X-Next-Page), and matches the target branch itself: GitLab allows
// one open merge request per source and target, several per source.
func (c *gitlabClient) Find(ctx context.Context, q Query) (*PullRequest, error) {
	v := url.Values{"source_branch": {q.Head}, "per_page": {fmt.Sprint(c.api.pageSize)}, "order_by": {"created_at"}, "sort": {"desc"}}
	if !q.All {
		v.Set("state", "opened")
	}
	for page := 1; page > 0 && page <= maxPages; {
		v.Set("page", strconv.Itoa(page))
		var mrs []gitlabMR
		h, err := c.api.do(ctx, http.MethodGet, c.path("/merge_requests")+"?"+v.Encode(), nil, &mrs)
		if err != nil {
			return nil, err
		}
		for _, m := range mrs {
			if m.SourceBranch == q.Head && (q.Base == "" || m.TargetBranch == q.Base) {
				return m.pr(), nil
			}
		}
		page, _ = strconv.Atoi(h.Get("X-Next-Page")) // "" on the last page
	}
	return nil, nil
}

// Create is POST /projects/:id/merge_requests; GitLab answers 409 with
// "Another open merge request already exists for this source branch" for
// a duplicate.
func (c *gitlabClient) Create(ctx context.Context, pr PullRequest) (*PullRequest, error) {
	body := map[string]any{"source_branch": pr.Head, "target_branch": pr.Base, "title": pr.Title, "description": pr.Body, "remove_source_branch": true}
	return createPull[gitlabMR](ctx, c.api, c.path("/merge_requests"), body, func(e *APIError) bool { return e.Status == http.StatusConflict })
}

// Update is PUT /projects/:id/merge_requests/:iid.
func (c *gitlabClient) Update(ctx context.Context, number int, pr PullRequest) (*PullRequest, error) {
	return doPull[gitlabMR](ctx, c.api, http.MethodPut, c.path("/merge_requests/%d", number), map[string]any{"title": pr.Title, "description": pr.Body})
}

// Get is GET /projects/:id/merge_requests/:iid.
func (c *gitlabClient) Get(ctx context.Context, number int) (*PullRequest, error) {
	return doPull[gitlabMR](ctx, c.api, http.MethodGet, c.path("/merge_requests/%d", number), nil)
}

// Decorate adds labels (add_labels, a comma-separated list; GitLab
// creates unknown ones) and sets reviewers by their user IDs, looked up
// with GET /users?username=. A group cannot be a reviewer: a warning.
func (c *gitlabClient) Decorate(ctx context.Context, number int, labels, reviewers []string) ([]string, error) {
	var warnings []string
	body := map[string]any{}
	if len(labels) > 0 {
		body["add_labels"] = strings.Join(labels, ",")
	}
	var ids []int
	for _, r := range reviewers {
		if _, _, isTeam := team(r); isTeam {
			warnings = append(warnings, fmt.Sprintf("reviewer %s: GitLab takes users as reviewers, not groups", r))
			continue
		}
		var users []struct {
			ID       int    `json:"id"`
			Username string `json:"username"`
		}
		if _, err := c.api.do(ctx, http.MethodGet, "/users?"+url.Values{"username": {user(r)}}.Encode(), nil, &users); err != nil {
			return warnings, err
		}
		if len(users) == 0 {
			warnings = append(warnings, fmt.Sprintf("reviewer %s: no such GitLab user", r))
			continue
		}
		ids = append(ids, users[0].ID)
	}
	if len(ids) > 0 {
		body["reviewer_ids"] = ids
	}
	if len(body) == 0 {
		return warnings, nil
	}
	_, err := c.api.do(ctx, http.MethodPut, c.path("/merge_requests/%d", number), body, nil)
	return warnings, err
}
