package report

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// The chart of the HTML report: one horizontal bar per app with findings,
// split by class, as inline SVG drawn here (no chart library, no script).
// Colours come from the page's style, by class name.

const (
	chartMaxApps   = 25  // bars drawn; the rest are summed up in a line
	chartBarWidth  = 520 // pixels for the longest bar
	chartRowHeight = 20
	chartBarHeight = 14
	chartCharWidth = 7 // an estimate of a label character, for the label column
	chartMaxLabel  = 32
	chartTotalRoom = 48
)

type htmlChart struct {
	Width, Height int
	LabelWidth    int
	Bars          []htmlBar
	// More says how many apps with findings are left out, and their findings.
	More string
}

type htmlBar struct {
	App      string
	Label    string // the app name, cut to fit the label column
	Y, TextY int
	Total    int
	TotalX   int
	Segments []htmlSegment
}

type htmlSegment struct {
	Class Class
	X, Y  int
	W, H  int
	N     int
	Title string
}

func newHTMLChart(r *Report) htmlChart {
	type appCount struct {
		name    string
		total   int
		byClass map[Class]int
	}
	var apps []appCount
	for _, a := range r.Apps {
		s := a.Summary()
		if s.Findings > 0 {
			apps = append(apps, appCount{a.Name, s.Findings, s.ByClass})
		}
	}
	sort.SliceStable(apps, func(i, j int) bool { return apps[i].total > apps[j].total })
	var c htmlChart
	if len(apps) == 0 {
		return c
	}
	if len(apps) > chartMaxApps {
		rest := 0
		for _, a := range apps[chartMaxApps:] {
			rest += a.total
		}
		c.More = fmt.Sprintf("and %s with %s, not drawn", plural(len(apps)-chartMaxApps, "more app"), plural(rest, "finding"))
		apps = apps[:chartMaxApps]
	}
	longest := 0
	for _, a := range apps {
		longest = max(longest, min(utf8.RuneCountInString(a.name), chartMaxLabel))
	}
	c.LabelWidth = longest*chartCharWidth + 12
	c.Width = c.LabelWidth + chartBarWidth + chartTotalRoom
	c.Height = len(apps) * chartRowHeight
	most := apps[0].total
	for i, a := range apps {
		b := htmlBar{
			App: a.name, Label: cut(a.name, chartMaxLabel), Total: a.total,
			Y: i*chartRowHeight + (chartRowHeight-chartBarHeight)/2, TextY: i*chartRowHeight + chartRowHeight - 6,
		}
		x, sum := c.LabelWidth, 0
		for _, cl := range Classes {
			n := a.byClass[cl]
			if n == 0 {
				continue
			}
			sum += n
			// Segments end at the rounded running sum, so they tile the bar.
			end := c.LabelWidth + sum*chartBarWidth/most
			w := max(end-x, 1)
			b.Segments = append(b.Segments, htmlSegment{Class: cl, X: x, Y: b.Y, W: w, H: chartBarHeight, N: n,
				Title: fmt.Sprintf("%s: %d %s", a.name, n, cl)})
			x += w
		}
		b.TotalX = x + 6
		c.Bars = append(c.Bars, b)
	}
	return c
}
