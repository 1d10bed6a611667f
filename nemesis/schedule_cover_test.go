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

// TestFitInterval: the interval chosen is the default when that has room
// for a window of every kind, else the longest in steps of 100ms that has,
// for every seed; it says when even the floor has not.
func TestFitInterval(t *testing.T) {
	four := []string{"kill", "partition", "pause", "slow-follower"}
	for _, c := range []struct {
		kinds   int
		limit   time.Duration
		want    time.Duration
		wantOK  bool
		comment string
	}{
		{2, 60 * time.Second, 10 * time.Second, true, "the default fits two kinds in 60 s (55 s)"},
		{4, 60 * time.Second, 5700 * time.Millisecond, true, "make run's kinds in chaos run's 60 s"},
		{3, 30 * time.Second, 3700 * time.Millisecond, true, "the README's external example"},
		{1, 10 * time.Second, 5 * time.Second, true, "one kind needs two intervals"},
		{1, 30 * time.Second, 10 * time.Second, true, "and no shorter than the default"},
		{4, 20 * time.Second, 1900 * time.Millisecond, true, "a short simulation"},
		{4, 10 * time.Second, MinChosenInterval, false, "below the floor: 10.5 s needed"},
		{4, 10500 * time.Millisecond, MinChosenInterval, true, "the floor, exactly"},
		{0, time.Second, 10 * time.Second, true, "no kinds, nothing to fit"},
	} {
		got, ok := FitInterval(c.kinds, c.limit, 10*time.Second)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: FitInterval(%d, %s) = %s, %v; want %s, %v", c.comment, c.kinds, c.limit, got, ok, c.want, c.wantOK)
			continue
		}
		if !ok || c.kinds == 0 {
			continue
		}
		if need := CoverTimeLimit(c.kinds, got); need > c.limit {
			t.Errorf("%s: %s needs %s, above %s", c.comment, got, need, c.limit)
		}
		if got < 10*time.Second {
			if next := got + chosenStep; CoverTimeLimit(c.kinds, next) <= c.limit {
				t.Errorf("%s: %s fits too, and is longer than %s", c.comment, next, got)
			}
		}
		kinds := four[:min(c.kinds, len(four))]
		for seed := uint64(0); seed < 300; seed++ {
			if miss := NewSchedule(kinds, got, c.limit, seed).Uncovered(kinds); len(miss) > 0 {
				t.Fatalf("%s: %s in %s, seed %d leaves %v without a window", c.comment, got, c.limit, seed, miss)
			}
		}
	}
}

// TestUncoveredCountsOverlaps: a window that Overlap made a composite
// covers each of its parts, so a run that started a kind only in one is
// not said to have left it out.
func TestUncoveredCountsOverlaps(t *testing.T) {
	s := Schedule{{Fault: "kill+pause", Start: time.Second, End: 2 * time.Second}, {Fault: "kill", Start: 3 * time.Second, End: 4 * time.Second}}
	if miss := s.Uncovered([]string{"kill", "pause", "partition"}); len(miss) != 1 || miss[0] != "partition" {
		t.Errorf("uncovered %v, want [partition]", miss)
	}
	if miss := s.Uncovered([]string{"pause+kill"}); len(miss) != 1 {
		t.Errorf("a listed composite is covered by its own windows only, got uncovered %v", miss)
	}
}
