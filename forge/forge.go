// Package forge opens and updates pull requests (merge requests) on the
// forges a GitOps repository lives on: GitHub (REST v3, github.com and
// GitHub Enterprise Server), GitLab (REST v4, gitlab.com and self-managed)
// and Gitea/Forgejo (REST v1). It speaks their HTTP APIs with net/http:
// the few calls it needs do not justify three SDKs and their dependencies.
//
// A Client is one repository on one forge; Ensure is the only thing most
// callers need: it opens the pull request of a branch, or updates the one
// that is open already, so running it twice never opens two.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Kind is a forge's API dialect.
type Kind string

// The forges.
const (
	GitHub Kind = "github"
	GitLab Kind = "gitlab"
	Gitea  Kind = "gitea" // Gitea and Forgejo
)

// Kinds are the forges, for messages and validation.
var Kinds = []Kind{GitHub, GitLab, Gitea}

// State is where a pull request is in its life.
type State string

// The states, the same words for every forge (GitLab's "opened" is open).
const (
	StateOpen   State = "open"
	StateClosed State = "closed"
	StateMerged State = "merged"
)

// PullRequest is a pull request (GitLab: merge request) as the forge holds
// it, or as a caller wants it.
type PullRequest struct {
	// Number is the forge's number for it in the repository (GitLab's
	// iid); URL its page for people.
	Number int
	URL    string
	Title  string
	Body   string
	// Head is the branch carrying the change, Base the branch it goes to.
	Head, Base string
	// Labels are label names; Reviewers user names, or "org/team" for a
	// team (GitHub and Gitea), with or without a leading "@".
	Labels    []string
	Reviewers []string
	State     State
}

// Query selects pull requests by their branches.
type Query struct {
	Head, Base string
	// All includes closed and merged ones; otherwise only open ones.
	All bool
}

// Client is one repository on one forge.
type Client interface {
	// Kind is the client's forge.
	Kind() Kind
	// Find returns the newest pull request matching q, nil when none does.
	// It reads every page of the forge's list.
	Find(ctx context.Context, q Query) (*PullRequest, error)
	// Create opens pr (Title, Body, Head, Base). A pull request already
	// open for the same branches is an error matching ErrExists.
	Create(ctx context.Context, pr PullRequest) (*PullRequest, error)
	// Update sets the title and body of pull request number.
	Update(ctx context.Context, number int, pr PullRequest) (*PullRequest, error)
	// Get reads pull request number.
	Get(ctx context.Context, number int) (*PullRequest, error)
	// Decorate adds labels and requests reviewers; what the forge cannot
	// do (an unknown label on Gitea, a team on GitLab) is a warning, not an
	// error.
	Decorate(ctx context.Context, number int, labels, reviewers []string) (warnings []string, err error)
}

// ErrExists marks a create refused because a pull request for the same
// branches is open already.
var ErrExists = errors.New("a pull request for these branches is open already")

// APIError is an answer of a forge's API that was not a success.
type APIError struct {
	Forge  Kind
	Method string
	// Path is the API path, without the host or query.
	Path   string
	Status int
	// Message is what the forge said, from its error body.
	Message string
	exists  bool
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s API %s %s: %d: %s", e.Forge, e.Method, e.Path, e.Status, msg)
}

// Is matches ErrExists for a refused duplicate.
func (e *APIError) Is(target error) bool { return target == ErrExists && e.exists }

// Options say which repository on which forge, and with which token.
type Options struct {
	// Kind is the forge; empty means Detect it from RepoURL.
	Kind Kind
	// APIURL is the API's base URL ("https://api.github.com",
	// "https://ghe.example.com/api/v3", "https://gitlab.example.com/api/v4",
	// "https://gitea.example.com/api/v1"); empty means derived from
	// RepoURL's host.
	APIURL string
	// RepoURL is the repository's Git URL (https://, ssh:// or
	// git@host:path); its path names the repository on the forge.
	RepoURL string
	// Token is sent to APIURL only, in the header each forge wants.
	Token string
	// HTTPClient sends the requests; nil means one with a 30 s timeout that
	// trusts CABundle besides the system's certificates.
	HTTPClient *http.Client
	CABundle   []byte
	// PageSize is how many items a list request asks for; 0 means 100
	// (Gitea's own cap is 50, which it then applies).
	PageSize int
}

// New is the client of opts' repository.
func New(opts Options) (Client, error) {
	repo, err := ParseRepo(opts.RepoURL)
	if err != nil {
		return nil, err
	}
	kind, api := opts.Kind, opts.APIURL
	if kind == "" {
		if kind, err = Detect(repo.Host); err != nil {
			return nil, err
		}
	}
	if api == "" {
		api = DefaultAPIURL(kind, repo.Host)
	}
	if api == "" {
		return nil, fmt.Errorf("forge kind %q: want one of %s", kind, kindList())
	}
	if !strings.HasPrefix(api, "https://") {
		return nil, fmt.Errorf("forge apiURL %q: the token is sent over https only", api)
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("forge %s: no token", kind)
	}
	h := &httpAPI{kind: kind, base: strings.TrimSuffix(api, "/"), token: opts.Token, client: opts.HTTPClient, pageSize: opts.PageSize}
	if h.client == nil {
		if h.client, err = httpClient(opts.CABundle); err != nil {
			return nil, err
		}
	}
	if h.pageSize <= 0 {
		h.pageSize = 100
	}
	switch kind {
	case GitHub:
		return &githubClient{api: h, repo: repo}, nil
	case GitLab:
		return &gitlabClient{api: h, repo: repo}, nil
	case Gitea:
		return &giteaClient{api: h, repo: repo}, nil
	}
	return nil, fmt.Errorf("forge kind %q: want one of %s", kind, kindList())
}

func kindList() string {
	var s []string
	for _, k := range Kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// Result is what Ensure did.
type Result struct {
	PR *PullRequest
	// Created is set when Ensure opened it; otherwise it updated the one
	// that was open.
	Created  bool
	Warnings []string
}

// Ensure opens pr, or, when a pull request from pr.Head into pr.Base is
// open already, sets its title and body to pr's; then it adds pr's labels
// and requests its reviewers. A create that races another (the forge
// answers that one exists) updates that one.
func Ensure(ctx context.Context, c Client, pr PullRequest) (Result, error) {
	q := Query{Head: pr.Head, Base: pr.Base}
	var res Result
	open, err := c.Find(ctx, q)
	if err != nil {
		return res, err
	}
	if open == nil {
		open, err = c.Create(ctx, pr)
		res.Created = err == nil
		if errors.Is(err, ErrExists) {
			if open, err = c.Find(ctx, q); err == nil && open == nil {
				err = fmt.Errorf("%s says a pull request from %s into %s exists, but lists none open", c.Kind(), pr.Head, pr.Base)
			}
		}
		if err != nil {
			return res, err
		}
	}
	if !res.Created {
		if open, err = c.Update(ctx, open.Number, pr); err != nil {
			return res, err
		}
	}
	res.PR = open
	if len(pr.Labels)+len(pr.Reviewers) > 0 {
		res.Warnings, err = c.Decorate(ctx, open.Number, pr.Labels, pr.Reviewers)
		open.Labels, open.Reviewers = pr.Labels, pr.Reviewers
	}
	return res, err
}

// team splits a reviewer into an org and team when it names a team
// ("org/team", "@org/team").
func team(reviewer string) (org, slug string, ok bool) {
	return strings.Cut(strings.TrimPrefix(reviewer, "@"), "/")
}

// user is a reviewer's user name without its "@".
func user(reviewer string) string { return strings.TrimPrefix(reviewer, "@") }
