package report

import "testing"

// How every text output (table, Markdown, HTML, JUnit) names where an app
// came from: a Git source by its commit, a chart from a repository by its
// name and the version rendered when the revision asked is a constraint.
func TestSourceTextNamesTheChartAndVersion(t *testing.T) {
	for _, tt := range []struct {
		src  Source
		want string
	}{
		{Source{Repo: "https://git.example.com/org/deploy.git", Path: "apps/web", Revision: "main", Commit: "3f2a1c9e0000000000000000000000000000000"}, "https://git.example.com/org/deploy.git apps/web @ main (3f2a1c9)"},
		{Source{Repo: "https://charts.example.com", Chart: "web", Revision: "^1.2", Version: "1.2.3"}, "https://charts.example.com chart web @ ^1.2 (1.2.3)"},
		{Source{Repo: "oci://registry.example.com/charts", Chart: "web", Revision: "1.2.3", Version: "1.2.3"}, "oci://registry.example.com/charts chart web @ 1.2.3"},
		{Source{Repo: "https://charts.example.com", Chart: "web", Version: "2.0.0"}, "https://charts.example.com chart web @ 2.0.0"},
	} {
		if got := sourceText(tt.src); got != tt.want {
			t.Errorf("sourceText(%+v) = %q, want %q", tt.src, got, tt.want)
		}
	}
}
