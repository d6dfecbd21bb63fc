package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// giteaClient speaks the REST API v1 of Gitea and Forgejo:
// https://gitea.com/api/swagger.
type giteaClient struct {
	api  *httpAPI
	repo Repo
}

// giteaPull is what Gitea answers for a pull request.
type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"` // open, closed
	Title   string `json:"title"`
	Body    string `json:"body"`
	Merged  bool   `json:"merged"`
	Head    struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (p giteaPull) pr() *PullRequest {
	st := State(p.State)
	if p.Merged {
		st = StateMerged
	}
	return &PullRequest{Number: p.Number, URL: p.HTMLURL, Title: p.Title, Body: p.Body, Head: p.Head.Ref, Base: p.Base.Ref, State: st}
}

func (c *giteaClient) Kind() Kind { return Gitea }

func (c *giteaClient) path(format string, args ...any) string {
	return "/repos/" + url.PathEscape(c.repo.Owner()) + "/" + url.PathEscape(c.repo.Name()) + fmt.Sprintf(format, args...)
}

// list reads every page of a Gitea list (Link rel="next") into each.
func (c *giteaClient) list(ctx context.Context, path string, v url.Values, each func(page []byte) (done bool, err error)) error {
	v.Set("limit", fmt.Sprint(c.api.pageSize))
	next := path + "?" + v.Encode()
	for page := 0; next != "" && page < maxPages; page++ {
		var raw rawJSON
		h, err := c.api.do(ctx, http.MethodGet, next, nil, &raw)
		if err != nil {
			return err
		}
		if done, err := each(raw); done || err != nil {
			return err
		}
		if next = nextLink(h); next != "" && !c.api.sameOrigin(next) {
			return fmt.Errorf("gitea API: next page %s is not on %s", next, c.api.base)
		}
	}
	return nil
}

// Find lists GET /repos/{owner}/{repo}/pulls, which has no branch filter,
// every page, newest first (its default order).
func (c *giteaClient) Find(ctx context.Context, q Query) (*PullRequest, error) {
	state := "open"
	if q.All {
		state = "all"
	}
	var found *PullRequest
	err := c.list(ctx, c.path("/pulls"), url.Values{"state": {state}}, func(page []byte) (bool, error) {
		var pulls []giteaPull
		if err := decode(page, &pulls); err != nil {
			return true, fmt.Errorf("gitea API: pulls: %w", err)
		}
		for _, p := range pulls {
			if p.Head.Ref == q.Head && (q.Base == "" || p.Base.Ref == q.Base) {
				found = p.pr()
				return true, nil
			}
		}
		return false, nil
	})
	return found, err
}

// Create is POST /repos/{owner}/{repo}/pulls; Gitea answers 409 with "pull
// request already exists for these targets" for a duplicate.
func (c *giteaClient) Create(ctx context.Context, pr PullRequest) (*PullRequest, error) {
	body := map[string]any{"head": pr.Head, "base": pr.Base, "title": pr.Title, "body": pr.Body}
	return createPull[giteaPull](ctx, c.api, c.path("/pulls"), body, func(e *APIError) bool { return e.Status == http.StatusConflict })
}

// Update is PATCH /repos/{owner}/{repo}/pulls/{index}.
func (c *giteaClient) Update(ctx context.Context, number int, pr PullRequest) (*PullRequest, error) {
	return doPull[giteaPull](ctx, c.api, http.MethodPatch, c.path("/pulls/%d", number), map[string]any{"title": pr.Title, "body": pr.Body})
}

// Get is GET /repos/{owner}/{repo}/pulls/{index}.
func (c *giteaClient) Get(ctx context.Context, number int) (*PullRequest, error) {
	return doPull[giteaPull](ctx, c.api, http.MethodGet, c.path("/pulls/%d", number), nil)
}

// Decorate adds labels by their IDs (POST /issues/{index}/labels, the IDs
// read from every page of GET /labels; a label the repository lacks is a
// warning) and requests reviewers (POST /pulls/{index}/requested_reviewers,
// "org/team" as a team).
func (c *giteaClient) Decorate(ctx context.Context, number int, labels, reviewers []string) ([]string, error) {
	want, warnings, err := c.labelIDs(ctx, labels)
	if err != nil {
		return nil, err
	}
	if len(want) > 0 {
		if _, err := c.api.do(ctx, http.MethodPost, c.path("/issues/%d/labels", number), map[string]any{"labels": want}, nil); err != nil {
			return warnings, err
		}
	}
	users, teams := []string{}, []string{}
	for _, r := range reviewers {
		if _, slug, ok := team(r); ok {
			teams = append(teams, slug)
			continue
		}
		users = append(users, user(r))
	}
	return warnings, requestReviewers(ctx, c.api, c.path("/pulls/%d/requested_reviewers", number), users, teams)
}

// labelIDs are the IDs of labels, read from every page of GET /labels; a
// label the repository lacks is a warning.
func (c *giteaClient) labelIDs(ctx context.Context, labels []string) ([]int64, []string, error) {
	if len(labels) == 0 {
		return nil, nil, nil
	}
	ids := map[string]int64{}
	err := c.list(ctx, c.path("/labels"), url.Values{}, func(page []byte) (bool, error) {
		var ls []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		}
		if err := decode(page, &ls); err != nil {
			return true, fmt.Errorf("gitea API: labels: %w", err)
		}
		for _, l := range ls {
			ids[strings.ToLower(l.Name)] = l.ID
		}
		return false, nil
	})
	if err != nil {
		return nil, nil, err
	}
	var want []int64
	var warnings []string
	for _, l := range labels {
		id, ok := ids[strings.ToLower(l)]
		if !ok {
			warnings = append(warnings, fmt.Sprintf("label %s: the repository has no such label", l))
			continue
		}
		want = append(want, id)
	}
	return want, warnings, nil
}
