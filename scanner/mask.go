package scanner

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/redact"
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
	// secrets are, by app, the values its render took from Secrets (a
	// HelmRelease's valuesFrom, a Flux Kustomization's substituteFrom, a
	// chart's lookup of one): a value that holds one is masked wherever
	// it is. Renders add to them (addSecrets) while others are compared.
	secretsMu sync.RWMutex
	secrets   [][]string
}

// addSecrets adds values an app's render read from Secrets to its secrets.
func (m *masker) addSecrets(app int, values []string) {
	values = redact.Maskable(values)
	if len(values) == 0 {
		return
	}
	m.secretsMu.Lock()
	defer m.secretsMu.Unlock()
	if app >= 0 && app < len(m.secrets) {
		m.secrets[app] = append(m.secrets[app], values...)
	}
}

// secretsOf are app's secrets.
func (m *masker) secretsOf(app int) []string {
	m.secretsMu.RLock()
	defer m.secretsMu.RUnlock()
	if app < 0 || app >= len(m.secrets) {
		return nil
	}
	return m.secrets[app]
}

// appSecrets are the texts of each app's values from Secrets worth
// masking (redact.Maskable).
func appSecrets(apps []config.App) [][]string {
	out := make([][]string, len(apps))
	for i, a := range apps {
		var all []string
		if h := a.Source.Helm; h != nil {
			all = append(all, h.Secret...)
		}
		if k := a.Source.Kustomize; k != nil && k.Flux != nil {
			all = append(all, k.Flux.Secret...)
		}
		out[i] = redact.Maskable(all)
	}
	return out
}

// holdsSecret says whether the finding's values hold one of app's secrets.
func (m *masker) holdsSecret(app int, f *report.Finding) bool {
	for _, v := range m.secretsOf(app) {
		if strings.Contains(f.Git, v) || strings.Contains(f.Live, v) {
			return true
		}
	}
	return false
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
func (m *masker) mask(app int, group, kind string, f *report.Finding) {
	hide := group == "" && kind == "Secret" && secretPath(f.Path) || m.holdsSecret(app, f) ||
		holdsSealed(f.Git) || strings.Contains(f.Git, sopsCiphertext) // encrypted in Git: its live value is a secret too
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
