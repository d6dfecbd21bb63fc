package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/calricon/driftscan/run"
)

// progressLine shows how far a scan is on one line of a terminal's stderr,
// and erases itself when the scan is done.
type progressLine struct {
	mu sync.Mutex
	w  io.Writer
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w} }

var stageNames = map[string]string{"render": "rendering apps", "list": "listing kinds", "compare": "comparing objects"}

func (p *progressLine) update(pr run.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K%s %d/%d", stageNames[pr.Stage], pr.Done, pr.Total)
}

func (p *progressLine) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K")
}
