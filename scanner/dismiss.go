package scanner

import (
	"sync"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/report"
)

// dismissals counts what the scan dismissed as no drift, by reason, across
// the workers that compare objects.
type dismissals struct {
	mu     sync.Mutex
	counts report.Dismissed
}

func (d *dismissals) addN(r report.Reason, n int) {
	d.mu.Lock()
	if d.counts == nil {
		d.counts = report.Dismissed{}
	}
	d.counts[r] += n
	d.mu.Unlock()
}

// snapshot returns the counts, nil when nothing was dismissed.
func (d *dismissals) snapshot() report.Dismissed {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.counts) == 0 {
		return nil
	}
	out := report.Dismissed{}
	for k, v := range d.counts {
		out[k] = v
	}
	return out
}

// dismiss lists a change that is no drift on its object, with its values
// masked like a finding's, when the scan explains what it dismissed. The
// caller counts it.
func (s *scan) dismiss(ro *report.Object, app int, group, kind string, ch change, owner *classify.Entry, res classify.Result) {
	if !s.opts.ExplainDismissed {
		return
	}
	// Masked exactly as a finding of the same change would be: Secret data,
	// redact rules, credentials in env vars (which need the path's
	// elements and the values).
	f := report.Finding{Path: pathText(ch.Path), Git: text(ch.Git, ch.GitPresent), Live: text(ch.Live, ch.LivePresent)}
	ch.record(&f)
	s.masker.mask(app, group, kind, &f)
	d := report.Dismissal{Path: f.Path, Type: ch.Type, Reason: res.Reason, Detail: res.Detail, Git: f.Git, Live: f.Live}
	if owner != nil {
		d.Manager = owner.Manager
	}
	ro.Dismissed = append(ro.Dismissed, d)
}
