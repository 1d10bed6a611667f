package sim

import (
	"github.com/chaos-isr/chaos/broker/memdriver"
	"github.com/chaos-isr/chaos/cluster"
)

// A node whose state machine panics crashes alone (memdriver recovers
// the panic where it steps the node): the simulation goes on, the
// node's clients see their connections reset, the nemesis records the
// crash (with its panic and stack) and its next heal restarts the node,
// as in a real run whose broker process died.

// nodeCrashed is memdriver's OnCrash: the crash goes to the watcher, or
// waits for one (a crash before the workload starts).
func (w *world) nodeCrashed(cr memdriver.Crash) {
	c := cluster.Crash{Panic: cr.Panic, Stack: cr.Stack}
	if cr.Node != memdriver.ControllerID {
		c.ID = int(cr.Node)
		w.resetConns(cr.Node)
	}
	if w.onCrash == nil {
		w.crashes = append(w.crashes, c)
		return
	}
	w.onCrash(c)
}

var _ cluster.CrashWatcher = runtime{}

// WatchCrashes hands fn the crashes so far, then each as it happens.
func (r runtime) WatchCrashes(fn func(cluster.Crash)) {
	r.w.onCrash = fn
	pending := r.w.crashes
	r.w.crashes = nil
	for _, c := range pending {
		fn(c)
	}
}

// Crashed lists the nodes down since they crashed: the controller (0)
// first, then the brokers.
func (r runtime) Crashed() []int {
	var out []int
	if r.w.c.ControllerCrashed() {
		out = append(out, 0)
	}
	for id := 1; id <= r.w.brokers; id++ {
		if r.w.c.Crashed(int32(id)) {
			out = append(out, id)
		}
	}
	return out
}

// watchCrashes has the nemesis record every crash; a history that cannot
// be written stops the simulation.
func (s *simulation) watchCrashes() {
	runtime{s.w}.WatchCrashes(func(c cluster.Crash) {
		if err := s.nem.nem.RecordCrash(c); err != nil && s.err == nil {
			s.err = err
		}
	})
}

// violated is memdriver's OnViolation: the breach goes to the watcher,
// or waits for one.
func (w *world) violated(v memdriver.Violation) {
	if w.onViolation == nil {
		w.violations = append(w.violations, v)
		return
	}
	w.onViolation(v)
}

// watchViolations has the nemesis record every breach of the ISR
// invariant; a history that cannot be written stops the simulation.
func (s *simulation) watchViolations() {
	rec := func(v memdriver.Violation) {
		if err := s.nem.nem.RecordViolation(int(v.Broker), v.Topic, v.Partition, v.What); err != nil && s.err == nil {
			s.err = err
		}
	}
	s.w.onViolation = rec
	pending := s.w.violations
	s.w.violations = nil
	for _, v := range pending {
		rec(v)
	}
}
