package hunt

import (
	"context"
	"testing"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/sim"
)

// ciHunts are CI's hunts, one per planted bug: the hunt seed, and a budget
// of runs a few times what that seed needed when measured, so a change
// that costs the search its power fails the build, naming the bug.
// docs/hunt.md has the measured rates over ten seeds each.
var ciHunts = map[string]struct {
	seed uint64
	runs int
}{
	"ack-before-replicate":             {1, 20},
	"hw-ignores-isr":                   {1, 20},
	"isr-early-rejoin":                 {1, 20},
	"read-past-hw":                     {1, 20},
	"truncate-to-hw":                   {1, 20},
	"no-follower-truncation":           {1, 20},
	"min-isr-ignored":                  {1, 250},
	"offset-reuse":                     {1, 30},
	"follower-stalls-after-truncation": {1, 20},
	"fetch-stalls-below-epoch-start":   {1, 20},
	"truncation-index-out-of-range":    {1, 20},
	"unclean-when-clean":               {1, 30},
	"recovery-keeps-torn-tail":         {1, 60},
	"isr-shrink-without-controller":    {1, 20},
	"idempotence-no-dedup":             {1, 100},
	// Found at run 210 (two runs at once, as here); the budget is about
	// twice that, to keep CI's time within a couple of minutes.
	"epoch-truncation-single-round": {10, 500},
	// Seen by the simulator's ISR invariant (isr-invariant), at a
	// replication factor of 4 or 5; found at run 456 of seed 6.
	"isr-rejoin-before-epoch-start": {6, 900},
	// A zombie-follower window held while leaders are killed or paused
	// beside it (lanes); found at run 101 of seed 1.
	"stale-epoch-fetch": {1, 300},
}

// TestHuntFindsEveryBug: a short hunt with no scenario flag finds each
// planted bug that the table lists (the bugs of chaos bugs but those a
// hunt does not find within CI's budget, which docs/hunt.md names).
func TestHuntFindsEveryBug(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, name := range bug.Names() {
		h, ok := ciHunts[name]
		if !ok {
			t.Logf("%s: not in CI's hunts", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			res, err := Run(context.Background(), Options{Base: base(t, name), Seed: h.seed, Runs: h.runs, Parallel: 2, Feedback: true, Command: sim.ReplayCommand})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Findings) == 0 {
				t.Fatalf("hunt seed %d: %s not found in %d runs", h.seed, name, res.Runs)
			}
			t.Logf("found at run %d of %d: %v", res.Findings[0].Index, res.Runs, res.Findings[0].Outcome.Results.Unexpected)
		})
	}
}

// TestHuntControl: a hunt on the correct broker under the hunt's default
// promise (acks=-1, min.insync.replicas=2, clean election) finds nothing:
// a drawn scenario the guarantee model misjudged would be a false alarm.
// (With --draw-config the control hunts still find open cases, named in
// docs/hunt.md; CI keeps to what is clean so that a new one shows.)
func TestHuntControl(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	b := base(t)
	res, err := Run(context.Background(), Options{Base: b, Seed: 31, Runs: 150, Parallel: 2, Feedback: true, KeepGoing: true, Command: sim.ReplayCommand})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Findings {
		t.Errorf("run %d INVALID on the correct broker: %v; replay: %s", f.Index, f.Outcome.Results.Unexpected, sim.ShellCommand(sim.ReplayCommand(f.Spec)))
	}
	t.Logf("%d runs: %d valid, %d unknown, %d errors", res.Runs, res.Valid, res.Unknown, res.Errors)
}
