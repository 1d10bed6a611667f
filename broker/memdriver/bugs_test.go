package memdriver

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
)

// TestRandomBugsBite: the planted bugs that this package's own random F1
// schedule can show (acks=-1, clean election, as TestRandomF1NoLoss) make it
// lose an acknowledged write or leave the replicas diverged in one of the
// first 40 seeds, and the same seeds up to that one lose nothing without
// the bug. It pins that each switch reaches a whole cluster through
// Options; how often the tester's checkers catch each bug is measured
// elsewhere.
func TestRandomBugsBite(t *testing.T) {
	minISR1 := control.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 3, MinInsyncReplicas: 1, Election: control.Clean}
	for _, tc := range []struct {
		bug  bug.Bug
		spec control.TopicSpec
	}{
		{bug.AckBeforeReplicate, safe},
		{bug.HWIgnoresISR, safe},
		{bug.NoFollowerTruncation, safe},
		{bug.OffsetReuse, safe},
		{bug.UncleanWhenClean, safe},
		// A leader that shrinks the ISR alone commits alone only when
		// min.insync.replicas lets it.
		{bug.ISRShrinkWithoutController, minISR1},
	} {
		t.Run(tc.bug.String(), func(t *testing.T) {
			for seed := uint64(1); seed <= 40; seed++ {
				what := bite(t, seed, bug.Of(tc.bug), tc.spec)
				if what == "" {
					continue
				}
				t.Logf("seed %d: %s", seed, what)
				for s := uint64(1); s <= seed; s++ {
					if what := bite(t, s, 0, tc.spec); what != "" {
						t.Fatalf("seed %d without the bug: %s", s, what)
					}
				}
				return
			}
			t.Fatalf("40 seeds with %s lost no acknowledged write and left no replica diverged", tc.bug)
		})
	}
}

// bite runs randomRun's schedule with bugs and says what went wrong: an
// acknowledged write missing from the leader's log at its offset, or a
// replica whose log differs from the leader's ("" if neither).
func bite(t *testing.T, seed uint64, bugs bug.Set, spec control.TopicSpec) string {
	opts := DefaultOptions(seed)
	opts.Broker.Bugs, opts.Controller.Bugs, opts.StorageBugs = bugs.On(bug.Broker), bugs.On(bug.Controller), bugs.On(bug.Storage)
	c, acked := randomSchedule(t, opts, 80, spec)
	converge(c)
	p := c.Partition("t", 0)
	if p == nil || p.Leader == control.NoLeader {
		return ""
	}
	final := c.Values(p.Leader, "t", 0)
	for _, v := range slices.Sorted(maps.Keys(acked)) {
		if off := acked[v]; off >= int64(len(final)) || final[off] != v {
			return fmt.Sprintf("acknowledged %s@%d lost", v, off)
		}
	}
	for id := int32(1); id <= 3; id++ {
		if got := c.Values(id, "t", 0); !slices.Equal(got, final) {
			return fmt.Sprintf("replica b%d diverged from leader b%d", id, p.Leader)
		}
	}
	return ""
}
