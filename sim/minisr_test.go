package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/runner"
)

// minISRSpec is acks=-1, min.insync.replicas=2, replication factor 3,
// clean election, with one fault window that leaves a leader alone in its
// ISR for seconds:
//
//   - kill-majority: two of the three brokers die, the controller fences
//     them after the session timeout, and every partition is left to the
//     survivor alone in its ISR for the rest of the window;
//   - slow-followers-kill-leader (the scenario chaos bugs names for
//     min-isr-ignored): the followers of one partition are slowed until
//     its leader drops them from the ISR, and the leader keeps leading
//     alone until the fault kills it, 5 s into the window.
func minISRSpec(t *testing.T, fault string, bugs ...string) runner.Spec {
	s := runner.DefaultSpec()
	s.Runtime, s.Store, s.Rate = runner.RuntimeSim, t.TempDir(), 200
	s.Settings.ReplicationFactor, s.Settings.MinInsyncReplicas = 3, 2
	s.Settings.Bugs = bugs
	switch fault {
	case "kill-majority":
		s.TimeLimit = 10 * time.Second
		s.Settings.ReplicaLagTimeMaxMs, s.Settings.SessionTimeoutMs = 2000, 1000
		s.Windows = nemesis.Schedule{{Fault: fault, Start: 2 * time.Second, End: 7 * time.Second}}
	case "slow-followers-kill-leader":
		s.TimeLimit = 18 * time.Second
		s.Settings.ReplicaLagTimeMaxMs, s.Settings.SessionTimeoutMs = 2000, 2000
		s.Windows = nemesis.Schedule{{Fault: fault, Start: 2 * time.Second, End: 14 * time.Second}}
	default:
		t.Fatalf("no spec for %s", fault)
	}
	return s
}

// TestAckBelowMinISRCatchesMinISRIgnored: with the planted bug
// min-isr-ignored the lone leader acknowledges acks=-1 writes it must
// refuse, and ack-below-min-isr finds them in most seeds, alone (no write
// is lost under a clean election); on the same seeds without the bug the
// leader refuses them and the check, which had samples below the minimum
// to judge by, finds none.
func TestAckBelowMinISRCatchesMinISRIgnored(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	for _, c := range []struct {
		fault       string
		seeds, want int
	}{
		{"kill-majority", 20, 16},
		{"slow-followers-kill-leader", 6, 5},
	} {
		t.Run(c.fault, func(t *testing.T) {
			var seeds []uint64
			for s := uint64(1); s <= uint64(c.seeds); s++ {
				seeds = append(seeds, s)
			}
			caught, below := minISRSweeps(t, seeds, func(bugs ...string) runner.Spec { return minISRSpec(t, c.fault, bugs...) })
			if caught < c.want {
				t.Errorf("min-isr-ignored caught in %d of %d seeds, want at least %d", caught, c.seeds, c.want)
			}
			// Without the bug the faults did their part too: samples
			// below the minimum for long enough, where the leader
			// refused what the buggy one acknowledged.
			if below < c.want {
				t.Errorf("bug off: samples below the minimum long enough in %d of %d seeds, want at least %d", below, c.seeds, c.want)
			}
			t.Logf("caught in %d of %d seeds; without the bug, the ISR below the minimum long enough in %d, found in none", caught, c.seeds, below)
		})
	}
}

// minISRSweeps runs the seeds of spec with min-isr-ignored planted and
// without, and says in how many seeds ack-below-min-isr caught the bug, and
// in how many without it the monitor saw a run of samples below the
// minimum long enough to hold an acknowledgement. Every run with the bug
// that it caught must be invalid by it alone; no run without the bug may
// have an instance.
func minISRSweeps(t *testing.T, seeds []uint64, spec func(bugs ...string) runner.Spec) (caught, below int) {
	sweepOf := func(s runner.Spec) []SweepRun {
		runs := Sweep(context.Background(), s, seeds, SweepOptions{Parallel: 2})
		if len(runs) != len(seeds) {
			t.Fatalf("%d runs of %d", len(runs), len(seeds))
		}
		for _, r := range runs {
			if r.Err != nil || r.Outcome.Results == nil {
				t.Fatalf("seed %d: no verdict: %v", r.Seed, r.Err)
			}
		}
		return runs
	}
	get := func(r SweepRun) checker.Result {
		x, _ := r.Outcome.Results.Get(checker.AckBelowMinISRName)
		return x
	}
	for _, r := range sweepOf(spec("min-isr-ignored")) {
		x := get(r)
		if x.Forbidden == 0 {
			t.Logf("bug on, seed %d: not caught: %s %v", r.Seed, x.Valid, x.Stats)
			continue
		}
		caught++
		if res := r.Outcome.Results; res.Valid != checker.Invalid || !slices.Equal(res.Unexpected, []string{checker.AckBelowMinISRName}) {
			t.Errorf("bug on, seed %d: verdict %s, unexpected %v: want invalid by ack-below-min-isr alone", r.Seed, res.Valid, res.Unexpected)
		}
	}
	for _, r := range sweepOf(spec()) {
		x := get(r)
		if x.Count > 0 || x.Valid != checker.Valid {
			t.Errorf("bug off, seed %d: ack-below-min-isr %s count %d: %v", r.Seed, x.Valid, x.Count, x.Details)
		}
		if x.Stats["runs-long-enough"] > 0 {
			below++
		}
	}
	return caught, below
}
