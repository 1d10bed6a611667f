package sim

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestParseSeeds: --seeds lists each seed once, in order; a refusal
// names the flag, the value and what it takes.
func TestParseSeeds(t *testing.T) {
	got, err := ParseSeeds("9-11, 3,10,1")
	if want := []uint64{9, 10, 11, 3, 1}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v %v, want %v", got, err, want)
	}
	for in, want := range map[string]string{
		"0-3":       `--seeds: "0-3" is not a seed, got "0-3"; seeds and ranges of seeds above 0`,
		"5-3":       `"5-3" is not a range from low to high`,
		"1-2000000": "more than 1000000 seeds",
	} {
		_, err := ParseSeeds(in)
		var fe *FlagError
		if !errors.As(err, &fe) || fe.Flag != "seeds" || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// TestFlagsCheck: the flags of a search and of a sweep go together only
// as they can, whichever is checked first naming its flag.
func TestFlagsCheck(t *testing.T) {
	given := func(names ...string) map[string]string {
		m := map[string]string{}
		for _, n := range names {
			m[n] = ""
		}
		return m
	}
	for _, tc := range []struct {
		f    Flags
		want string
	}{
		{Flags{Parallel: 1, ShrinkRuns: 5, Given: given("shrink-runs")}, "--shrink-runs: without --shrink, got 5"},
		{Flags{Parallel: 1, Shrink: true, Given: given()}, "--seed: missing; --shrink shrinks one failing run"},
		{Flags{Parallel: 1, Shrink: true, Runs: 3, Seed: 2, Given: given("runs", "seed")}, "--runs: given with --shrink, got 3"},
		{Flags{Parallel: 1, Shrink: true, Seed: 2, Given: given("seed")}, "--shrink-runs: below 1, got 0"},
		{Flags{Parallel: 1, Seeds: "1-3", Runs: 3}, "--runs: given with --seeds, got 3"},
		{Flags{Parallel: 0, Runs: 3}, "--parallel: below 1, got 0"},
		{Flags{Parallel: 1, Runs: -1}, "--runs: out of range, got -1; 1 to 1000000 runs, or 0 for one run"},
	} {
		if _, err := tc.f.Check(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
	seeds, err := Flags{Parallel: 1, Runs: 3, Seed: 7, Given: given("seed")}.Check()
	if !slices.Equal(seeds, []uint64{7, 8, 9}) || err != nil {
		t.Errorf("--runs 3 --seed 7: %v %v", seeds, err)
	}
	if seeds, err := (Flags{Parallel: 1}).Check(); seeds != nil || err != nil {
		t.Errorf("one run: %v %v", seeds, err)
	}
}

// TestSweepReplay: a run of a sweep replays with the sweep's command
// without its sweep flags, and with the run's seed.
func TestSweepReplay(t *testing.T) {
	args := []string{"/bin/chaos", "sim", "--seeds", "1-9", "--acks=1", "--parallel=4", "--keep-valid", "--shard", "1/2", "--store", "s"}
	got := SweepReplay(args, 5)
	if want := []string{"/bin/chaos", "sim", "--acks=1", "--store", "s", "--seed", "5"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := ShellCommand(got), "chaos sim --acks=1 --store s --seed 5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
