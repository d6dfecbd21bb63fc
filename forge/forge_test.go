package forge_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/forge"
	"github.com/calricon/driftscan/forge/forgetest"
)

const token = "forge-token-0123456789abcdef"

// fake is one forge's fake and how a client is made for it.
type fake struct {
	kind forge.Kind
	// status is the answer to a duplicate create.
	duplicate int
	serve     func(testing.TB, forgetest.Options) *forgetest.Server
}

var fakes = []fake{
	{forge.GitHub, 422, forgetest.GitHub},
	{"github-enterprise", 422, func(t testing.TB, o forgetest.Options) *forgetest.Server {
		o.Enterprise = true
		return forgetest.GitHub(t, o)
	}},
	{forge.GitLab, 409, forgetest.GitLab},
	{forge.Gitea, 409, forgetest.Gitea},
}

func (f fake) kindOf() forge.Kind {
	if f.kind == "github-enterprise" {
		return forge.GitHub
	}
	return f.kind
}

func (f fake) start(t *testing.T, o forgetest.Options) (*forgetest.Server, forge.Client) {
	t.Helper()
	o.Owner, o.Name, o.Token = "acme", "deploy", token
	srv := f.serve(t, o)
	c, err := forge.New(forge.Options{Kind: f.kindOf(), APIURL: srv.APIURL, RepoURL: srv.RepoURL(), Token: token, HTTPClient: srv.Client(), PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

func TestEnsureOpensThePullRequestAndASecondRunUpdatesIt(t *testing.T) {
	for _, f := range fakes {
		t.Run(string(f.kind), func(t *testing.T) {
			srv, c := f.start(t, forgetest.Options{Labels: []string{"hotfix", "team-web"}, Users: []string{"alice", "bob"}})
			pr := forge.PullRequest{Title: "web: INC-4211", Body: "first", Head: "hotfix/web-inc-4211", Base: "main", Labels: []string{"hotfix"}, Reviewers: []string{"@alice"}}
			first, err := forge.Ensure(t.Context(), c, pr)
			if err != nil {
				t.Fatal(err)
			}
			if !first.Created || first.PR.Number != 1 || first.PR.State != forge.StateOpen || !strings.HasPrefix(first.PR.URL, srv.URL+"/acme/deploy/") || len(first.Warnings) > 0 {
				t.Errorf("first Ensure = %+v %+v", first, first.PR)
			}
			pr.Body, pr.Labels, pr.Reviewers = "second", []string{"hotfix", "team-web"}, []string{"bob"}
			second, err := forge.Ensure(t.Context(), c, pr)
			if err != nil {
				t.Fatal(err)
			}
			if second.Created || second.PR.Number != 1 || second.PR.Body != "second" {
				t.Errorf("second Ensure = %+v %+v, want pull request 1 updated", second, second.PR)
			}
			got := srv.Pulls()
			want := []forgetest.Pull{{Number: 1, Title: "web: INC-4211", Body: "second", Head: "hotfix/web-inc-4211", Base: "main", State: "open",
				Labels: []string{"hotfix", "team-web"}, Reviewers: []string{"alice", "bob"}, Edits: 1}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the forge holds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindReadsEveryPageAndMatchesBothBranches(t *testing.T) {
	for _, f := range fakes {
		t.Run(string(f.kind), func(t *testing.T) {
			var pulls []forgetest.Pull
			pulls = append(pulls, forgetest.Pull{Title: "ours", Head: "hotfix/web", Base: "main"})
			for i := range 5 { // newer, listed first: other bases of the same head, other heads
				pulls = append(pulls, forgetest.Pull{Title: "other", Head: "hotfix/web", Base: fmt.Sprintf("release-%d", i)})
				pulls = append(pulls, forgetest.Pull{Title: "other", Head: fmt.Sprintf("feature-%d", i), Base: "main"})
			}
			srv, c := f.start(t, forgetest.Options{Pulls: pulls})
			got, err := c.Find(t.Context(), forge.Query{Head: "hotfix/web", Base: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.Number != 1 || got.Title != "ours" {
				t.Fatalf("Find = %+v, want pull request 1", got)
			}
			lists := 0
			for _, r := range srv.Requests() {
				if r.Method == "GET" && (strings.HasSuffix(r.Path, "/pulls") || strings.HasSuffix(r.Path, "/merge_requests")) {
					lists++
				}
			}
			if lists < 2 {
				t.Errorf("%d list requests: the match was on a later page, so Find must page", lists)
			}
			none, err := c.Find(t.Context(), forge.Query{Head: "hotfix/other", Base: "main"})
			if err != nil || none != nil {
				t.Errorf("Find of a branch with no pull request = %+v, %v", none, err)
			}
		})
	}
}

func TestADuplicateCreateIsErrExistsWithTheForgesMessage(t *testing.T) {
	for _, f := range fakes {
		t.Run(string(f.kind), func(t *testing.T) {
			srv, c := f.start(t, forgetest.Options{Pulls: []forgetest.Pull{{Title: "open", Head: "hotfix/web", Base: "main"}}})
			srv.Expect(f.duplicate)
			_, err := c.Create(t.Context(), forge.PullRequest{Title: "again", Head: "hotfix/web", Base: "main", Body: "x"})
			var apiErr *forge.APIError
			if !errors.Is(err, forge.ErrExists) || !errors.As(err, &apiErr) || apiErr.Status != f.duplicate || !strings.Contains(strings.ToLower(err.Error()), "already exists") {
				t.Fatalf("Create = %v, want ErrExists with status %d and the forge's words", err, f.duplicate)
			}
			if n := len(srv.Pulls()); n != 1 {
				t.Errorf("%d pull requests, want 1", n)
			}
		})
	}
}

func TestAWrongTokenIsRefusedAndNotShown(t *testing.T) {
	for _, f := range fakes {
		t.Run(string(f.kind), func(t *testing.T) {
			srv := f.serve(t, forgetest.Options{Owner: "acme", Name: "deploy", Token: token})
			srv.Expect(401)
			wrong := "wrong-token-that-must-not-show"
			c, err := forge.New(forge.Options{Kind: f.kindOf(), APIURL: srv.APIURL, RepoURL: srv.RepoURL(), Token: wrong, HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Find(t.Context(), forge.Query{Head: "hotfix/web", Base: "main"})
			var apiErr *forge.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Message == "" || strings.Contains(err.Error(), wrong) {
				t.Errorf("Find = %v, want a 401 with the forge's message and no token", err)
			}
		})
	}
}

func TestGetAndFindAllSeeAMergedPullRequest(t *testing.T) {
	for _, f := range fakes {
		t.Run(string(f.kind), func(t *testing.T) {
			srv, c := f.start(t, forgetest.Options{Pulls: []forgetest.Pull{{Title: "fix", Head: "hotfix/web", Base: "main"}}})
			srv.Merge(1)
			got, err := c.Get(t.Context(), 1)
			if err != nil || got.State != forge.StateMerged {
				t.Errorf("Get = %+v, %v; want merged", got, err)
			}
			open, err := c.Find(t.Context(), forge.Query{Head: "hotfix/web", Base: "main"})
			if err != nil || open != nil {
				t.Errorf("Find of open ones = %+v, %v; want none", open, err)
			}
			any, err := c.Find(t.Context(), forge.Query{Head: "hotfix/web", Base: "main", All: true})
			if err != nil || any == nil || any.State != forge.StateMerged {
				t.Errorf("Find of all = %+v, %v; want the merged one", any, err)
			}
		})
	}
}

func TestWhatAForgeCannotDoIsAWarning(t *testing.T) {
	cases := []struct {
		f    fake
		want []string
	}{
		{fakes[0], []string{"reviewer other/sre: GitHub asks only teams of acme"}},
		{fakes[2], []string{"reviewer acme/sre: GitLab takes users as reviewers, not groups", "reviewer other/sre: GitLab takes users as reviewers, not groups", "reviewer nobody: no such GitLab user"}},
		{fakes[3], []string{"label unknown: the repository has no such label"}},
	}
	for _, c := range cases {
		t.Run(string(c.f.kind), func(t *testing.T) {
			srv, client := c.f.start(t, forgetest.Options{Labels: []string{"hotfix"}, Users: []string{"alice"}})
			pr := forge.PullRequest{Title: "t", Body: "b", Head: "h", Base: "main", Labels: []string{"hotfix", "unknown"}, Reviewers: []string{"alice", "acme/sre", "other/sre"}}
			if c.f.kind == forge.GitLab {
				pr.Reviewers = append(pr.Reviewers, "nobody")
			}
			res, err := forge.Ensure(t.Context(), client, pr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, res.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if got := srv.Pulls()[0]; !contains(got.Reviewers, "alice") || !contains(got.Labels, "hotfix") {
				t.Errorf("pull request %+v lacks what the forge can do", got)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestEnsureSendsTheRequestsEachAPIDocuments pins, per forge, the requests
// of a first and a second Ensure: a list, a create and the decorations,
// then a list and an edit.
func TestEnsureSendsTheRequestsEachAPIDocuments(t *testing.T) {
	for _, f := range fakes {
		t.Run(string(f.kind), func(t *testing.T) {
			srv, c := f.start(t, forgetest.Options{Labels: []string{"hotfix"}, Users: []string{"alice"}})
			pr := forge.PullRequest{Title: "web: INC-4211", Body: "b", Head: "hotfix/web-inc-4211", Base: "main", Labels: []string{"hotfix"}, Reviewers: []string{"alice"}}
			for range 2 {
				if _, err := forge.Ensure(t.Context(), c, pr); err != nil {
					t.Fatal(err)
				}
			}
			var b strings.Builder
			for _, r := range srv.Requests() {
				fmt.Fprintf(&b, "%d %s %s", r.Status, r.Method, r.Path)
				if r.Query != "" {
					fmt.Fprintf(&b, "?%s", r.Query)
				}
				b.WriteByte('\n')
			}
			golden.Check(t, "ensure-"+string(f.kind)+".golden", []byte(b.String()))
		})
	}
}
