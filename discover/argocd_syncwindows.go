package discover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/calricon/driftscan/config"
)

// syncWindow is one of an AppProject's spec.syncWindows: from each time
// Schedule (cron, in TimeZone) fires, for Duration, a deny window blocks
// syncs of the Applications it matches and an allow window permits them
// (and, while no allow window is active, blocks them). See
// https://argo-cd.readthedocs.io/en/stable/user-guide/sync_windows/
type syncWindow struct {
	Kind           string   `json:"kind"`
	Schedule       string   `json:"schedule"`
	Duration       string   `json:"duration"`
	Applications   []string `json:"applications"`
	Namespaces     []string `json:"namespaces"`
	Clusters       []string `json:"clusters"`
	TimeZone       string   `json:"timeZone"`
	UseAndOperator bool     `json:"andOperator"`
	Description    string   `json:"description"`
}

// syncWindowsHorizon is how far ahead syncBlocked looks for the time
// automated syncs may run again.
const syncWindowsHorizon = 31 * 24 * time.Hour

// matchingWindows are the windows that apply to the Application a named
// name: Argo CD's SyncWindows.Matches, word for word (an application name,
// else a cluster by the destination's name or server, else a namespace;
// with andOperator, each list that is set must match).
func matchingWindows(ws []*syncWindow, name string, a *application) []*syncWindow {
	glob := func(patterns []string, value string) bool {
		for _, p := range patterns {
			if value != "" && (p == "*" || config.ArgoGlobMatch(p, value)) {
				return true
			}
		}
		return false
	}
	dst := a.Spec.Destination
	var out []*syncWindow
	for _, w := range ws {
		if w == nil {
			continue
		}
		matched, set := false, false
		if len(w.Applications) > 0 {
			set = true
			matched = glob(w.Applications, name)
		}
		if w.UseAndOperator && set && !matched {
			continue
		} else if !w.UseAndOperator && matched {
			out = append(out, w)
			continue
		}
		if len(w.Clusters) > 0 {
			set = true
			matched = glob(w.Clusters, dst.Name) || glob(w.Clusters, dst.Server)
		}
		if w.UseAndOperator && set && !matched {
			continue
		} else if !w.UseAndOperator && matched {
			out = append(out, w)
			continue
		}
		if len(w.Namespaces) > 0 {
			matched = false
			for _, n := range w.Namespaces {
				if n == "*" || config.ArgoGlobMatch(n, dst.Namespace) {
					matched = true
					break
				}
			}
		}
		if matched {
			out = append(out, w)
		}
	}
	return out
}

// parsedWindow is a syncWindow ready to be evaluated.
type parsedWindow struct {
	*syncWindow
	schedule cron.Schedule
	duration time.Duration
	offset   time.Duration // the time zone's offset from UTC, as of the scan
}

// parseWindows parses ws as Argo CD does: a five-field cron schedule, a Go
// duration, and the time zone's offset from UTC now (an unknown zone is
// UTC). An error is a window Argo CD cannot read either.
func parseWindows(ws []*syncWindow, now time.Time) ([]parsedWindow, error) {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	out := make([]parsedWindow, 0, len(ws))
	for _, w := range ws {
		s, err := parser.Parse(w.Schedule)
		if err != nil {
			return nil, fmt.Errorf("cannot parse schedule '%s': %w", w.Schedule, err)
		}
		d, err := time.ParseDuration(w.Duration)
		if err != nil {
			return nil, fmt.Errorf("cannot parse duration '%s': %w", w.Duration, err)
		}
		loc, err := time.LoadLocation(w.TimeZone)
		if err != nil {
			loc = time.UTC
		}
		_, off := now.In(loc).Zone()
		out = append(out, parsedWindow{syncWindow: w, schedule: s, duration: d, offset: time.Duration(off) * time.Second})
	}
	return out, nil
}

// activeAt says whether the window is open at t (SyncWindow.active): a
// start of its schedule falls in the duration before t, in its time zone.
func (w parsedWindow) activeAt(t time.Time) bool {
	t = t.UTC()
	return w.schedule.Next(t.Add(w.offset - w.duration)).Before(t.Add(w.offset))
}

// blocking are the windows of ws that keep Argo CD's automated sync from
// running at t, none when it may run (SyncWindows.CanSync(false, nil)):
// the open deny windows; else, when no allow window is open, the closed
// allow windows.
func blocking(ws []parsedWindow, t time.Time) []parsedWindow {
	var deny, allows []parsedWindow
	allowOpen := false
	for _, w := range ws {
		open := w.activeAt(t)
		switch {
		case w.Kind == "deny" && open:
			deny = append(deny, w)
		case w.Kind == "allow":
			allows = append(allows, w)
			allowOpen = allowOpen || open
		}
	}
	switch {
	case len(deny) > 0:
		return deny
	case allowOpen:
		return nil
	}
	return allows
}

// nextChange is the first time after t at which a window of ws opens or
// closes: the windows' state is constant in between.
func nextChange(ws []parsedWindow, t time.Time) time.Time {
	var next time.Time
	for _, w := range ws {
		local := t.UTC().Add(w.offset)
		start := w.schedule.Next(local)                                // the next opening
		end := w.schedule.Next(local.Add(-w.duration)).Add(w.duration) // the end of the earliest open one
		for _, c := range []time.Time{start, end} {
			c = c.Add(-w.offset)
			if c.After(t) && (next.IsZero() || c.Before(next)) {
				next = c
			}
		}
	}
	return next
}

// syncBlocks remembers syncBlocked's answers by project and matching
// windows: the apps of a project mostly share them, and an always-open
// window takes one step per minute of the horizon.
type syncBlocks map[string]string

// of says why Argo CD's automated sync (and with it self-heal) of the
// Application a named name is blocked at now by its project's sync windows
// ws, and until when; "" when it is not.
func (b syncBlocks) of(ws []*syncWindow, name, project string, a *application, now time.Time) string {
	matched := matchingWindows(ws, name, a)
	if len(matched) == 0 {
		return ""
	}
	key := project
	for _, w := range matched {
		key += fmt.Sprintf("\x00%p", w)
	}
	why, ok := b[key]
	if !ok {
		why = syncBlocked(matched, project, now)
		b[key] = why
	}
	return why
}

// syncBlocked says why Argo CD's automated sync is blocked at now by the
// windows matched, those of project that apply to an Application, and
// until when; "" when it is not. A window Argo CD cannot parse blocks
// automated syncs for good (the controller takes CanSync's error for
// "no").
func syncBlocked(matched []*syncWindow, project string, now time.Time) string {
	parsed, err := parseWindows(matched, now)
	if err != nil {
		return fmt.Sprintf("a sync window of AppProject %s cannot be read (%v), so Argo CD runs no automated sync of this Application until it is mended", project, err)
	}
	blockers := blocking(parsed, now)
	if len(blockers) == 0 {
		return ""
	}
	// A window opens just after its start (Argo CD's active takes a start
	// before, not at, the time), so each change is looked at a second on.
	for t := now; ; {
		t = nextChange(parsed, t)
		if t.IsZero() || t.Sub(now) > syncWindowsHorizon {
			return fmt.Sprintf("%s of AppProject %s blocks automated syncs for at least %d days", describeWindows(blockers), project, int(syncWindowsHorizon.Hours()/24))
		}
		more := blocking(parsed, t.Add(time.Second))
		if len(more) == 0 {
			return fmt.Sprintf("%s of AppProject %s blocks automated syncs until %s", describeWindows(blockers), project, t.UTC().Format("2006-01-02 15:04 MST"))
		}
		for _, w := range more {
			if !slices.ContainsFunc(blockers, func(b parsedWindow) bool { return b.syncWindow == w.syncWindow }) {
				blockers = append(blockers, w)
			}
		}
	}
}

// describeWindows names the windows that block automated syncs: deny
// windows while they are open, allow windows while they are closed.
func describeWindows(ws []parsedWindow) string {
	var deny, allow []string
	for _, w := range ws {
		d := fmt.Sprintf("%q for %s", w.Schedule, w.Duration)
		if w.TimeZone != "" {
			d += " in " + w.TimeZone
		}
		if w.Description != "" {
			d += " (" + w.Description + ")"
		}
		if w.Kind == "deny" {
			deny = append(deny, d)
		} else {
			allow = append(allow, d)
		}
	}
	var parts []string
	if len(deny) > 0 {
		parts = append(parts, plural(len(deny), "the deny sync window ", "the deny sync windows ")+strings.Join(deny, ", "))
	}
	if len(allow) > 0 {
		parts = append(parts, plural(len(allow), "the closed allow sync window ", "the closed allow sync windows ")+strings.Join(allow, ", "))
	}
	return strings.Join(parts, " and ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
