package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/calricon/driftscan/run"
)

// progressLine shows how far a scan is on one line of a terminal's stderr.
// It is also the writer the log goes through, so that a log line during the
// scan first erases the progress line instead of being printed after it;
// the next update draws the line again. done erases it for good, before the
// report or anything else is written to the terminal.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool // the line is on screen
	ended bool // done was called: updates are dropped
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w} }

var stageNames = map[string]string{"render": "rendering apps", "list": "listing kinds", "compare": "comparing objects"}

func (p *progressLine) update(pr run.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s %d/%d", stageNames[pr.Stage], pr.Done, pr.Total)
	p.shown = true
}

// Write erases the progress line, then writes b.
func (p *progressLine) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	return p.w.Write(b)
}

// erasingBefore returns w such that writing to it first ends the progress
// line: the report goes to stdout, the same terminal.
func (p *progressLine) erasingBefore(w io.Writer) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		p.done()
		return w.Write(b)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// done erases the line; it is safe to call more than once.
func (p *progressLine) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	p.ended = true
}

func (p *progressLine) erase() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
