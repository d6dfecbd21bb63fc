package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/calricon/driftscan/report"
)

// print writes the result as tables a person reads.
func (r *Result) print(w io.Writer) {
	fmt.Fprintf(w, "driftscan benchmark, %s, %d CPUs (%s), load %s, kube-apiserver %s\n",
		r.Date.Format("2006-01-02 15:04 MST"), r.Machine.CPUs, r.Machine.CPUModel, r.Machine.LoadAverage, r.Machine.KubeAPIServer)
	fmt.Fprintf(w, "%d objects in %d apps over %d namespaces, synced as argocd-controller in %.1fs; drifted: %s\n\n",
		r.Objects, r.Apps, r.Namespaces, r.ApplySeconds, driftText(r.Drift))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	d, k := r.Driftscan, r.Kubectl
	fmt.Fprintln(tw, "\tdriftscan\tkubectl diff\tkubectl/driftscan\t")
	row := func(name, ds, kc, ratio string) { fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, ds, kc, ratio) }
	skip := "skipped"
	kv := func(f func(*Tool) string) string {
		if k == nil {
			return skip
		}
		return f(k)
	}
	rt := func(f func(*Ratios) float64) string {
		if r.Ratios == nil {
			return "-"
		}
		return fmt.Sprintf("%.1fx", f(r.Ratios))
	}
	row("objects", fmt.Sprint(d.Objects), kv(func(t *Tool) string { return fmt.Sprint(t.Objects) }), "")
	row("findings", fmt.Sprint(d.Findings), kv(func(*Tool) string { return "-" }), "")
	row("drifted objects", fmt.Sprint(d.DriftedObjects), kv(func(t *Tool) string { return fmt.Sprint(t.DriftedObjects) }), "")
	row("wall seconds", fmt.Sprintf("%.2f", d.WallSeconds), kv(func(t *Tool) string { return fmt.Sprintf("%.2f", t.WallSeconds) }), rt(func(r *Ratios) float64 { return r.Wall }))
	row("CPU seconds (own)", fmt.Sprintf("%.2f", d.CPUSeconds), kv(func(t *Tool) string { return fmt.Sprintf("%.2f", t.CPUSeconds) }), "")
	row("API requests", fmt.Sprint(d.APIRequests), kv(func(t *Tool) string { return fmt.Sprint(t.APIRequests) }), rt(func(r *Ratios) float64 { return r.APIRequests }))
	row("max RSS MiB", fmt.Sprintf("%.0f", d.MaxRSSMiB), kv(func(t *Tool) string { return fmt.Sprintf("%.0f", t.MaxRSSMiB) }), rt(func(r *Ratios) float64 { return r.MaxRSS }))
	row("max anon RSS MiB", fmt.Sprintf("%.0f", d.MaxAnonMiB), kv(func(t *Tool) string { return fmt.Sprintf("%.0f", t.MaxAnonMiB) }), "")
	if d.Server != nil {
		sv := func(f func(*ServerCost) string) string {
			if k == nil || k.Server == nil {
				return skip
			}
			return f(k.Server)
		}
		row("kube-apiserver CPU s", fmt.Sprintf("%.2f", d.Server.APIServerCPUSeconds), sv(func(c *ServerCost) string { return fmt.Sprintf("%.2f", c.APIServerCPUSeconds) }), "")
		row("etcd CPU s", fmt.Sprintf("%.2f", d.Server.EtcdCPUSeconds), sv(func(c *ServerCost) string { return fmt.Sprintf("%.2f", c.EtcdCPUSeconds) }), "")
		row("control plane CPU s", fmt.Sprintf("%.2f", d.Server.CPUSeconds()), sv(func(c *ServerCost) string { return fmt.Sprintf("%.2f", c.CPUSeconds()) }), rt(func(r *Ratios) float64 { return r.ServerCPU }))
		row("kube-apiserver MiB sent", fmt.Sprintf("%.1f", mib(d.Server.APIServerBytesSent)), sv(func(c *ServerCost) string { return fmt.Sprintf("%.1f", mib(c.APIServerBytesSent)) }), "")
	}
	_ = tw.Flush()
	if f := r.Floor; f != nil {
		fmt.Fprintf(w, "LIST floor (bench/listfloor, the same %d LISTs read and discarded): %.2fs wall (%.2f CPU s), %d pages, %.1f MiB read, %.0f MiB max RSS",
			f.Lists, f.WallSeconds, f.CPUSeconds, f.Pages, mib(f.Bytes), f.MaxRSSMiB)
		if f.Server != nil {
			fmt.Fprintf(w, ", control plane %.2f CPU s", f.Server.CPUSeconds())
		}
		fmt.Fprintf(w, "; driftscan takes %.2fx the floor (fastest run over the estate's fastest floor run %.2fx)%s\n", r.OverFloor, r.FastestOverFloor, boundText(r.Bound))
	}
	if wm := r.Warm; wm != nil {
		writeWarm(w, wm)
	}
	if d.Server != nil {
		fmt.Fprintf(w, "control plane CPU includes its own housekeeping: %.3f CPU s per second at rest (%.2f s during driftscan's run)\n", r.ControlPlaneIdleCPU, d.Server.IdleCPUSeconds)
	}
	var classes []string
	for _, c := range report.Classes {
		if n := d.FindingsByClass[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, n))
		}
	}
	fmt.Fprintf(w, "driftscan findings by class: %s\n", strings.Join(classes, ", "))
	if n := d.Dismissed.Total(); n > 0 {
		fmt.Fprintf(w, "driftscan dismissed %d differences as no drift: %s\n", n, d.Dismissed)
	}
	fmt.Fprintf(w, "wall and peak RSS of each tool as a child of bench/rusage (its own floor: %.0f MiB); median of %d run(s)\n", d.RSSFloorMiB, max(1, len(d.RunsWallSeconds)))
	if k == nil {
		fmt.Fprintf(w, "kubectl diff skipped: %s\n", r.KubectlSkipped)
	} else {
		fmt.Fprintf(w, "kubectl requests by verb: %s\n", verbText(k.RequestsByVerb))
	}

	a := r.Agreement
	fmt.Fprintf(w, "\nAgreement: %s\n", holdsText(r))
	fmt.Fprintf(w, "  driftscan Drifted %d = %d with a Changed/Removed finding + %d Added-only; kubectl shows %d\n",
		a.DriftscanDrifted, a.DriftscanChangedOrRemoved, a.DriftscanAddedOnly, a.KubectlChanged)
	if r.Kubectl != nil {
		fmt.Fprintf(w, "  kubectl shows, driftscan not Drifted: %d%s\n", len(a.KubectlOnly), sample(a.KubectlOnly))
		fmt.Fprintf(w, "  driftscan Changed/Removed, kubectl shows nothing: %d%s\n", len(a.DriftscanOnly), sample(a.DriftscanOnly))
	}
	fmt.Fprintf(w, "  drifted by the bench, driftscan not Drifted: %d%s\n", len(a.Missed), sample(a.Missed))
	fmt.Fprintf(w, "  driftscan Drifted, not drifted by the bench: %d%s\n", len(a.Unexpected), sample(a.Unexpected))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  actor\tobjects\tdriftscan Drifted\tdriftscan Changed/Removed\tkubectl diff\t")
	for _, row := range a.ByActor {
		kc := "skipped"
		if row.Kubectl != nil {
			kc = fmt.Sprint(*row.Kubectl)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\t\n", row.Actor, row.Objects, row.Driftscan, row.DriftscanChangedOrRemoved, kc)
	}
	_ = tw.Flush()

	if q := r.Requests; q != nil {
		fmt.Fprintf(w, "\ndriftscan's requests (in-process scan, %.2fs): %d = %d discovery/OpenAPI + %d LIST pages + %d object requests\n",
			q.WallSeconds, q.Total, q.Discovery, pages(q.Lists), q.ObjectRequests)
		fmt.Fprintf(w, "  LISTs/pages: %s\n", listText(q.Lists))
		var parts []string
		for _, st := range q.Stages {
			parts = append(parts, fmt.Sprintf("%s %.2fs", st.Name, st.Seconds))
		}
		fmt.Fprintf(w, "  stages: %s\n", strings.Join(parts, ", "))
		if len(q.Other) > 0 {
			fmt.Fprintf(w, "  other:%s\n", sample(q.Other))
		}
	}

	if len(r.Scaling) > 0 {
		writeScaling(w, "Scaling (driftscan alone, a fresh control plane per size):", r.Scaling, r.Objects)
	}
	if len(r.Mixed) > 0 {
		writeScaling(w, "Mixed estates (a third of the apps Helm charts, a third kustomizations; driftscan alone):", r.Mixed, 0)
	}

	fmt.Fprintln(w, "\nTargets (issues 10 and 21):")
	for _, t := range r.Targets {
		mark := "MET    "
		switch {
		case t.Skipped:
			mark = "SKIPPED"
		case !t.Met:
			mark = "MISSED "
		}
		fmt.Fprintf(w, "  %s %s: want %s, got %s\n", mark, t.Name, t.Want, t.Got)
	}
}

func holdsText(r *Result) string {
	switch {
	case r.Kubectl == nil:
		return "not checked (kubectl skipped)"
	case r.Agreement.Holds:
		return "holds"
	default:
		return "DOES NOT HOLD"
	}
}

func driftText(d map[Actor]int) string {
	var parts []string
	for _, a := range actors {
		if d[a] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", a, d[a]))
		}
	}
	return strings.Join(parts, ", ")
}

func verbText(m map[string]int64) string {
	var parts []string
	for v, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", v, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// sample shows the first few of a list.
func sample(l []string) string {
	if len(l) == 0 {
		return ""
	}
	const n = 5
	if len(l) <= n {
		return " (" + strings.Join(l, ", ") + ")"
	}
	return fmt.Sprintf(" (%s, and %d more)", strings.Join(l[:n], ", "), len(l)-n)
}

// listText sums the LISTs of each resource: "deployments cluster-wide 1/10,
// horizontalpodautoscalers in 20 namespaces 20/20".
func listText(ls []ListRequest) string {
	type sum struct{ keys, lists, pages int }
	var order []string
	by := map[string]*sum{}
	for _, l := range ls {
		where := " in %d namespaces"
		if l.Namespace == "" {
			where = " cluster-wide"
		}
		k := l.Resource + where
		if by[k] == nil {
			by[k] = &sum{}
			order = append(order, k)
		}
		by[k].keys++
		by[k].lists += l.Lists
		by[k].pages += l.Pages
	}
	parts := make([]string, len(order))
	for i, k := range order {
		s := by[k]
		name := k
		if strings.Contains(k, "%d") {
			name = fmt.Sprintf(k, s.keys)
		}
		parts[i] = fmt.Sprintf("%s %d/%d", name, s.lists, s.pages)
	}
	return strings.Join(parts, ", ")
}

// writeWarm is one line on the scans with the scan cache.
func writeWarm(w io.Writer, wm *Warm) {
	fmt.Fprintf(w, "with the scan cache (docs/cache.md): filling it %.2fs (%.2f CPU s); then %.2fs wall (%.2f CPU s), %d objects in sync without a compare, %.0f MiB max RSS",
		wm.Fill.WallSeconds, wm.Fill.CPUSeconds, wm.Warm.WallSeconds, wm.Warm.CPUSeconds, wm.InSync, wm.Warm.MaxRSSMiB)
	if wm.Floor != nil {
		fmt.Fprintf(w, "; floor %.2fs, %.2fx the floor (fastest run over the estate's fastest floor run %.2fx)%s", wm.Floor.WallSeconds, wm.OverFloor, wm.FastestOverFloor, boundText(wm.Bound))
	}
	fmt.Fprintln(w)
}

// writeScaling writes the table of points under title; the warm figures
// of every point but the main estate's (mainObjects) follow it.
func writeScaling(w io.Writer, title string, points []ScalePoint, mainObjects int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\n"+title)
	fmt.Fprintln(tw, "objects\tapps\tfindings\tdrifted\twall s\tCPU s\tfloor s\tx floor\tfastest x floor\tCPU bound s\tx bound\tfloor x its bound\tµs/object\tAPI requests\tmax RSS MiB\tKiB/object\tcontrol plane CPU s\tload\t")
	for _, p := range points {
		cpu := "-"
		if p.Server != nil {
			cpu = fmt.Sprintf("%.2f", p.Server.CPUSeconds())
		}
		bound, over, floorOver := "-", "-", "-"
		if b := p.Bound; b != nil {
			bound, over, floorOver = fmt.Sprintf("%.2f", b.Seconds), fmt.Sprintf("%.2f", b.Over), fmt.Sprintf("%.2f", b.FloorOver)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%.0f\t%d\t%.0f\t%.1f\t%s\t%s\t\n", p.Objects, p.Apps, p.Findings, p.DriftedObjects, p.WallSeconds, p.CPUSeconds,
			p.FloorWallSeconds, p.OverFloor, p.FastestOverFloor, bound, over, floorOver, p.MicrosPerObject, p.APIRequests, p.MaxRSSMiB, p.MaxRSSMiB*1024/float64(max(1, p.Objects)), cpu, p.LoadAverage)
	}
	_ = tw.Flush()
	for _, p := range points {
		if p.Warm != nil && p.Objects != mainObjects {
			fmt.Fprintf(w, "  %d objects: ", p.Objects)
			writeWarm(w, p.Warm)
		}
	}
}
