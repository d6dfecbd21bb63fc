package backport

import (
	"fmt"
	"slices"
	"strings"

	"github.com/calricon/driftscan/forge"
	"github.com/calricon/driftscan/report"
)

// PullRequestOptions say what a pull request says besides the result.
type PullRequestOptions struct {
	// Breakglass is the app's suspension, when it is suspended: who, why
	// and until when.
	Breakglass *report.Breakglass
	// Base is the branch the pull request goes to.
	Base string
	// Labels and Reviewers come from the app's owner (config) and the
	// repository's CODEOWNERS (CodeOwners).
	Labels, Reviewers []string
}

// Marker ends every body backport writes, so that a person (or a search)
// tells its pull requests from others.
const Marker = "<!-- driftscan:backport -->"

// PullRequest is the pull request that carries r to Git: a title naming the
// app and the reason (the suspension's, else r.Reason), a body with the
// findings (path, Git -> live, who, when), the break-glass record and a
// checklist. It shows only what the commit message shows: no Secret value,
// no value a redact rule masks, and a sensitive one masked even when
// written (Plan).
func (r *Result) PullRequest(o PullRequestOptions) forge.PullRequest {
	reason := r.Reason
	if o.Breakglass != nil && o.Breakglass.Reason != "" {
		reason = o.Breakglass.Reason
	}
	title := fmt.Sprintf("Backport live hotfix of %s to Git", r.App)
	if reason != "" {
		title += ": " + oneLine(reason)
	}
	if len(title) > 200 {
		title = title[:197] + "..."
	}
	return forge.PullRequest{
		Title: title, Body: r.pullRequestBody(o, reason), Head: r.Branch, Base: o.Base,
		Labels: dedupe(o.Labels), Reviewers: dedupe(o.Reviewers),
	}
}

func (r *Result) pullRequestBody(o PullRequestOptions, reason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Carries the live hotfix of app %s back to Git, so that the next sync keeps it instead of reverting production.\n\n", mdCode(r.App))
	if reason != "" {
		fmt.Fprintf(&b, "**Reason:** %s\n\n", mdEscape(oneLine(reason)))
	}
	b.WriteString("### Findings\n\n| path | Git -> live | who | when |\n|---|---|---|---|\n")
	for _, c := range r.Changes {
		fmt.Fprintf(&b, "| %s %s | %s -> %s | %s (%s) | %s |\n", mdCode(c.Object.String()), mdCode(c.Path),
			mdCode(shown(c.Git, 120)), mdCode(shown(c.Live, 120)), mdCode(managerOr(c.Manager)), c.Class, mdEscape(orDash(c.Time)))
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\n### Not carried back\n\nThe next sync still reverts these: carry them to Git by hand.\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s %s, by %s (%s): %s\n", mdCode(s.Object.String()), mdCode(s.Path), mdCode(managerOr(s.Manager)), s.Class, mdEscape(s.Reason))
		}
	}
	merge := "- [ ] Merge before the next sync reverts production\n"
	b.WriteString("\n### Break-glass\n\n")
	if bg := o.Breakglass; bg != nil {
		merge = fmt.Sprintf("- [ ] Merge before %s or the next sync reverts production\n", mdEscape(bg.Until))
		fmt.Fprintf(&b, "- suspended by: %s\n- reason: %s\n- since: %s\n- deadline: **%s**\n", mdEscape(orDash(bg.By)), mdEscape(oneLine(orDash(bg.Reason))), mdEscape(bg.Since), mdEscape(bg.Until))
	} else {
		b.WriteString("No break-glass suspension is recorded for this app: its reconciler may revert the hotfix at any sync.\n")
	}
	b.WriteString("\n### Checklist\n\n")
	b.WriteString("- [ ] The values above are the fix, and belong in Git\n")
	b.WriteString(merge)
	fmt.Fprintf(&b, "- [ ] After the merge: `driftscan breakglass resume %s` (it refuses while this is open)\n", r.App)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n> **Warning:** %s\n", mdEscape(w))
	}
	fmt.Fprintf(&b, "\nBranch %s, written by `driftscan backport`.\n\n%s\n", mdCode(r.Branch), Marker)
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dedupe keeps the first of each entry, "@" or not, in order.
func dedupe(list []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		k := strings.ToLower(strings.TrimPrefix(s, "@"))
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return slices.Clip(out)
}
