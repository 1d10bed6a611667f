package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// Shrinking: from a failing simulated run to a smaller one that still
// fails the same way. "The same way" is the target: the anomalies whose
// instances the configuration forbids (checker.Results.Unexpected) in the
// run to shrink, every one of which a smaller run must show too; it may
// show more (a run that lost the one anomaly but found another would be
// another bug, and a search that followed it would shrink that one). A
// candidate is judged only by running it: the simulation is fast enough
// (a second for a minute of test) that a search of a few hundred runs
// takes minutes, and no model of "what matters" is trusted over a run.
//
// The search is deterministic: candidates are tried in a fixed order,
// one at a time, each replayed from the same seed, so the same run and
// budget always shrink to the same spec. It goes:
//
//  1. the fault windows, delta-debugging style (ddmin): no window at all,
//     then halves, quarters, ... of the windows kept alone or dropped;
//  2. each window's length, then the quiet gap before it (moving it and
//     every later window earlier), by halving toward 100 ms;
//  3. the time limit, down to the end of the last window;
//  4. the partitions, producers, consumers and the rate, each by halving
//     toward 1 (0 consumers).
//
// and repeats the whole until a round changes nothing or the budget of
// runs is spent. A change is kept only if the run still fails; halving
// assumes that a smaller value that fails makes every value above it
// fail too, which is not always so: the result is a local minimum, small
// but not the smallest.
//
// What shrinking cannot remove: the seed (every choice of the run still
// comes from it, and another seed is another interleaving altogether),
// the cluster's size and settings (brokers, replication, timeouts: the
// configuration under judgment), and anything the seed decides within a
// window (its targets). A window's kind is kept or dropped, never
// changed.

// DefaultShrinkRuns bounds a search that was given no budget.
const DefaultShrinkRuns = 200

// ShrinkOptions configure Shrink.
type ShrinkOptions struct {
	// Runs bounds the simulations the search runs, the first (the run
	// to shrink, replayed) included; 0: DefaultShrinkRuns.
	Runs int
	// Target are the anomalies a smaller run must show; empty: the
	// unexpected anomalies of the run to shrink.
	Target []string
	// Version is recorded in each run's test.json.
	Version string
	// Command is what each run's test.json records as the command that
	// replays it (nil: none).
	Command func(runner.Spec) []string
	// Unexpected names the anomalies a run showed that its configuration
	// forbids; nil: its results' Unexpected. (A test plants a failure by
	// judging a run under a stricter promise than the one it ran with.)
	Unexpected func(runner.Outcome) []string
	// Progress is called after each run of the search.
	Progress func(ShrinkStep)
}

// ShrinkStep is one run of a search: the change it tried and whether the
// run still failed.
type ShrinkStep struct {
	Run, Budget int
	// What is the change tried, e.g. "windows 4 -> 2 (kept 1-2)".
	What string
	Spec runner.Spec
	// Fails: the run showed every anomaly of the target, so the change
	// is kept.
	Fails bool
	// Unexpected are the run's unexpected anomalies, Missing those of the
	// target it did not show; Err why it ended without a verdict.
	Unexpected, Missing []string
	Err                 error
}

// Shrunk is what a search found.
type Shrunk struct {
	// Original is the run to shrink, its schedule written out
	// (Explicit); Spec the smallest run found that still fails, or
	// Original if nothing smaller did.
	Original, Spec runner.Spec
	// OriginalSize and Size measure them.
	OriginalSize, Size Size
	// Outcome is Spec's run, kept in the store (every other run of the
	// search is removed from it).
	Outcome runner.Outcome
	// Target are the anomalies every kept run showed.
	Target []string
	// Runs is how many simulations the search ran; Exhausted says the
	// budget ended it, Interrupted that ctx did.
	Runs        int
	Exhausted   bool
	Interrupted bool
}

// Size is how big a run is: its windows, its client operations (sends,
// polls and end-offset reads invoked) and its time limit.
type Size struct {
	Windows   int
	Ops       int64
	TimeLimit time.Duration
}

// ErrNotFailing: the run to shrink (or to reproduce) does not show the
// target; errors.Is finds it in Shrink's error.
var ErrNotFailing = errors.New("the run shows no unexpected anomaly to keep")

// Explicit is spec with its schedule written out as Windows (Faults and
// the nemesis interval then say nothing more), each time rounded up to
// the millisecond. The simulation runs a window from the first whole
// millisecond at or after its time, so the rounding changes nothing of
// the run: spec and Explicit(spec) give the same history, byte for byte.
func Explicit(spec runner.Spec) runner.Spec {
	w := spec.Schedule()
	for i := range w {
		w[i].Start = time.Duration(ceilMs(w[i].Start)) * time.Millisecond
		w[i].End = time.Duration(ceilMs(w[i].End)) * time.Millisecond
	}
	spec.Windows, spec.Faults, spec.NemesisInterval = w, nil, 0
	if len(w) == 0 {
		spec.Windows = nil
	}
	return spec
}

// Shrink searches for a smaller run than spec (its seed included) that
// still fails as spec's run does: see the top of this file. It returns
// ErrNotFailing, with the run's outcome in Shrunk, when spec's run shows
// no unexpected anomaly (or not the target). A ctx that ends stops the
// search with the smallest run found so far.
func Shrink(ctx context.Context, spec runner.Spec, o ShrinkOptions) (Shrunk, error) {
	if o.Runs <= 0 {
		o.Runs = DefaultShrinkRuns
	}
	if spec.Seed == 0 {
		return Shrunk{}, errors.New("shrink: the run needs its seed")
	}
	if spec.Runtime == "" {
		spec.Runtime = runner.RuntimeSim
	}
	if err := Validate(spec); err != nil {
		return Shrunk{}, err
	}
	s := &shrinker{ctx: ctx, o: o, tried: map[string]bool{}}
	restore := saveLatest(spec.Store, spec.Normalized().Name)
	orig := Explicit(spec)
	if orig.Consumers < 0 {
		// One per partition, as a number: a search that lowers the
		// partitions must not lower the consumers with them unseen.
		orig.Consumers = int(orig.Settings.Partitions)
	}
	s.target = o.Target
	out, unexpected, err := s.run(orig)
	s.step("the run as given, its schedule written out", orig, unexpected, err)
	res := Shrunk{Original: orig, Spec: orig, Outcome: out, Runs: s.runs, Interrupted: out.Interrupted}
	if err != nil || out.Interrupted {
		removeRun(out)
		restore()
		return res, err
	}
	if len(s.target) == 0 {
		s.target = unexpected
	}
	res.Target = s.target
	if len(unexpected) == 0 || !covers(unexpected, s.target) {
		removeRun(out)
		restore()
		return res, fmt.Errorf("seed %d: %w (verdict %s, unexpected: %s)", spec.Seed, ErrNotFailing, verdictOf(out), names(unexpected))
	}
	s.best, s.bestOut = orig, out
	res.OriginalSize = sizeOf(orig, out)

	for round := 0; !s.stopped(); round++ {
		before := s.key(s.best)
		s.windows()
		s.windowTimes()
		s.timeLimit()
		s.workload()
		if s.key(s.best) == before {
			break
		}
	}
	res.Spec, res.Outcome, res.Size = s.best, s.bestOut, sizeOf(s.best, s.bestOut)
	res.Runs, res.Exhausted, res.Interrupted = s.runs, s.exhausted, ctx.Err() != nil
	if d := s.bestOut.Dir; d != "" {
		r := &results.Run{Store: s.best.Store, Test: filepath.Base(filepath.Dir(d)), Dir: d}
		_ = markLatest(r)
	}
	return res, nil
}

// shrinker is one search: the smallest failing run so far and the runs
// spent.
type shrinker struct {
	ctx     context.Context
	o       ShrinkOptions
	target  []string
	best    runner.Spec
	bestOut runner.Outcome
	runs    int
	// tried are the candidates run already (by key): a search that comes
	// back to one does not run it again.
	tried     map[string]bool
	exhausted bool
	steps     []ShrinkStep
}

func (s *shrinker) stopped() bool { return s.exhausted || s.ctx.Err() != nil }

// key identifies what a candidate runs: its spec without the command.
func (s *shrinker) key(spec runner.Spec) string {
	spec.Command = nil
	b, _ := json.Marshal(spec)
	return string(b)
}

// run runs one candidate and says which unexpected anomalies it showed.
func (s *shrinker) run(spec runner.Spec) (runner.Outcome, []string, error) {
	s.runs++
	spec.Command = nil
	if s.o.Command != nil {
		spec.Command = s.o.Command(spec)
	}
	out, err := Run(s.ctx, spec, runner.Options{Version: s.o.Version})
	if err != nil || out.Interrupted || out.Results == nil {
		return out, nil, err
	}
	if s.o.Unexpected != nil {
		return out, s.o.Unexpected(out), nil
	}
	return out, slices.Clone(out.Results.Unexpected), nil
}

func (s *shrinker) step(what string, spec runner.Spec, unexpected []string, err error) {
	st := ShrinkStep{Run: s.runs, Budget: s.o.Runs, What: what, Spec: spec, Unexpected: unexpected, Err: err,
		Fails: err == nil && len(unexpected) > 0 && covers(unexpected, s.target)}
	for _, x := range s.target {
		if !slices.Contains(unexpected, x) {
			st.Missing = append(st.Missing, x)
		}
	}
	s.steps = append(s.steps, st)
	if s.o.Progress != nil {
		s.o.Progress(st)
	}
}

// try runs cand, unless it was run before, the budget is spent or ctx
// ended, and keeps it as the smallest run if it still fails.
func (s *shrinker) try(what string, cand runner.Spec) bool {
	if s.stopped() {
		return false
	}
	if len(cand.Windows) == 0 {
		cand.Windows = nil
	}
	k := s.key(cand)
	if s.tried[k] || Validate(cand) != nil {
		return false
	}
	if s.runs >= s.o.Runs {
		s.exhausted = true
		return false
	}
	s.tried[k] = true
	out, unexpected, err := s.run(cand)
	if out.Interrupted {
		removeRun(out)
		return false
	}
	s.step(what, cand, unexpected, err)
	if !s.steps[len(s.steps)-1].Fails {
		removeRun(out)
		return false
	}
	removeRun(s.bestOut)
	s.best, s.bestOut = cand, out
	return true
}

// windows is ddmin over the fault windows: first none at all, then the
// windows cut into n chunks, each chunk kept alone, then each dropped;
// a failing candidate becomes the windows (n one less), else n doubles,
// until every window alone was dropped.
func (s *shrinker) windows() {
	w := s.best.Windows
	if len(w) == 0 {
		return
	}
	cand := s.best
	cand.Windows = nil
	if s.try(fmt.Sprintf("windows %d -> 0", len(w)), cand) {
		return
	}
	n := 2
	for len(s.best.Windows) >= 2 && !s.stopped() {
		w = s.best.Windows
		chunks := split(len(w), n)
		reduced := false
		for _, keep := range []bool{true, false} {
			for _, c := range chunks {
				var sub nemesis.Schedule
				var desc string
				for i := range w {
					if (i >= c[0] && i < c[1]) == keep {
						sub = append(sub, w[i])
					}
				}
				if keep {
					desc = "kept " + span(c)
				} else {
					desc = "dropped " + span(c)
				}
				if len(sub) == 0 || len(sub) == len(w) {
					continue
				}
				cand := s.best
				cand.Windows = sub
				if s.try(fmt.Sprintf("windows %d -> %d (%s)", len(w), len(sub), desc), cand) {
					reduced = true
					break
				}
			}
			if reduced {
				break
			}
		}
		switch {
		case reduced:
			n = max(n-1, 2)
		case n >= len(w):
			return
		default:
			n = min(2*n, len(w))
		}
	}
}

// split cuts n items into k chunks of near-equal size, as [from, to)
// index pairs.
func split(n, k int) [][2]int {
	var out [][2]int
	for i := range k {
		from, to := i*n/k, (i+1)*n/k
		if to > from {
			out = append(out, [2]int{from, to})
		}
	}
	return out
}

// span names a chunk of windows, counted from 1.
func span(c [2]int) string {
	if c[1]-c[0] == 1 {
		return fmt.Sprintf("window %d", c[0]+1)
	}
	return fmt.Sprintf("windows %d-%d", c[0]+1, c[1])
}

// The granularity of the durations a search tries, and the shortest
// window and quiet gap: finer steps cost runs and buy nothing a reader
// of the schedule cares about.
const (
	durStep = 100 * time.Millisecond
	minGap  = 100 * time.Millisecond
	minLen  = 100 * time.Millisecond
)

// windowTimes shortens each window, then the quiet gap before it.
func (s *shrinker) windowTimes() {
	for i := 0; i < len(s.best.Windows) && !s.stopped(); i++ {
		ev := s.best.Windows[i]
		s.lower(fmt.Sprintf("window %d (%s) length", i+1, ev.Fault), int64(minLen), int64(ev.End-ev.Start), int64(durStep),
			func(v int64) runner.Spec {
				c := s.best
				c.Windows = slices.Clone(c.Windows)
				c.Windows[i].End = c.Windows[i].Start + time.Duration(v)
				return c
			}, fmtDur)
		gapOf := func(w nemesis.Schedule) time.Duration {
			if i == 0 {
				return w[0].Start
			}
			return w[i].Start - w[i-1].End
		}
		if gapOf(s.best.Windows) < minGap {
			// It overlaps the window before it (another lane's): no
			// quiet time to shorten.
			continue
		}
		s.lower(fmt.Sprintf("quiet time before window %d", i+1), int64(minGap), int64(gapOf(s.best.Windows)), int64(durStep),
			func(v int64) runner.Spec {
				c := s.best
				c.Windows = slices.Clone(c.Windows)
				shift := gapOf(c.Windows) - time.Duration(v)
				for j := i; j < len(c.Windows); j++ {
					c.Windows[j].Start -= shift
					c.Windows[j].End -= shift
				}
				return c
			}, fmtDur)
	}
}

// timeLimit lowers the time limit to no less than the end of the last
// window (a window must close before the workload ends), or a second.
func (s *shrinker) timeLimit() {
	floor := time.Second
	if w := s.best.Windows; len(w) > 0 {
		floor = 0
		for _, ev := range w {
			floor = max(floor, ev.End)
		}
	}
	s.lower("time limit", int64(floor), int64(s.best.TimeLimit), int64(durStep), func(v int64) runner.Spec {
		c := s.best
		c.TimeLimit = time.Duration(v)
		return c
	}, fmtDur)
}

// workload lowers the partitions, the producers, the consumers and the
// rate.
func (s *shrinker) workload() {
	s.lower("partitions", 1, int64(s.best.Settings.Partitions), 1, func(v int64) runner.Spec {
		c := s.best
		c.Settings.Partitions = int32(v)
		return c
	}, fmtInt)
	s.lower("producers", 1, int64(s.best.Concurrency), 1, func(v int64) runner.Spec {
		c := s.best
		c.Concurrency = int(v)
		return c
	}, fmtInt)
	s.lower("consumers", 0, int64(s.best.Consumers), 1, func(v int64) runner.Spec {
		c := s.best
		c.Consumers = int(v)
		return c
	}, fmtInt)
	if s.best.Rate >= 2 {
		// 0 is "as fast as the producers go", not a lower rate.
		s.lower("rate (sends/s)", 1, int64(s.best.Rate), 1, func(v int64) runner.Spec {
			c := s.best
			c.Rate = float64(v)
			return c
		}, fmtInt)
	}
}

func fmtDur(v int64) string { return time.Duration(v).String() }
func fmtInt(v int64) string { return fmt.Sprint(v) }

// lower searches for the smallest value from lo up to cur (which fails)
// that still fails, by halving: values on the grid of step (cur itself
// may be off it), each tried at the middle of what is left, assuming
// that above a failing value all fail.
func (s *shrinker) lower(what string, lo, cur, step int64, at func(int64) runner.Spec, format func(int64) string) {
	if cur <= lo {
		return
	}
	// Grid values lo..hi below cur: l and h count steps.
	l := (lo + step - 1) / step
	h := (cur - 1) / step
	for l <= h && !s.stopped() {
		m := l + (h-l)/2
		v := m * step
		from := cur
		if s.try(fmt.Sprintf("%s %s -> %s", what, format(from), format(v)), at(v)) {
			cur, h = v, m-1
		} else {
			l = m + 1
		}
	}
}

// names lists anomalies for a message, "none" for none.
func names(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// covers says whether got names every anomaly of want.
func covers(got, want []string) bool {
	return !slices.ContainsFunc(want, func(x string) bool { return !slices.Contains(got, x) })
}

func verdictOf(o runner.Outcome) string {
	switch o.Verdict {
	case checker.Valid:
		return "VALID"
	case checker.Invalid:
		return "INVALID"
	case checker.Unknown:
		return "UNKNOWN"
	}
	return "none"
}

// sizeOf measures a run: its windows, the client operations its history
// invoked, and its time limit.
func sizeOf(spec runner.Spec, o runner.Outcome) Size {
	sz := Size{Windows: len(spec.Schedule()), TimeLimit: spec.TimeLimit}
	if o.Results != nil {
		for _, f := range []string{history.Send, history.Poll, history.EndOffset} {
			sz.Ops += o.Results.Ops[f].Invoke
		}
	}
	return sz
}

// saveLatest notes where the store's latest links point (the store's and
// test's), and returns what puts back those that a search left pointing
// at a run it removed, or at nothing: a search that keeps no run must not
// take the user's latest run away.
func saveLatest(store, test string) (restore func()) {
	links := []string{filepath.Join(store, "latest"), filepath.Join(store, results.TestName(test), "latest")}
	was := make([]string, len(links))
	for i, l := range links {
		was[i], _ = os.Readlink(l)
	}
	return func() {
		latestMu.Lock()
		defer latestMu.Unlock()
		for i, l := range links {
			if _, err := os.Stat(l); err == nil {
				continue // it points at a run that is there
			}
			_ = os.Remove(l)
			if was[i] != "" {
				if _, err := os.Stat(filepath.Join(filepath.Dir(l), was[i])); err == nil {
					_ = results.Relink(l, was[i])
				}
			}
		}
		_ = os.Remove(filepath.Dir(links[1])) // only if the search left it empty
	}
}

// removeRun removes a run of a search from the store, and its test's
// directory if that leaves it empty. A candidate that drops windows is
// another test (the nemesis is in the name), whose latest link the run
// pointed at itself: the link is moved to the test's newest run left, or
// removed with the directory, so that the search leaves no directory
// holding only a broken link.
func removeRun(o runner.Outcome) { RemoveRun(o.Dir) }

// RemoveRun removes the run directory dir from the store as removeRun
// says: a search (a shrink, a hunt) keeps only the runs it must.
func RemoveRun(dir string) {
	if dir == "" {
		return
	}
	_ = os.RemoveAll(dir)
	test := filepath.Dir(dir)
	latestMu.Lock()
	defer latestMu.Unlock()
	link := filepath.Join(test, "latest")
	if _, err := os.Stat(link); err != nil {
		_ = os.Remove(link)
		entries, _ := os.ReadDir(test)
		for i := len(entries) - 1; i >= 0; i-- {
			// Run directories are named by their start, so the last by
			// name is the newest.
			if e := entries[i]; e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
				_ = results.Relink(link, e.Name())
				break
			}
		}
	}
	_ = os.Remove(test) // only if empty
}
