package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/nemesis"
)

// TestFitSchedule: with no interval given, a list longer than the default
// schedule has room for gets a shorter interval, marked chosen and said in
// the header; a given one without room is refused with the time limit
// that has it, and accepted with AllowPartialSchedule; a limit too short
// even for the floor is refused naming the floor's time limit.
func TestFitSchedule(t *testing.T) {
	four := []string{"kill", "partition", "pause", "slow-follower"}
	spec := func(faults []string, limit, interval time.Duration) Spec {
		s := DefaultSpec()
		s.Faults, s.TimeLimit, s.NemesisInterval = faults, limit, interval
		return s
	}

	s := spec(four, time.Minute, DefaultNemesisInterval)
	if err := FitSchedule(&s, false); err != nil {
		t.Fatal(err)
	}
	if s.NemesisInterval != 5700*time.Millisecond || !s.NemesisIntervalChosen {
		t.Fatalf("four kinds in 60 s: interval %s, chosen %v; want 5.7s, chosen", s.NemesisInterval, s.NemesisIntervalChosen)
	}
	if n := s.IntervalNote(); n != "nemesis interval 5.7s, chosen so that each of the 4 kinds gets a window in 1m0s (--nemesis-interval sets one)" {
		t.Errorf("note %q", n)
	}
	for seed := uint64(1); seed <= 200; seed++ {
		s.Seed = seed
		if miss := s.Schedule().Uncovered(four); len(miss) > 0 {
			t.Fatalf("seed %d: no window for %v", seed, miss)
		}
	}
	if n := s.CoverageNote(); n != "" {
		t.Errorf("a chosen interval still warned: %s", n)
	}

	// Where the default fits, it stays, and nothing is said.
	s = spec(four[:2], time.Minute, DefaultNemesisInterval)
	if err := FitSchedule(&s, false); err != nil || s.NemesisInterval != DefaultNemesisInterval || s.NemesisIntervalChosen || s.IntervalNote() != "" {
		t.Errorf("two kinds in 60 s: %v, interval %s, chosen %v, note %q", err, s.NemesisInterval, s.NemesisIntervalChosen, s.IntervalNote())
	}

	// Given and too long: refused with the time limit that fits.
	s = spec(four, time.Minute, 10*time.Second)
	err := FitSchedule(&s, true)
	if err == nil || !strings.HasPrefix(err.Error(), "--nemesis-interval: too long for a window of each of the 4 kinds") ||
		!strings.Contains(err.Error(), "got 10s; --time-limit 1m45s or more") || !strings.Contains(err.Error(), "--nemesis-interval 5.7s or less") ||
		!strings.Contains(err.Error(), "--allow-partial-schedule") {
		t.Errorf("a given 10s for four kinds in 60 s: %v", err)
	}
	s.AllowPartialSchedule = true
	if err := FitSchedule(&s, true); err != nil || s.NemesisInterval != 10*time.Second || s.NemesisIntervalChosen {
		t.Errorf("allowed partial: %v, interval %s", err, s.NemesisInterval)
	}
	s.Seed = 3
	if s.CoverageNote() == "" {
		t.Error("a partial schedule allowed is not said before the run")
	}

	// Given and fitting: left alone.
	s = spec(four, time.Minute, 5*time.Second)
	if err := FitSchedule(&s, true); err != nil || s.NemesisInterval != 5*time.Second {
		t.Errorf("make run's 5s: %v, interval %s", err, s.NemesisInterval)
	}

	// Even the floor has no room: refused, naming the floor's limit.
	s = spec(four, 8*time.Second, DefaultNemesisInterval)
	err = FitSchedule(&s, false)
	if err == nil || !strings.HasPrefix(err.Error(), "--time-limit: too short for a window of each of the 4 kinds of --nemesis at the shortest nemesis interval chosen, 1s, got 8s; --time-limit 10.5s or more") ||
		!strings.Contains(err.Error(), "--allow-partial-schedule") {
		t.Errorf("four kinds in 8 s: %v", err)
	}
	s.AllowPartialSchedule = true
	if err := FitSchedule(&s, false); err != nil || s.NemesisInterval != nemesis.MinChosenInterval || !strings.Contains(s.IntervalNote(), "the shortest chosen") {
		t.Errorf("four kinds in 8 s, partial allowed: %v, interval %s, note %q", err, s.NemesisInterval, s.IntervalNote())
	}

	// No window at all is Validate's to refuse, with or without the flag.
	s = spec(four[:1], 5*time.Second, 10*time.Second)
	if err := FitSchedule(&s, true); err != nil {
		t.Errorf("one kind, no window at all: %v (Validate's refusal)", err)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "no fault window fits") {
		t.Errorf("Validate: %v", err)
	}

	// Windows given, or no faults: nothing to choose.
	s = spec(nil, time.Second, DefaultNemesisInterval)
	if err := FitSchedule(&s, false); err != nil || s.NemesisIntervalChosen {
		t.Errorf("no faults: %v, chosen %v", err, s.NemesisIntervalChosen)
	}
}
