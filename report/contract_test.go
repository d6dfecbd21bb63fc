package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// contractReport has a human edit that violates contract production, a set
// image nobody is known to have made, and an uncovered finding.
func contractReport() *Report {
	r := New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), "prod-eu")
	r.Apps = []App{{Name: "web", Owner: "team-web", Objects: []Object{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod-a", Name: "web", Findings: []Finding{
			{Path: ".data.LOG_LEVEL", Type: TypeChanged, Class: ClassHuman, Manager: "kubectl-edit", Git: "info", Live: "debug",
				Contract: &ContractVerdict{Name: "production", Verdict: VerdictViolation}},
			{Path: ".data.MODE", Type: TypeChanged, Class: ClassPipeline, Manager: "kubectl-set", Git: "a", Live: "b",
				Contract: &ContractVerdict{Name: "production", Verdict: VerdictUnknown}},
		}},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "web", Findings: []Finding{
			{Path: ".data.X", Type: TypeChanged, Class: ClassHuman, Manager: "kubectl-edit", Git: "1", Live: "2",
				Contract: &ContractVerdict{Verdict: VerdictUncovered}},
		}},
	}}}
	r.Finalize()
	return r
}

func TestTableAndMarkdownShowTheContractVerdicts(t *testing.T) {
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		var buf bytes.Buffer
		if err := Write(&buf, f, contractReport(), DefaultWriteOptions()); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, want := range []string{"violates contract production", "contract production: unknown until an audit attribution says who",
			"contracts: 1 violation, 1 unknown, 1 uncovered"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s does not say %q:\n%s", f, want, out)
			}
		}
	}
}
