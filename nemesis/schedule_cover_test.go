package nemesis

import (
	"testing"
	"time"
)

// TestScheduleCoversEveryKind: from CoverTimeLimit on, every kind of the
// list gets a window, for every seed; a shorter limit misses one for some
// seed (the bound is tight enough to be worth saying).
func TestScheduleCoversEveryKind(t *testing.T) {
	kinds := []string{"kill", "partition", "pause", "slow-follower"}
	for _, interval := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second} {
		limit := CoverTimeLimit(len(kinds), interval)
		for seed := uint64(0); seed < 1000; seed++ {
			s := NewSchedule(kinds, interval, limit, seed)
			if miss := s.Uncovered(kinds); len(miss) > 0 {
				t.Fatalf("interval %s, limit %s, seed %d: no window for %v in %s", interval, limit, seed, miss, s)
			}
		}
	}
	missed := false
	for seed := uint64(0); seed < 1000 && !missed; seed++ {
		missed = len(NewSchedule(kinds, 10*time.Second, 60*time.Second, seed).Uncovered(kinds)) > 0
	}
	if !missed {
		t.Error("60 s at 10 s intervals covered four kinds for 1,000 seeds: CoverTimeLimit says it cannot")
	}
}

// TestMakeRunCoversItsKinds: make run's nemesis (kill, partition, pause,
// slow-follower at --nemesis-interval 5s for 60 s, the Makefile's
// defaults) injects each kind at least once, whatever the seed.
func TestMakeRunCoversItsKinds(t *testing.T) {
	kinds := []string{"kill", "partition", "pause", "slow-follower"}
	if CoverTimeLimit(len(kinds), 5*time.Second) > 60*time.Second {
		t.Fatalf("four kinds at 5 s need %s, more than make run's 60 s", CoverTimeLimit(len(kinds), 5*time.Second))
	}
	for seed := uint64(0); seed < 1000; seed++ {
		if miss := NewSchedule(kinds, 5*time.Second, 60*time.Second, seed).Uncovered(kinds); len(miss) > 0 {
			t.Fatalf("seed %d: no window for %v", seed, miss)
		}
	}
}

// TestScheduleTimesKeptByTheDeck: dealing kinds from a deck leaves the
// times to the draw that chose a kind before: one kind and four (each
// draw takes one value) give a seed the same windows' times.
func TestScheduleTimesKeptByTheDeck(t *testing.T) {
	one := NewSchedule([]string{"kill"}, 10*time.Second, 60*time.Second, 1)
	four := NewSchedule([]string{"kill", "partition", "pause", "slow-follower"}, 10*time.Second, 60*time.Second, 1)
	if len(one) != len(four) {
		t.Fatalf("%d windows for one kind, %d for four: the deck changed the times", len(one), len(four))
	}
	for i := range one {
		if one[i].Start != four[i].Start || one[i].End != four[i].End {
			t.Fatalf("window %d: %s-%s for one kind, %s-%s for four", i, one[i].Start, one[i].End, four[i].Start, four[i].End)
		}
	}
}
