package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/nemesis"
)

var livenessNames = []string{checker.NoConvergenceName, checker.StuckPartitionName, checker.StuckConsumerName}

// livenessFound names the liveness anomalies a run found.
func livenessFound(r SweepRun) []string {
	var out []string
	for _, n := range livenessNames {
		if x, _ := r.Outcome.Results.Get(n); x.Valid == checker.Invalid {
			out = append(out, n)
		}
	}
	return out
}

// TestLivenessCatchesPlantedBugs: the two planted liveness bugs under a
// plain partition-leader run (a follower that stops fetching once it
// truncated; a leader that serves nothing from below its epoch's start)
// are INVALID by the liveness anomaly they break in nearly every seed, and
// the same runs without the bug raise none. docs/guarantees.md has the
// rates over more seeds.
func TestLivenessCatchesPlantedBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	n := 8
	for _, c := range []struct {
		bug, anomaly string
	}{
		{"follower-stalls-after-truncation", checker.NoConvergenceName},
		{"fetch-stalls-below-epoch-start", checker.StuckConsumerName},
	} {
		t.Run(c.bug, func(t *testing.T) {
			s := spec(t, 0, "partition-leader")
			s.TimeLimit, s.NemesisInterval = 30*time.Second, 5*time.Second
			clean := s
			s.Settings.Bugs = []string{c.bug}
			caught := 0
			for _, r := range sweep(t, s, n) {
				if slices.Contains(livenessFound(r), c.anomaly) && r.Outcome.Verdict == checker.Invalid {
					caught++
				}
			}
			if caught < n*9/10 {
				t.Errorf("%s caught by %s in %d of %d seeds", c.bug, c.anomaly, caught, n)
			}
			for _, r := range sweep(t, clean, n) {
				if found := livenessFound(r); len(found) > 0 || r.Outcome.Verdict != checker.Valid {
					t.Errorf("without the bug: %v, %s", found, describe(r))
				}
			}
		})
	}
}

// TestLivenessNoFalseAlarm: a correct broker under every fault kind at
// once, overlapping up to three at a time (and, apart, with the loss of
// unsynced writes), with a tight bound (2 s session and lag timeouts: a
// 10 s bound), raises no liveness anomaly. The measured sweep of
// docs/guarantees.md is the same over thousands of seeds.
func TestLivenessNoFalseAlarm(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	n := 8
	if testing.Short() {
		n = 4
	}
	every := spec(t, 0, f1()...)
	every.TimeLimit, every.NemesisOverlap = 30*time.Second, 3
	// Every kind of the queue workload, the group's with the consumers a
	// group (the transactional sessions' pause-producer needs the txn
	// workload, whose sweeps are the simulation's txn tests).
	var kinds []string
	for _, k := range nemesis.Names() {
		if !nemesis.NeedsTxn([]string{k}) {
			kinds = append(kinds, k)
		}
	}
	lossy := spec(t, 0, kinds...)
	lossy.SubVia = "subscribe"
	lossy.TimeLimit = 30 * time.Second
	for _, c := range []struct {
		name string
		s    func(*testing.T) []SweepRun
	}{
		{"every kind overlapping", func(t *testing.T) []SweepRun { return sweep(t, every, n) }},
		{"every kind with lose-unsynced", func(t *testing.T) []SweepRun { return sweep(t, lossy, n) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range c.s(t) {
				if found := livenessFound(r); len(found) > 0 {
					t.Errorf("%v: %s", found, describe(r))
				}
			}
		})
	}
}
