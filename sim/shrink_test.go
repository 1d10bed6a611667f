package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/planted"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// asAcksAll judges a run as package planted does: a failure planted by
// holding scenario 1's history to acks=-1's promise.
func asAcksAll(t testing.TB) func(runner.Outcome) []string {
	return func(o runner.Outcome) []string {
		u, err := planted.AsAcksAll(o.Dir)
		if err != nil {
			t.Error(err)
		}
		return u
	}
}

// plantedSpec is scenario 1 with other faults mixed in, for a search to
// remove: 40 s, a window every 5 s or so.
func plantedSpec(t testing.TB, seed uint64) runner.Spec {
	s := spec(t, seed, "partition-leader", "kill", "pause")
	s.Acks, s.Settings.MinInsyncReplicas = 1, 1
	s.TimeLimit, s.NemesisInterval = 40*time.Second, 5*time.Second
	return s
}

// TestExplicitSchedule: a seeded schedule written out as the spec's own
// windows (each time rounded up to the millisecond the virtual clock
// runs on) replays the seeded run byte for byte: the windows are all the
// seed gave the schedule.
func TestExplicitSchedule(t *testing.T) {
	s := plantedSpec(t, 5)
	e := Explicit(s)
	if len(e.Windows) < 3 || e.Faults != nil || e.NemesisInterval != 0 {
		t.Fatalf("written out: %s, faults %v, interval %s", e.Windows, e.Faults, e.NemesisInterval)
	}
	for _, w := range e.Windows {
		if w.Start%time.Millisecond != 0 || w.End%time.Millisecond != 0 {
			t.Errorf("%s: not in whole milliseconds", w)
		}
	}
	a, b := run(t, s), run(t, e)
	if x, y := file(t, a, results.HistoryFile), file(t, b, results.HistoryFile); !bytes.Equal(x, y) {
		t.Errorf("the schedule written out ran another history (%d bytes, seeded %d)", len(y), len(x))
	}
	tc, err := results.ReadTestConfig(filepath.Join(b.Dir, results.TestFile))
	if err != nil || !tc.ScheduleGiven || tc.Schedule.String() != e.Windows.String() {
		t.Errorf("test.json: given %v, schedule %s (%v)", tc.ScheduleGiven, tc.Schedule, err)
	}
	// The report lists the windows a replay runs (html/template writes
	// + as &#43;).
	listed := strings.ReplaceAll(e.Windows.String(), "+", "&#43;") + " (given (--schedule))"
	if page := string(file(t, b, results.ReportFile)); !strings.Contains(page, listed) {
		t.Errorf("the report does not list the schedule %s", e.Windows)
	}
}

// storeRuns lists the run directories a store holds.
func storeRuns(t *testing.T, store string) []string {
	t.Helper()
	runs, err := filepath.Glob(filepath.Join(store, "*", "2*"))
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestShrink: a planted failure with four windows of three kinds shrinks
// to a run with fewer windows and operations that still fails; the one
// run the search keeps in the store is the smallest, and replaying its
// spec gives its history byte for byte, failing the same way.
func TestShrink(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	s := plantedSpec(t, 5)
	judge := asAcksAll(t)
	var steps []ShrinkStep
	res, err := Shrink(context.Background(), s, ShrinkOptions{Runs: 150, Unexpected: judge, Progress: func(st ShrinkStep) { steps = append(steps, st) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs: %+v -> %+v, target %v; %s, %s, %d producers, %d consumers, %d partitions, %g sends/s",
		res.Runs, res.OriginalSize, res.Size, res.Target, res.Spec.Windows, res.Spec.TimeLimit,
		res.Spec.Concurrency, res.Spec.Consumers, res.Spec.Settings.Partitions, res.Spec.Rate)
	if o, n := res.OriginalSize, res.Size; n.Windows >= o.Windows || n.Ops >= o.Ops/10 || n.TimeLimit >= o.TimeLimit {
		t.Errorf("not smaller: %+v -> %+v", o, n)
	}
	if !slices.Contains(res.Target, checker.LostWriteName) || len(steps) != res.Runs || !steps[0].Fails {
		t.Errorf("target %v, %d steps of %d runs", res.Target, len(steps), res.Runs)
	}
	if sp := res.Spec; sp.Concurrency >= s.Concurrency && sp.Rate >= s.Rate && sp.Settings.Partitions >= s.Settings.Partitions {
		t.Errorf("the workload did not shrink: %+v", sp)
	}
	if runs := storeRuns(t, s.Store); len(runs) != 1 || runs[0] != res.Outcome.Dir {
		t.Errorf("the store keeps %v; want only the shrunk run %s", runs, res.Outcome.Dir)
	}
	again := run(t, res.Spec)
	if x, y := file(t, res.Outcome, results.HistoryFile), file(t, again, results.HistoryFile); !bytes.Equal(x, y) {
		t.Errorf("the shrunk spec replayed another history (%d bytes, then %d)", len(x), len(y))
	}
	if got := judge(again); !covers(got, res.Target) {
		t.Errorf("the replay shows %v; want %v", got, res.Target)
	}
}

// TestShrinkDeterministic: the same run and budget shrink the same way,
// step for step; a budget spent ends the search with the smallest run so
// far.
func TestShrinkDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	var trail [2][]string
	var found [2]runner.Spec
	for i := range 2 {
		s := plantedSpec(t, 5)
		s.TimeLimit = 25 * time.Second // two windows: the same first two as in 40 s
		res, err := Shrink(context.Background(), s, ShrinkOptions{Runs: 6, Unexpected: asAcksAll(t), Progress: func(st ShrinkStep) {
			trail[i] = append(trail[i], fmt.Sprintf("%s %v %v", st.What, st.Fails, st.Unexpected))
		}})
		if err != nil || !res.Exhausted || res.Runs != 6 {
			t.Fatalf("%v: exhausted %v after %d runs", err, res.Exhausted, res.Runs)
		}
		found[i] = res.Spec
		found[i].Store = ""
	}
	if !slices.Equal(trail[0], trail[1]) || !reflect.DeepEqual(found[0], found[1]) {
		t.Errorf("two searches differ:\n%v\n%v", trail[0], trail[1])
	}
}

// TestShrinkValid: a run that shows nothing forbidden has nothing to
// shrink, and leaves nothing in the store.
func TestShrinkValid(t *testing.T) {
	s := plantedSpec(t, 5)
	res, err := Shrink(context.Background(), s, ShrinkOptions{Runs: 10})
	if !errors.Is(err, ErrNotFailing) || res.Runs != 1 || !strings.Contains(err.Error(), "verdict VALID, unexpected: none") {
		t.Fatalf("%v after %d runs", err, res.Runs)
	}
	if runs := storeRuns(t, s.Store); len(runs) != 0 {
		t.Errorf("left in the store: %v", runs)
	}
}

// TestReproduce: the seed found is the first, in the order given, whose
// run shows the target, however many runs go at once; only its run stays
// in the store, and a target no seed shows is reported as not found.
func TestReproduce(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	// Every seed's run here loses writes and reorders sends under
	// acks=-1; the judge says seed 2's shows no nonmonotonic-send, so seed
	// 1 is the first to show both, whichever run ends first.
	seeds := []uint64{2, 1, 3}
	target := []string{checker.LostWriteName, checker.NonmonotonicSendName}
	judge := func(o runner.Outcome) []string {
		u := asAcksAll(t)(o)
		if o.Seed == 2 {
			u = slices.DeleteFunc(u, func(a string) bool { return a == checker.NonmonotonicSendName })
		}
		return u
	}
	for _, parallel := range []int{1, 2} {
		s := plantedSpec(t, 0)
		var ended []uint64
		rep := Reproduce(context.Background(), s, seeds, target, ReproduceOptions{Parallel: parallel, Unexpected: judge,
			Done: func(r SweepRun, _ bool) { ended = append(ended, r.Seed) }})
		if !rep.Found || rep.Run.Seed != 1 || len(rep.Runs) != 2 || rep.Runs[0].Seed != 2 || covers(rep.Unexpected[0], target) {
			t.Fatalf("parallel %d: found %v seed %d after %d runs (ended %v): %v", parallel, rep.Found, rep.Run.Seed, len(rep.Runs), ended, rep.Unexpected)
		}
		if runs := storeRuns(t, s.Store); len(runs) != 1 || runs[0] != rep.Run.Outcome.Dir {
			t.Errorf("parallel %d: the store keeps %v", parallel, runs)
		}
	}
	s := plantedSpec(t, 0)
	s.TimeLimit = 20 * time.Second
	rep := Reproduce(context.Background(), s, []uint64{1, 2}, []string{checker.GarbageReadName}, ReproduceOptions{Parallel: 2})
	if rep.Found || len(rep.Runs) != 2 {
		t.Errorf("garbage-read found: %v after %d runs", rep.Found, len(rep.Runs))
	}
	if runs := storeRuns(t, s.Store); len(runs) != 0 {
		t.Errorf("the store keeps %v", runs)
	}
}
