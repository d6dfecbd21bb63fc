package scanner

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/calricon/driftscan/config"
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
	redact    []redactRule
	sensitive *sensitive
	// reveal leaves Sensitive values unmasked (they are still marked).
	reveal bool
}

// redactRule is a compiled config.RedactRule.
type redactRule struct {
	path        *regexp.Regexp
	group, kind string
}

func newMasker(rules []config.RedactRule, sensitiveEnvNames []string, reveal bool) (*masker, error) {
	sens, err := newSensitive(sensitiveEnvNames)
	if err != nil {
		return nil, err
	}
	m := &masker{sensitive: sens, reveal: reveal}
	for _, r := range rules {
		re, err := regexp.Compile(r.Path)
		if err != nil {
			return nil, fmt.Errorf("redact %q: %w", r.Path, err)
		}
		m.redact = append(m.redact, redactRule{path: re, group: r.Group, kind: r.Kind})
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
	for _, r := range m.redact {
		if (r.kind == "" || (r.kind == kind && r.group == group)) && r.path.MatchString(f.Path) {
			hide = true
		}
	}
	if !hide && m.sensitive.matches(group, kind, f) {
		f.Sensitive = true
		hide = !m.reveal
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
