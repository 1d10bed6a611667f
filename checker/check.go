package checker

import (
	"sync"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Options tune Check.
type Options struct {
	// LinearizableTimeout bounds porcupine's search of the whole history;
	// past it the linearizability results are unknown (unless a
	// contradicting pair of operations proves the anomaly, which needs no
	// search). Re-checking the windows around such pairs gets what is left
	// of it, and at least a tenth of it. Zero means
	// DefaultLinearizableTimeout.
	LinearizableTimeout time.Duration
	// VisualizationPath is where porcupine's HTML visualization is written
	// when the history is not linearizable; empty writes nothing.
	VisualizationPath string
	// SkipLinearizability leaves porcupine out; its two results are then
	// unknown.
	SkipLinearizability bool
}

// Check runs every checker on ops, marks the anomalies cfg permits as
// expected, and gives the verdict (see Results.Valid).
func Check(ops []history.Op, cfg Config, opts Options) *Results {
	h := NewHistory(ops)
	checks := []func(*History) Result{
		LostWrite, Unseen, Duplicate, InconsistentOffsets, NonmonotonicSend,
		PollSkip, NonmonotonicPoll, AbortedRead, GarbageRead, ReplicaDivergence,
	}
	rs := make([]Result, len(checks), len(checks)+2)
	var wg sync.WaitGroup
	var lin []Result
	if !opts.SkipLinearizability {
		wg.Go(func() { lin = Linearizability(h, cfg.Acks, opts) })
	} else {
		for _, name := range []string{NonlinearizableSendName, StaleReadName} {
			f := newFinding(name)
			f.note("not checked: linearizability was skipped")
			lin = append(lin, f.result(true))
		}
	}
	for i, c := range checks {
		wg.Go(func() { rs[i] = c(h) })
	}
	wg.Wait()
	rs = append(rs, lin...)

	perm := Permitted(cfg)
	out := &Results{Config: cfg, FaultClass: FaultClass(cfg.Faults), Ops: map[string]OpCounts{}, Problems: h.problems}
	for f, c := range h.counts {
		out.Ops[f] = *c
	}
	for i := range rs {
		p := perm[rs[i].Name]
		rs[i].Expected, rs[i].Why = p.Permitted, p.Why
		if rs[i].Valid == Invalid {
			if p.Permitted {
				out.Expected = append(out.Expected, rs[i].Name)
			} else {
				out.Unexpected = append(out.Unexpected, rs[i].Name)
			}
		}
	}
	out.Results = rs
	out.Valid = verdict(rs)
	return out
}
