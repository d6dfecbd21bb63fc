package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// githubClient speaks GitHub's REST API v3 (github.com, GitHub Enterprise
// Server): https://docs.github.com/en/rest/pulls/pulls.
type githubClient struct {
	api  *httpAPI
	repo Repo
}

// githubPull is what GitHub answers for a pull request.
type githubPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"` // open, closed
	Title   string `json:"title"`
	Body    string `json:"body"`
	Merged  bool   `json:"merged"`
	// MergedAt is set in lists, which have no "merged".
	MergedAt *string `json:"merged_at"`
	Head     struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (p githubPull) pr() *PullRequest {
	st := State(p.State)
	if p.Merged || p.MergedAt != nil {
		st = StateMerged
	}
	return &PullRequest{Number: p.Number, URL: p.HTMLURL, Title: p.Title, Body: p.Body, Head: p.Head.Ref, Base: p.Base.Ref, State: st}
}

func (c *githubClient) Kind() Kind { return GitHub }

func (c *githubClient) path(format string, args ...any) string {
	return "/repos/" + url.PathEscape(c.repo.Owner()) + "/" + url.PathEscape(c.repo.Name()) + fmt.Sprintf(format, args...)
}

// Find lists GET /repos/{owner}/{repo}/pulls?head=owner:branch,
// every page (Link rel="next"), newest first as GitHub sorts by created.
func (c *githubClient) Find(ctx context.Context, q Query) (*PullRequest, error) {
	state := "open"
	if q.All {
		state = "all"
	}
	// By head only: one head may have pull requests into several bases,
	// and the base is matched here, page after page.
	v := url.Values{"state": {state}, "head": {c.repo.Owner() + ":" + q.Head}, "per_page": {fmt.Sprint(c.api.pageSize)}}
	next := c.path("/pulls") + "?" + v.Encode()
	for page := 0; next != "" && page < maxPages; page++ {
		var pulls []githubPull
		h, err := c.api.do(ctx, http.MethodGet, next, nil, &pulls)
		if err != nil {
			return nil, err
		}
		for _, p := range pulls {
			if p.Head.Ref == q.Head && (q.Base == "" || p.Base.Ref == q.Base) {
				return p.pr(), nil
			}
		}
		if next = nextLink(h); next != "" && !c.api.sameOrigin(next) {
			return nil, fmt.Errorf("github API: next page %s is not on %s", next, c.api.base)
		}
	}
	return nil, nil
}

// Create is POST /repos/{owner}/{repo}/pulls; GitHub answers 422 with "A
// pull request already exists for owner:branch." for a duplicate.
func (c *githubClient) Create(ctx context.Context, pr PullRequest) (*PullRequest, error) {
	body := map[string]any{"title": pr.Title, "head": pr.Head, "base": pr.Base, "body": pr.Body}
	return createPull[githubPull](ctx, c.api, c.path("/pulls"), body, func(e *APIError) bool {
		return e.Status == http.StatusUnprocessableEntity && strings.Contains(e.Message, "already exists")
	})
}

// Update is PATCH /repos/{owner}/{repo}/pulls/{number}.
func (c *githubClient) Update(ctx context.Context, number int, pr PullRequest) (*PullRequest, error) {
	return doPull[githubPull](ctx, c.api, http.MethodPatch, c.path("/pulls/%d", number), map[string]any{"title": pr.Title, "body": pr.Body})
}

// Get is GET /repos/{owner}/{repo}/pulls/{number}.
func (c *githubClient) Get(ctx context.Context, number int) (*PullRequest, error) {
	return doPull[githubPull](ctx, c.api, http.MethodGet, c.path("/pulls/%d", number), nil)
}

// Decorate adds labels through the issue the pull request is (POST
// /issues/{number}/labels; GitHub creates unknown labels) and requests
// reviewers (POST /pulls/{number}/requested_reviewers; "org/team" as a team
// slug of the repository's organization).
func (c *githubClient) Decorate(ctx context.Context, number int, labels, reviewers []string) ([]string, error) {
	var warnings []string
	if len(labels) > 0 {
		if _, err := c.api.do(ctx, http.MethodPost, c.path("/issues/%d/labels", number), map[string]any{"labels": labels}, nil); err != nil {
			return nil, err
		}
	}
	users, teams := []string{}, []string{}
	for _, r := range reviewers {
		if org, slug, ok := team(r); ok {
			if !strings.EqualFold(org, c.repo.Owner()) {
				warnings = append(warnings, fmt.Sprintf("reviewer %s: GitHub asks only teams of %s", r, c.repo.Owner()))
				continue
			}
			teams = append(teams, slug)
			continue
		}
		users = append(users, user(r))
	}
	return warnings, requestReviewers(ctx, c.api, c.path("/pulls/%d/requested_reviewers", number), users, teams)
}
