package main

import (
	"sort"

	"github.com/calricon/driftscan/report"
)

// Agreement compares driftscan's report with kubectl diff's output and with
// the drift the bench made itself.
type Agreement struct {
	// Holds: every object kubectl shows as changed is Drifted in driftscan,
	// and every object with a Changed or Removed driftscan finding is in
	// kubectl's output. False when kubectl was skipped.
	Holds bool `json:"holds"`
	// KubectlChanged, DriftscanDrifted, DriftscanChangedOrRemoved and
	// DriftscanAddedOnly count objects. Added-only objects are drift kubectl
	// cannot show: an apply leaves fields nobody in Git owns where they are.
	KubectlChanged            int `json:"kubectlChanged"`
	DriftscanDrifted          int `json:"driftscanDrifted"`
	DriftscanChangedOrRemoved int `json:"driftscanChangedOrRemoved"`
	DriftscanAddedOnly        int `json:"driftscanAddedOnly"`
	// KubectlOnly are objects kubectl shows that driftscan does not report
	// Drifted; DriftscanOnly are objects with a Changed or Removed finding
	// kubectl does not show. Both must be empty.
	KubectlOnly   []string `json:"kubectlOnly"`
	DriftscanOnly []string `json:"driftscanOnly"`
	// Missed are objects the bench drifted that driftscan does not report
	// Drifted; Unexpected are Drifted objects the bench did not drift.
	Missed     []string `json:"missed"`
	Unexpected []string `json:"unexpected"`
	// ByActor splits the counts by the actor that drifted each object.
	ByActor []ActorAgreement `json:"byActor"`
}

// ActorAgreement counts what each tool saw of one actor's drift.
type ActorAgreement struct {
	Actor   Actor `json:"actor"`
	Objects int   `json:"objects"`
	// Driftscan counts those reported Drifted, DriftscanChangedOrRemoved
	// those with a Changed or Removed finding, Kubectl those kubectl shows.
	Driftscan                 int  `json:"driftscan"`
	DriftscanChangedOrRemoved int  `json:"driftscanChangedOrRemoved"`
	Kubectl                   *int `json:"kubectl,omitempty"`
}

// agree checks the report against kubectl's changed objects (nil when kubectl
// was skipped) and against the plan.
func agree(r *report.Report, kubectl map[string]bool, p plan) Agreement {
	drifted, changedOrRemoved := map[string]bool{}, map[string]bool{}
	for _, app := range r.Apps {
		for _, o := range app.Objects {
			if o.Status != report.StatusDrifted {
				continue
			}
			ref := o.Ref()
			drifted[ref] = true
			for _, f := range o.ActiveFindings() {
				if f.Type == report.TypeChanged || f.Type == report.TypeRemoved {
					changedOrRemoved[ref] = true
				}
			}
		}
	}
	a := Agreement{
		KubectlChanged:            len(kubectl),
		DriftscanDrifted:          len(drifted),
		DriftscanChangedOrRemoved: len(changedOrRemoved),
		DriftscanAddedOnly:        len(drifted) - len(changedOrRemoved),
		KubectlOnly:               []string{},
		DriftscanOnly:             []string{},
		Missed:                    []string{},
		Unexpected:                []string{},
	}
	for ref := range kubectl {
		if !drifted[ref] {
			a.KubectlOnly = append(a.KubectlOnly, ref)
		}
	}
	if kubectl != nil {
		for ref := range changedOrRemoved {
			if !kubectl[ref] {
				a.DriftscanOnly = append(a.DriftscanOnly, ref)
			}
		}
	}
	for ref := range p {
		if !drifted[ref] {
			a.Missed = append(a.Missed, ref)
		}
	}
	for ref := range drifted {
		if _, ok := p[ref]; !ok {
			a.Unexpected = append(a.Unexpected, ref)
		}
	}
	for _, l := range [][]string{a.KubectlOnly, a.DriftscanOnly, a.Missed, a.Unexpected} {
		sort.Strings(l)
	}
	a.Holds = kubectl != nil && len(a.KubectlOnly) == 0 && len(a.DriftscanOnly) == 0

	rows := map[Actor]*ActorAgreement{}
	for ref, actor := range p {
		row := rows[actor]
		if row == nil {
			row = &ActorAgreement{Actor: actor}
			if kubectl != nil {
				row.Kubectl = new(int)
			}
			rows[actor] = row
		}
		row.Objects++
		if drifted[ref] {
			row.Driftscan++
		}
		if changedOrRemoved[ref] {
			row.DriftscanChangedOrRemoved++
		}
		if kubectl[ref] {
			*row.Kubectl++
		}
	}
	for _, actor := range actors {
		if row := rows[actor]; row != nil {
			a.ByActor = append(a.ByActor, *row)
		}
	}
	return a
}
