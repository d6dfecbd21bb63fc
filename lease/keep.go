package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrExpiring is the cause of a Keep context that ended because no renewal
// succeeded in time: the Lease would run out soon, and another holder may
// then take it.
var ErrExpiring = errors.New("lease could not be renewed before it runs out")

// Keep renews the Lease while work runs under it: every Duration/5 it
// moves renewTime to now. It returns a context for that work, which ends
// (with context.Cause saying why) when the Lease may no longer be relied
// on: it was lost (another holder took it, it was deleted: ErrLost), or no
// renewal succeeded for Duration*3/4, a quarter of Duration before it
// runs out (ErrExpiring), which leaves an attempt under way time to
// finish before another holder may take the Lease over. Work that stops
// when the context ends therefore never runs while another holder has
// the Lease.
//
// stop ends the renewals and waits for them; call it before Release.
func (l *Lease) Keep(ctx context.Context) (held context.Context, stop func()) {
	held, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	every := l.opts.Duration / 5
	limit := l.opts.Duration - l.opts.Duration/4
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		deadline := time.NewTimer(limit)
		defer deadline.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-deadline.C:
				cancel(fmt.Errorf("lease %s: %w (it runs out %s after the last renewal)", l, ErrExpiring, l.opts.Duration))
				return
			case <-tick.C:
				err := l.Renew(held)
				switch {
				case errors.Is(err, ErrLost):
					cancel(err)
					return
				case err == nil:
					deadline.Reset(limit)
				}
				// Any other failure (the API server away for a moment) is
				// tried again at the next tick, until the deadline.
			}
		}
	}()
	return held, func() {
		cancel(nil)
		<-done
	}
}
