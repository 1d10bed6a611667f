package server

import (
	"context"
	"log"
	"sync/atomic"
	"time"

	"github.com/chaos-isr/chaos/internal/clockfault"
)

// faultClock is the clock a node reads: its true clock, as a clock fault
// in its data directory (package clockfault) shows it. The fault is read
// at the start and then every pollInterval, which is how a tester sets a
// running node's clock wrong and right again (a signal could arrive
// before a restarting process handles it, and kill it); the node's timers
// keep real time.
type faultClock struct {
	dir     string
	trueNow func() int64
	log     *log.Logger
	cur     atomic.Pointer[clockfault.Clock]
	lastErr string
}

func newFaultClock(ctx context.Context, dir string, trueNow func() int64, lg *log.Logger) *faultClock {
	k := &faultClock{dir: dir, trueNow: trueNow, log: lg}
	k.load()
	go func() {
		t := time.NewTicker(pollInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				k.load()
			}
		}
	}()
	return k
}

// pollInterval is how often a node looks for a change of its clock fault.
const pollInterval = 100 * time.Millisecond

// load reads the fault; one that has not changed keeps the moment it was
// set, so that a second signal does not restart a skew.
func (k *faultClock) load() {
	f, err := clockfault.Read(k.dir)
	if err != nil {
		if err.Error() != k.lastErr { // said once, not every poll
			k.lastErr = err.Error()
			k.log.Printf("clock fault: %v (the clock is left as it was)", err)
		}
		return
	}
	k.lastErr = ""
	if old := k.cur.Load(); old != nil && old.Fault == f || old == nil && f.True() {
		return
	}
	k.cur.Store(&clockfault.Clock{Since: k.trueNow(), Fault: f})
	if f.True() {
		k.log.Printf("clock set right")
	} else {
		k.log.Printf("clock fault: stepped by %v, running at %g times the true rate", f.Offset, f.Rate)
	}
}

// now is the time the node reads, in milliseconds.
func (k *faultClock) now() int64 {
	t := k.trueNow()
	if c := k.cur.Load(); c != nil {
		return c.Read(t)
	}
	return t
}
