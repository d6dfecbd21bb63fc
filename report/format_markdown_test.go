package report

import (
	"strings"
	"testing"
	"time"
)

func TestMdCodeSurvivesATableCell(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "nginx:1.25", "`nginx:1.25`"},
		{"a pipe is escaped for GFM tables", "a|b", "`a\\|b`"},
		{"a backtick gets a longer fence", "echo `date`", "`` echo `date` ``"},
		{"a run of backticks gets a longer fence still", "a``b", "```a``b```"},
		{"newlines and tabs stay on one line", "a\nb\tc", "`a\\nb\\tc`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mdCode(tt.in, 0); got != tt.want {
				t.Errorf("mdCode(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMdTextEscapesMarkdownSyntax(t *testing.T) {
	got := mdText("a|b *c* _d_ <script> `e`\nf")
	want := `a\|b \*c\* \_d\_ \<script\> ` + "\\`e\\`" + ` f`
	if got != want {
		t.Errorf("mdText = %q, want %q", got, want)
	}
}

func TestMarkdownEscapesValuesInFindingsTables(t *testing.T) {
	r := New(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), "prod")
	r.Apps = []App{{Name: "web", Objects: []Object{{
		Kind: "ConfigMap", Namespace: "web", Name: "cfg",
		Findings: []Finding{{Path: ".data.cmd", Type: TypeChanged, Class: ClassHuman, Manager: "kubectl-edit", Git: "a | b", Live: "run `x` | y"}},
	}}}}
	r.Finalize()
	out := string(mustWrite(t, FormatMarkdown, r))
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| human |") {
			row = line
		}
	}
	// A GFM table row splits on unescaped pipes: 8 cells need 9 of them.
	if n := strings.Count(row, "|") - strings.Count(row, `\|`); n != 9 {
		t.Errorf("row %q has %d unescaped pipes, want 9", row, n)
	}
	if !strings.Contains(row, "``run `x` \\| y``") {
		t.Errorf("row %q does not hold the live value in a double-backtick code span", row)
	}
}

func TestMarkdownDetailsBlocksRenderOnGitHub(t *testing.T) {
	out := string(render(t, FormatMarkdown, DefaultWriteOptions()))
	if open, closed := strings.Count(out, "<details>"), strings.Count(out, "</details>"); open != 6 || closed != 6 {
		t.Errorf("got %d <details> and %d </details>, want 6 of each: 3 drifted, 1 missing, 1 extra, 1 error", open, closed)
	}
	// GitHub renders Markdown inside <details> only after a blank line.
	if strings.Contains(out, "</summary>\n|") || strings.Contains(out, "|\n</details>") {
		t.Error("a table touches <summary> or </details> without a blank line")
	}
}
