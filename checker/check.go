package checker

import (
	"fmt"
	"slices"
	"strings"
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
	// DefaultLinearizableTimeout for each million operations the model
	// may hold (the history's sends and reads; the model's own, for a
	// search made again after a pair was found). Only the search's time
	// counts, not the building of what it searches.
	LinearizableTimeout time.Duration
	// VisualizationPath is where porcupine's HTML visualization is written
	// when the history is not linearizable; empty writes nothing.
	VisualizationPath string
	// SkipLinearizability leaves porcupine out; its two results are then
	// unknown.
	SkipLinearizability bool
	// Progress, if set, is told how far the check has come, in words
	// ("12 of 21 checks done; linearizability: partition 2 of 3"): after
	// each check ends, and as linearizability, most of a long history's
	// judging, begins each partition. Its calls never overlap.
	Progress func(step string)

	// linPart, set by CheckHistory, is told as linearizability begins
	// partition p of n.
	linPart func(p, n int)
}

// checkers are the checkers of every anomaly but linearizability's two
// (Linearizability) and the transactions' (txnCheckers), in the order
// of Names.
func checkers() []func(*History) Result {
	return []func(*History) Result{
		LostWrite, Unseen, Crash, Duplicate, InconsistentOffsets, NonmonotonicSend,
		PollSkip, NonmonotonicPoll, AbortedRead, GarbageRead, ReplicaDivergence,
		ISRInvariant, AckBelowMinISR, NoConvergence, StuckPartition, StuckConsumer,
		OffsetRegression, FencedCommit, UnreadBelowCommit, StuckGroup,
	}
}

// Check runs every checker on ops, marks the anomalies cfg permits as
// expected, and gives the verdict (see Results.Valid).
func Check(ops []history.Op, cfg Config, opts Options) *Results {
	return CheckHistory(NewHistory(ops, cfg), opts)
}

// CheckHistory is Check of a history already indexed (by NewHistory, or
// a Builder that read it as it streamed past), under the configuration it
// was indexed for.
func CheckHistory(h *History, opts Options) *Results {
	cfg := h.asked
	checks := checkers()
	if h.cfg.Transactions {
		// Reported only for a history judged with transactions: a
		// queue's results stay as they were.
		checks = append(checks, txnCheckers()...)
	}
	rs := make([]Result, len(checks), len(checks)+2)
	var wg sync.WaitGroup
	var lin []Result
	// With the index in a file the checks take turns, each after the
	// pages the last one read are given back: the judge maps what one
	// check reads, not what all read at once (a 2-hour run's whole
	// index), for a second more in all at 2 hours (linearizability,
	// most of the time, is alone either way). In the heap nothing is
	// given back, and they run side by side.
	turns := h.HeldInFile()
	if opts.SkipLinearizability {
		for _, name := range []string{NonlinearizableSendName, StaleReadName} {
			f := h.newFinding(name)
			f.noEvidence("linearizability was skipped")
			lin = append(lin, f.result())
		}
	}
	total := len(checks)
	if !opts.SkipLinearizability {
		total++
	}
	tell := &progressLine{tell: opts.Progress, of: total}
	opts.linPart = tell.partBegins
	run := func(f func()) {
		do := func() { f(); tell.done() }
		if turns {
			h.giveBack()
			do()
			return
		}
		wg.Go(do)
	}
	for i, c := range checks {
		run(func() { rs[i] = c(h) })
	}
	if !opts.SkipLinearizability {
		run(func() { lin = Linearizability(h, opts); tell.linOver() })
	}
	wg.Wait()
	// Linearizability's two results come after the others in Names.
	rs = slices.Insert(rs, slices.Index(namesFor(h.cfg.Transactions), NonlinearizableSendName), lin...)
	for i := range rs {
		if why, ok := cfg.Unsupported[rs[i].Name]; ok {
			// What a check found without the evidence it needs is
			// not kept: it would be judged on a part of it.
			rs[i] = Result{Name: rs[i].Name, Valid: Unknown, NotChecked: why, Unsupported: true,
				Details: []string{"not checked: " + why}, Why: rs[i].Why, Permits: rs[i].Permits}
		}
	}

	ran := h.faults.ran(cfg)
	out := &Results{Config: cfg, FaultClass: FaultClass(cfg, ran), Faults: kindsOf(ran), Ops: map[string]OpCounts{}, Problems: h.problems,
		Liveness: LivenessSummary(h), LostWrites: LostWrites(h)}
	for _, r := range ran {
		if k := strings.TrimSpace(r.Kind); k != "" && k != "none" {
			if out.FaultWindows == nil {
				out.FaultWindows = map[string]int{}
			}
			out.FaultWindows[k]++
		}
	}
	for f, c := range h.counts {
		out.Ops[f] = *c
	}
	for i := range rs {
		switch {
		case rs[i].Forbidden > 0:
			out.Unexpected = append(out.Unexpected, rs[i].Name)
		case rs[i].Valid == Invalid && rs[i].Expected:
			out.Expected = append(out.Expected, rs[i].Name)
		}
	}
	out.Results = rs
	out.Valid = verdict(rs)

	// What limits the verdict as a whole.
	for _, r := range rs {
		if r.Unsupported {
			out.Notes = append(out.Notes, fmt.Sprintf("%s not checked: %s; the verdict speaks of the other checks", r.Name, r.NotChecked))
		}
	}
	if h.clientOps == 0 {
		out.Notes = append(out.Notes, "the history holds no client operation: nothing was tested")
		if out.Valid == Valid {
			out.Valid = Unknown
		}
	}
	for _, k := range kindsOf(declared(cfg)) {
		if !slices.Contains(out.Faults, k) {
			out.FaultsNotStarted = append(out.FaultsNotStarted, k)
		}
	}
	if n := h.faults.failed; n > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d fault windows reported an error when they started; they are not counted as faults that ran; the first: %s", n, h.faults.firstErr))
	}
	for _, k := range out.Faults {
		if why := cfg.Weakened[k]; why != "" {
			if out.Weakened == nil {
				out.Weakened = map[string]string{}
			}
			out.Weakened[k] = why
			out.Notes = append(out.Notes, fmt.Sprintf("%s ran weakened (%s): the verdict speaks of it as it ran", k, why))
		}
	}
	if cfg.Stopped != "" {
		// What was seen before the stop stands; what was not is not
		// known.
		out.Notes = append(out.Notes, "the run stopped before its time limit and had no final phase: "+cfg.Stopped)
		if out.Valid == Valid {
			out.Valid = Unknown
		}
	}
	if len(out.FaultsNotStarted) > 0 {
		if len(out.Faults) == 0 {
			out.Notes = append(out.Notes, fmt.Sprintf("no fault started, though %s was asked for: the run tested a healthy cluster only", strings.Join(out.FaultsNotStarted, ", ")))
			if out.Valid == Valid {
				out.Valid = Unknown
			}
		} else {
			out.Notes = append(out.Notes, fmt.Sprintf("judged by the faults that ran (%s); never started: %s", strings.Join(out.Faults, ", "), strings.Join(out.FaultsNotStarted, ", ")))
		}
	}
	return out
}

// progressLine tells Options.Progress how far CheckHistory has come: the
// checks that ended, of how many, and linearizability's partition.
type progressLine struct {
	mu          sync.Mutex
	tell        func(string)
	ended, of   int
	part, parts int // linearizability's partition (from 1); 0: none
}

func (l *progressLine) done() {
	if l.tell == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended++
	l.show()
}

func (l *progressLine) partBegins(p, n int) {
	if l.tell == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part, l.parts = p+1, n
	l.show()
}

// linOver: linearizability ended, and no partition is judged any more.
func (l *progressLine) linOver() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = 0
}

func (l *progressLine) show() {
	s := fmt.Sprintf("%d of %d checks done", l.ended, l.of)
	if l.part > 0 {
		s += fmt.Sprintf("; linearizability: partition %d of %d", l.part, l.parts)
	}
	l.tell(s)
}
