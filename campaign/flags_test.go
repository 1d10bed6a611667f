package campaign

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// testFlags are chaos campaign's defaults with the named flags given.
func testFlags(given ...string) Flags {
	return Flags{
		Acks: "-1", MinInsyncReplicas: "2", Election: "clean", Nemesis: "none", Runs: 1, TimeLimit: 30 * time.Second,
		Runtime: runner.RuntimeLocal, FailOn: "unknown", Given: func(n string) bool { return slices.Contains(given, n) },
		CheckElection: func(string) error { return nil }, CheckNemesis: func(string) error { return nil },
	}
}

// testRunFlags reads --base-port and --nemesis-interval, as chaos run's
// flag set would, and whatever else begins with "--" as a flag without a
// value.
func testRunFlags(args []string) (runner.Spec, error) {
	s := testBase()
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--base-port", "--nemesis-interval":
			if i+1 == len(args) {
				return s, errors.New("flags for chaos run: needs a value")
			}
			if args[i] == "--base-port" {
				s.BasePort, _ = strconv.Atoi(args[i+1])
			}
			i++
		}
	}
	return s, nil
}

// TestResolveFlags: a setting given on the command line wins over the
// preset's, the matrix flags make a matrix, and each refusal names its
// flag before any cell is planned.
func TestResolveFlags(t *testing.T) {
	f := testFlags("runs")
	f.Preset, f.Runs, f.RunArgs = "seed", 5, []string{"--nodes", "5"}
	spec, err := f.Resolve(testRunFlags)
	if err != nil || spec.Runs != 5 || time.Duration(spec.TimeLimit) != 30*time.Second || len(spec.Acks) != 3 ||
		!slices.Equal(spec.RunArgs[len(spec.RunArgs)-2:], []string{"--nodes", "5"}) {
		t.Fatalf("--preset seed --runs 5 -- --nodes 5: %+v, %v", spec, err)
	}
	f = testFlags("acks", "nemesis")
	f.Acks, f.Nemesis = "0, all", "kill;pause,kill"
	if spec, err = f.Resolve(testRunFlags); err != nil || !slices.Equal(spec.Acks, []Acks{0, -1}) ||
		!slices.Equal(spec.Nemesis, []string{"kill", "pause,kill"}) || spec.Runtime != runner.RuntimeLocal {
		t.Fatalf("matrix flags: %+v, %v", spec, err)
	}
	for _, tc := range []struct {
		change func(*Flags)
		want   string
	}{
		{func(f *Flags) { f.Preset, f.Given = "smoke", func(n string) bool { return n == "acks" } }, "--acks cannot be combined with --preset or --spec"},
		{func(f *Flags) { f.Preset = "nope" }, `--preset: not a preset, got "nope"; use bugs, seed or smoke`},
		{func(f *Flags) { f.Acks = "2" }, `--acks: not an acks setting, got "2"`},
		{func(f *Flags) { f.MinInsyncReplicas = "1,x" }, `--min-insync-replicas: not a number, got "x"`},
		{func(f *Flags) { f.Election = " , " }, `--election: an empty list, got " , "`},
		{func(f *Flags) { f.Runtime = "moon" }, `--runtime: not a runtime, got "moon"; use local or docker (or sim: every run in simulation; or external: a cluster you run, with chaos run's --bootstrap and fault commands after --)`},
		{func(f *Flags) { f.Parallel = 2 }, "--parallel: more than one run at a time outside the sim runtime, got 2"},
		{func(f *Flags) { f.Runtime, f.RunArgs = runner.RuntimeSim, []string{"--base-port", "9092"} }, "flags for chaos run: --base-port: no ports in a simulation, got 9092"},
		{func(f *Flags) { f.RunArgs = []string{"--seed", "4", "--store=x"} }, "flags for chaos run: --seed, --store set by the campaign itself"},
		{func(f *Flags) { f.RunArgs = []string{"--fail-on", "invalid"} }, "flags for chaos run: --fail-on set by the campaign itself"},
		{func(f *Flags) { f.FailOn = "never" }, `--fail-on: not a verdict to fail on, got "never"; use unknown`},
		{func(f *Flags) { f.CheckNemesis = func(string) error { return errors.New("chaos run's refusal") } }, "chaos run's refusal"},
	} {
		f := testFlags()
		tc.change(&f)
		if _, err := f.Resolve(testRunFlags); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", f, err, tc.want)
		}
	}
}

// TestSpecBase: a cell's run args follow the campaign's; they may set the
// cell's own nemesis interval but nothing else the campaign sets.
func TestSpecBase(t *testing.T) {
	base := Spec{results.CampaignSpec{RunArgs: []string{"--rate", "10"}, Runtime: runner.RuntimeSim}}.Base(func(args []string) (runner.Spec, error) {
		if !slices.Equal(args[:2], []string{"--rate", "10"}) {
			t.Errorf("run args %q do not begin with the campaign's", args)
		}
		return testRunFlags(args)
	})
	if _, err := base([]string{"--nemesis-interval", "100ms"}); err != nil {
		t.Errorf("a cell's own nemesis interval: %v", err)
	}
	if _, err := base([]string{"--acks", "1"}); err == nil || !strings.Contains(err.Error(), "run_args: --acks set by the campaign itself") {
		t.Errorf("a cell's --acks: %v", err)
	}
	if _, err := base([]string{"--base-port", "9000"}); err == nil || !strings.Contains(err.Error(), "run_args: --base-port: no ports in a simulation") {
		t.Errorf("a cell's --base-port in simulation: %v", err)
	}
}

func TestParseShard(t *testing.T) {
	f := Flags{Shard: "2/3", Seed: 7}
	if sh, err := f.ParseShard(); err != nil || sh.K != 2 || sh.N != 3 {
		t.Errorf("2/3: %v, %v", sh, err)
	}
	f.Seed = 0
	if _, err := f.ParseShard(); err == nil || !strings.Contains(err.Error(), "--shard: given without --seed") {
		t.Errorf("a shard without a seed: %v", err)
	}
	f.Shard = "4/3"
	if _, err := f.ParseShard(); err == nil || !strings.Contains(err.Error(), `--shard: K must be from 1 to N, got "4/3"`) {
		t.Errorf("4/3: %v", err)
	}
}
