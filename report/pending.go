package report

import (
	"fmt"
	"strings"
)

// Pending is what Git holds that the reconciler has not applied yet: the
// difference between the app rendered at the commit it last applied (what
// live is compared with) and at the commit it is told to reach. It is not
// drift: the next sync applies it.
type Pending struct {
	// Synced is the commit the reconciler last applied (Argo CD's last
	// sync, a Kustomization's status.lastAppliedRevision); for a chart
	// from a Helm repository, the chart version.
	Synced string `json:"synced"`
	// Target is the commit Git is at for the reconciler (the branch the
	// Application or GitRepository follows); for a chart from a Helm
	// repository, the newest version its target allows.
	Target string `json:"target"`
	// Objects are the objects the next sync adds, changes or deletes; only
	// paths are named, never values.
	Objects []PendingObject `json:"objects"`
	// Error says why the target could not be rendered; Objects is then empty.
	Error string `json:"error,omitempty"`
}

// PendingChange is what the next sync does to an object.
type PendingChange string

const (
	PendingAdded   PendingChange = "added"
	PendingChanged PendingChange = "changed"
	PendingRemoved PendingChange = "removed"
)

// PendingObject is one object the next sync changes.
type PendingObject struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Namespace  string        `json:"namespace"`
	Name       string        `json:"name"`
	Change     PendingChange `json:"change"`
	// Paths are the fields that differ, for a changed object.
	Paths []string `json:"paths,omitempty"`
}

// Notable says whether a report shows p: the next sync changes something,
// or the target could not be rendered. A nil Pending is not notable.
func (p *Pending) Notable() bool {
	return p != nil && (len(p.Objects) > 0 || p.Error != "")
}

// Summary is p in one line: how many objects the next sync changes,
// between which commits.
func (p *Pending) Summary() string {
	if p.Error != "" {
		return fmt.Sprintf("the reconciler's target has moved past what it applied (%s), and the target could not be rendered: %s", short(p.Synced), p.Error)
	}
	n := "1 object changes"
	if len(p.Objects) != 1 {
		n = fmt.Sprintf("%d objects change", len(p.Objects))
	}
	var what []string
	for _, o := range p.Objects {
		what = append(what, string(o.Change)+" "+o.Kind+"/"+o.Name)
	}
	return fmt.Sprintf("pending sync, not drift: %s at the next sync (applied %s, target %s): %s", n, short(p.Synced), short(p.Target), strings.Join(what, ", "))
}

func short(sha string) string {
	if len(sha) > 12 && strings.Trim(sha, "0123456789abcdef") == "" {
		return sha[:12]
	}
	return sha
}
