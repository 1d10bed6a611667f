package sim

import "time"

// ticker is time.Ticker's timing on the virtual clock, for the loops that
// wait on one in a real run (the monitor's samples, the final phase's
// convergence checks): ticks every period from start, and one tick that
// passes while its reader is busy waits for it; the others are dropped.
type ticker struct {
	start, period time.Duration
	// read is when the reader last took a tick (or the ticker started).
	read time.Duration
}

func newTicker(start, period time.Duration) *ticker {
	return &ticker{start: start, period: period, read: start}
}

// next is when a reader that asks at now gets its next tick: now if one
// passed since it took the last, else the next one. It takes that tick.
func (t *ticker) next(now time.Duration) time.Duration {
	k := (t.read-t.start)/t.period + 1
	tick := t.start + k*t.period
	if tick <= now {
		tick = now
	}
	t.read = tick
	return tick
}
