package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/calricon/driftscan/report"
)

// AuditRun is the scan of the same estate with --audit-log: what reading
// the control plane's audit log and naming each finding's user added.
type AuditRun struct {
	Driftscan Tool `json:"driftscan"`
	// LogMiB is the size of the audit log folder read.
	LogMiB float64 `json:"logMiB"`
	// Stats are the report's stats.audit.
	Stats report.AuditStats `json:"stats"`
	// ByConfidence counts the findings' attributions.
	ByConfidence map[report.Confidence]int `json:"byConfidence"`
	// ExtraWallSeconds and ExtraRSSMiB are what the audit log added to the
	// scan without it.
	ExtraWallSeconds float64 `json:"extraWallSeconds"`
	ExtraRSSMiB      float64 `json:"extraRssMiB"`
}

// timeAudit times the scan with the control plane's audit log folder.
func timeAudit(ctx context.Context, l *launcher, bin string, b *bed, outDir string, runs int, without Tool) (*AuditRun, error) {
	dir := b.env.AuditLog.Dir
	t, _, r, err := timeDriftscan(ctx, l, bin, b, outDir, runs, nil, "--audit-log", dir)
	if err != nil {
		return nil, err
	}
	a := &AuditRun{Driftscan: t, ByConfidence: map[report.Confidence]int{},
		ExtraWallSeconds: t.WallSeconds - without.WallSeconds, ExtraRSSMiB: t.MaxRSSMiB - without.MaxRSSMiB}
	if r.Stats.Audit != nil {
		a.Stats = *r.Stats.Audit
	}
	for _, app := range r.Apps {
		for _, o := range app.Objects {
			for _, f := range o.ActiveFindings() {
				if f.Attribution != nil {
					a.ByConfidence[f.Attribution.Confidence]++
				}
			}
		}
	}
	files, err := b.env.AuditLog.Files()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			a.LogMiB += mib(fi.Size())
		}
	}
	return a, nil
}

// print writes the audit run as a few lines.
func (a *AuditRun) print(w io.Writer) {
	fmt.Fprintf(w, "\nWith --audit-log (%.0f MiB of audit log): %.2fs wall (%+.2fs), %.0f MiB max RSS (%+.0f MiB)\n",
		a.LogMiB, a.Driftscan.WallSeconds, a.ExtraWallSeconds, a.Driftscan.MaxRSSMiB, a.ExtraRSSMiB)
	fmt.Fprintf(w, "  audit events read %d, kept %d, matched %d; attributions: exact %d, candidate %d, none %d\n",
		a.Stats.Read, a.Stats.Kept, a.Stats.Matched,
		a.ByConfidence[report.ConfidenceExact], a.ByConfidence[report.ConfidenceCandidate], a.ByConfidence[report.ConfidenceNone])
}
