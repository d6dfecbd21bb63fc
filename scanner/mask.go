package scanner

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/calricon/driftscan/report"
)

// Masked values as the report shows them.
const (
	masked        = "***"
	maskedDiffers = "*** (differs)"
)

// masker hides Secret data and whatever a redaction rule matches before a
// value reaches the report, and so any log, golden file or notification.
type masker struct {
	redact []*regexp.Regexp
}

func newMasker(exprs []string) (*masker, error) {
	m := &masker{}
	for _, e := range exprs {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("redact %q: %w", e, err)
		}
		m.redact = append(m.redact, re)
	}
	return m, nil
}

// secretPath reports whether path is, or is under, a Secret's data.
func secretPath(path string) bool {
	for _, p := range []string{".data", ".stringData"} {
		if path == p || strings.HasPrefix(path, p+".") {
			return true
		}
	}
	return false
}

// mask replaces the finding's values when they must not leave: the texts
// show only whether they differ, the typed values are dropped and the
// finding is marked Masked.
func (m *masker) mask(group, kind string, f *report.Finding) {
	hide := group == "" && kind == "Secret" && secretPath(f.Path)
	for _, re := range m.redact {
		if re.MatchString(f.Path) {
			hide = true
		}
	}
	if !hide {
		return
	}
	f.Masked = true
	f.GitValue, f.LiveValue = nil, nil
	if f.Git != "" {
		f.Git = masked
	}
	if f.Live != "" {
		f.Live = masked
		if f.Git != "" {
			f.Live = maskedDiffers
		}
	}
}
