package sim

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
)

// zombieSchedule holds a follower's metadata stale (the controller's
// messages to it dropped) while the leader of the one partition is killed
// four times over: leadership moves away and comes back past it.
const zombieSchedule = "zombie-follower@2s+30s,kill-leader@4s+2s,kill-leader@10s+2s,kill-leader@16s+2s,kill-leader@22s+2s"

// TestLanes: a network window held across process windows replays byte
// for byte; the correct broker fences the zombie's fetches in its old
// epoch and stays VALID, while stale-epoch-fetch (a leader that serves
// them) lets the zombie back into the ISR with a log that diverged.
func TestLanes(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	w, err := nemesis.ParseSchedule(zombieSchedule)
	if err != nil {
		t.Fatal(err)
	}
	zombie := func(seed uint64, bugs ...string) SweepRun {
		s := spec(t, seed)
		s.Windows, s.Faults, s.NemesisInterval = w, nil, 0
		s.TimeLimit = 40 * time.Second
		s.Settings.Partitions, s.Settings.Bugs = 1, bugs
		o := run(t, s)
		return SweepRun{Seed: seed, Outcome: o}
	}
	a, b := zombie(1), zombie(1)
	if x, y := file(t, a.Outcome, results.HistoryFile), file(t, b.Outcome, results.HistoryFile); !bytes.Equal(x, y) {
		t.Fatalf("two runs of seed 1 differ (%d and %d bytes)", len(x), len(y))
	}
	for seed := uint64(1); seed <= 4; seed++ {
		if r := zombie(seed); r.Outcome.Verdict != checker.Valid {
			t.Errorf("correct broker: %s", describe(r))
		}
	}
	found := 0
	for seed := uint64(1); seed <= 12; seed++ {
		r := zombie(seed, "stale-epoch-fetch")
		if r.Outcome.Verdict == checker.Invalid && slices.Contains(r.Outcome.Results.Unexpected, "isr-invariant") {
			found++
		}
	}
	// Measured: 3 of these 12 seeds.
	if found == 0 {
		t.Errorf("stale-epoch-fetch: no seed of 12 INVALID by isr-invariant under %s", zombieSchedule)
	}
	t.Logf("stale-epoch-fetch found in %d of 12 seeds", found)
}
