package backport

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/report"
)

func TestThePullRequestNamesTheAppTheIncidentAndTheDeadline(t *testing.T) {
	res := &Result{
		App: "payments", Reason: "backport reason", Branch: "hotfix/payments-inc-4211",
		Changes: []Change{{Edit: Edit{
			Object: ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "pay", Name: "api"},
			Path:   `.spec.template.spec.containers[name="api"].image`, Git: "api:1.4.2", Live: "api:1.4.3|hotfix",
			Class: report.ClassPipeline, Manager: "kubectl-set", Time: "2026-12-01T03:12:00Z",
		}, WrittenTo: "apps/payments/deployment.yaml", Via: "manifest"}, {Edit: Edit{
			Object: ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "pay", Name: "api"},
			Path:   `.spec.template.spec.containers[name="api"].env[name="API_TOKEN"].value`, Git: "***", Live: "*** (differs)",
			Class: report.ClassHuman, Manager: "kubectl-edit", Time: "2026-12-01T03:14:00Z",
		}, WrittenTo: "apps/payments/deployment.yaml", Via: "manifest"}},
		Skipped: []Skip{{Edit: Edit{Object: ObjectRef{Kind: "Secret", Namespace: "pay", Name: "certs"}, Path: ".data.tls.key", Git: "***", Live: "*** (differs)", Class: report.ClassHuman, Manager: "kubectl-edit"}, Reason: "Secret data is masked"}},
	}
	pr := res.PullRequest(PullRequestOptions{
		Breakglass: &report.Breakglass{By: "alice@example.com", Reason: "INC-4211 payment certs", Since: "2026-12-01T03:00:00Z", Until: "2026-12-01T05:00:00Z"},
		Base:       "main", Labels: []string{"hotfix", "hotfix"}, Reviewers: []string{"@alice", "alice", "acme/payments"},
	})
	if pr.Title != "Backport live hotfix of payments to Git: INC-4211 payment certs" || pr.Head != res.Branch || pr.Base != "main" {
		t.Errorf("pull request %q %s -> %s", pr.Title, pr.Head, pr.Base)
	}
	if diff := cmp.Diff([]string{"hotfix"}, pr.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"@alice", "acme/payments"}, pr.Reviewers); diff != "" {
		t.Errorf("reviewers (-want +got):\n%s", diff)
	}
	golden.Check(t, "pullrequest-breakglass.golden", []byte(pr.Body))
}

func TestCodeOwnersAreTheLastMatchingLineOfEachFile(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".gitlab"), 0o755); err != nil {
		t.Fatal(err)
	}
	owners := "# owners\n* @acme/platform\n[Payments]\n/apps/payments/ @acme/payments payments-lead@example.com\napps/**/values*.yaml @helm-owner # charts\n*.md @docs\n"
	if err := os.WriteFile(filepath.Join(root, ".gitlab", "CODEOWNERS"), []byte(owners), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		files []string
		want  []string
	}{
		{[]string{"apps/payments/deployment.yaml"}, []string{"@acme/payments"}},
		{[]string{"apps/payments/chart/values-prod.yaml"}, []string{"@helm-owner"}},
		{[]string{"apps/web/deployment.yaml", "apps/payments/x.yaml"}, []string{"@acme/platform", "@acme/payments"}},
		{[]string{"apps/payments/README.md"}, []string{"@docs"}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, CodeOwners(root, c.files)); diff != "" {
			t.Errorf("%v (-want +got):\n%s", c.files, diff)
		}
	}
	if got := CodeOwners(t.TempDir(), []string{"a.yaml"}); got != nil {
		t.Errorf("no CODEOWNERS: %v", got)
	}
}
