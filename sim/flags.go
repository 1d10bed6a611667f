package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/shard"
)

// FlagError is a refused flag value in the style every chaos command
// refuses one, naming the flag, the value and what it accepts:
//
//	--NAME: WHAT IS WRONG, got VALUE; WHAT IS ACCEPTED
//
// The checks of Flags make them, so that chaos sim's refusals name the
// flag to change, not a field of a spec.
type FlagError struct {
	Flag, Problem string
	// Got is the value refused, left out when nil (a flag missing), and
	// quoted when a string.
	Got any
	// Accepted is left out when empty.
	Accepted string
}

func (e *FlagError) Error() string {
	s := "--" + e.Flag + ": " + e.Problem
	if e.Got != nil {
		got := fmt.Sprint(e.Got)
		if str, ok := e.Got.(string); ok {
			got = strconv.Quote(str)
		}
		s += ", got " + got
	}
	if e.Accepted != "" {
		s += "; " + e.Accepted
	}
	return s
}

func flagError(name string, got any, problem, accepted string) error {
	return &FlagError{Flag: name, Problem: problem, Got: got, Accepted: accepted}
}

// Flags are chaos sim's flags beyond chaos run's (which make the spec):
// the seeds of a sweep, a search, a stored run to reproduce (--schedule
// is chaos run's too: runner.Flags). Which of them go together, and which seeds
// they name, is decided here; the command only registers them (Register).
type Flags struct {
	Seeds    string // --seeds: seeds and ranges, e.g. 1-1000 or 1,5,9-12
	Runs     int    // --runs: that many seeds from Seed on
	Seed     uint64 // --seed: the one run's, or a sweep's first (0: random)
	Parallel int    // --parallel: runs at once
	Shard    string // --shard: K/N, the seeds of one slice of a sweep
	// KeepValid is --keep-valid: a sweep keeps its valid runs too.
	KeepValid bool

	Shrink     bool   // --shrink
	ShrinkRuns int    // --shrink-runs
	From       string // --from: a stored run directory
	// Given are the flags given on the command line, chaos run's too, by
	// name, with their values as given: a flag left at its default is
	// not given, even with --seeds "" or --seed 0.
	Given map[string]string
}

func (f Flags) given(name string) bool {
	_, ok := f.Given[name]
	return ok
}

// Check checks the flags of one run, a sweep or a search together, and
// returns the seeds of a sweep (SweepSeeds), nil for one run.
func (f Flags) Check() ([]uint64, error) {
	if err := f.checkShrink(); err != nil {
		return nil, err
	}
	return f.SweepSeeds()
}

// checkShrink refuses a search without its one run to shrink, and
// --shrink-runs without a search.
func (f Flags) checkShrink() error {
	const one = "--shrink shrinks one failing run: its flags and --seed N, as its replay command says"
	switch {
	case !f.Shrink && !f.given("shrink-runs"):
		return nil
	case !f.Shrink:
		return flagError("shrink-runs", f.ShrinkRuns, "without --shrink", "add --shrink, or leave --shrink-runs out")
	case f.given("seeds"):
		return flagError("seeds", f.Seeds, "given with --shrink", one)
	case f.given("runs"):
		return flagError("runs", f.Runs, "given with --shrink", one)
	case !f.given("seed"):
		return flagError("seed", nil, "missing", one)
	case f.Seed == 0:
		return flagError("seed", f.Seed, "not a seed to shrink", one)
	}
	return f.checkShrinkRuns()
}

func (f Flags) checkShrinkRuns() error {
	if f.ShrinkRuns < 1 {
		return flagError("shrink-runs", f.ShrinkRuns, "below 1", "the most simulations the search may run, e.g. 200")
	}
	return nil
}

// MaxSweep bounds a sweep's seeds: a typo such as 1-1000000000 must not
// start a billion runs.
const MaxSweep = 1_000_000

// SweepSeeds are the seeds of a sweep (--seeds, or --runs from --seed),
// those of its --shard only, nil for one run.
func (f Flags) SweepSeeds() ([]uint64, error) {
	sh, err := shard.Parse(f.Shard)
	switch {
	case err != nil:
		return nil, flagError("shard", f.Shard, err.Error(), "e.g. 2/4, the second of four slices of the seeds")
	case sh.Whole():
		return f.allSeeds()
	case f.Seeds == "" && f.Runs == 0:
		return nil, flagError("shard", f.Shard, "given without a sweep", "a sweep's seeds are sharded: add --seeds or --runs")
	case f.Seeds == "" && f.Seed == 0:
		// Each shard would draw its own first seed, and sweep other seeds.
		// (--from's first seed is its run's.)
		return nil, flagError("shard", f.Shard, "given with --runs but without --seed", "every shard must sweep the same seeds: give them all the same --seed, or --seeds")
	}
	all, err := f.allSeeds()
	if err != nil {
		return nil, err
	}
	// A seed is its own key: a seed keeps its shard when the sweep grows.
	// (Not nil even when this shard has none: nil is one run.)
	seeds := []uint64{}
	for _, s := range all {
		if sh.Has(strconv.FormatUint(s, 10)) {
			seeds = append(seeds, s)
		}
	}
	return seeds, nil
}

// allSeeds are every seed of a sweep, nil for one run.
func (f Flags) allSeeds() ([]uint64, error) {
	switch {
	case f.Seeds != "" && f.Runs != 0:
		return nil, flagError("runs", f.Runs, "given with --seeds", "use one: --seeds lists the seeds, --runs counts them from --seed")
	case f.Seeds != "" && f.given("seed"):
		return nil, flagError("seed", f.Seed, "given with --seeds", "use one: --seeds lists every seed of the sweep")
	case f.Runs < 0 || f.Runs > MaxSweep:
		return nil, flagError("runs", f.Runs, "out of range", fmt.Sprintf("1 to %d runs, or 0 for one run", MaxSweep))
	case f.Parallel < 1:
		return nil, flagError("parallel", f.Parallel, "below 1", "runs at once, e.g. the number of cores")
	case f.Seeds != "":
		return ParseSeeds(f.Seeds)
	case f.Runs > 0:
		first := f.Seed
		if first == 0 {
			first = runner.RandomSeed()
		}
		seeds := make([]uint64, f.Runs)
		for i := range seeds {
			seeds[i] = first + uint64(i)
		}
		return seeds, nil
	}
	return nil, nil
}

// ParseSeeds reads --seeds: a comma list of seeds and ranges A-B, each
// seed once, in the order given.
func ParseSeeds(s string) ([]uint64, error) {
	bad := func(what string) error {
		return flagError("seeds", s, what, "seeds and ranges of seeds above 0, e.g. 1-1000 or 1,5,9-12")
	}
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil || a == 0 {
			return nil, bad(fmt.Sprintf("%q is not a seed", part))
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, bad(fmt.Sprintf("%q is not a range from low to high", part))
			}
		}
		if b-a >= MaxSweep || len(out)+int(b-a+1) > MaxSweep {
			return nil, bad(fmt.Sprintf("more than %d seeds", MaxSweep))
		}
		for x := a; ; x++ {
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
			if x == b {
				break
			}
		}
	}
	return out, nil
}

// Failed is a stored run whose failure chaos sim --from reproduces.
type Failed struct {
	Dir     string
	Test    results.TestConfig
	Results *checker.Results
	// Spec runs its configuration, workload and planned windows in
	// simulation, into the store given to Flags.FailedRun.
	Spec runner.Spec
}

// fromAllowed are the flags --from takes: everything else is the stored
// run's configuration.
var fromAllowed = []string{"from", "store", "quiet", "seed", "seeds", "runs", "parallel", "shrink", "shrink-runs"}

// DefaultFromRuns is how many seeds --from tries when neither --runs nor
// --seeds says.
const DefaultFromRuns = 100

// FailedRun reads the stored run of --from, to simulate into store, and the
// seeds to try: --seeds, or --runs (default DefaultFromRuns) from --seed
// (default the run's own, which replays a simulated run's history). near
// is what to add when the directory holds no run, such as the runs found
// near it.
func (f Flags) FailedRun(store string, near func(dir string) string) (Failed, []uint64, error) {
	var others []string
	for _, name := range slices.Sorted(maps.Keys(f.Given)) {
		if !slices.Contains(fromAllowed, name) {
			others = append(others, "--"+name)
		}
	}
	if len(others) > 0 {
		return Failed{}, nil, flagError("from", f.From, "given with "+strings.Join(others, ", "),
			"the configuration, workload and schedule are the stored run's; --from takes only "+strings.Join(fromAllowed[1:], ", "))
	}
	run, err := readFailed(f.From, near)
	if err != nil {
		return Failed{}, nil, err
	}
	// The planned windows in whole milliseconds, as the simulation runs
	// them anyway: the replay command's --schedule reads better.
	run.Spec = Explicit(runner.StoredSpec(run.Test))
	run.Spec.Store, run.Spec.Runtime = store, runner.RuntimeSim
	if err := Validate(run.Spec); err != nil {
		return Failed{}, nil, flagError("from", f.From, "the run cannot be simulated: "+strings.ReplaceAll(err.Error(), "\n", "; "), "a run whose faults the simulation models (docs/simulation.md)")
	}
	if !f.given("seed") {
		f.Seed = max(run.Test.Seed, 1)
	}
	if f.Runs == 0 && f.Seeds == "" {
		f.Runs = DefaultFromRuns
	}
	seeds, err := f.SweepSeeds()
	if err != nil {
		return Failed{}, nil, err
	}
	if f.given("shrink-runs") && !f.Shrink {
		return Failed{}, nil, flagError("shrink-runs", f.ShrinkRuns, "without --shrink", "add --shrink, or leave --shrink-runs out")
	}
	if err := f.checkShrinkRuns(); err != nil {
		return Failed{}, nil, err
	}
	return run, seeds, nil
}

// readFailed reads a stored run's test.json and results.json, and
// refuses one that shows no unexpected anomaly.
func readFailed(dir string, near func(string) string) (Failed, error) {
	const what = "a run directory (store/<test>/<time>, or store/latest) whose results.json shows an unexpected anomaly"
	run := Failed{Dir: dir}
	var pe *fs.PathError
	var err error
	run.Test, err = results.ReadTestConfig(filepath.Join(dir, results.TestFile))
	if errors.As(err, &pe) {
		hint := ""
		if near != nil {
			hint = near(dir)
		}
		return run, flagError("from", dir, "no test.json there", what+hint)
	}
	if err != nil {
		return run, flagError("from", dir, err.Error(), what)
	}
	if run.Test.Cluster.Runtime == runner.RuntimeExternal {
		// The simulation models chaos's own brokers: an anomaly of
		// another implementation is not its to reproduce.
		return run, flagError("from", dir, "the run tested an external cluster, and the simulation models chaos's own brokers", "a run of the local or docker runtime; reproduce an external cluster's anomaly on that cluster, with the run's seed and schedule")
	}
	run.Results, err = results.ReadResults(filepath.Join(dir, results.ResultsFile))
	if errors.As(err, &pe) {
		return run, flagError("from", dir, "no results.json: the run has no verdict", "judge it first: chaos check "+dir)
	}
	if err != nil {
		return run, flagError("from", dir, err.Error(), what)
	}
	if len(run.Results.Unexpected) == 0 {
		v := SweepRun{Outcome: runner.Outcome{Verdict: run.Results.Valid}}.Verdict()
		return run, flagError("from", dir, fmt.Sprintf("the run shows no unexpected anomaly (verdict %s): nothing to reproduce", strings.ToUpper(v)), what)
	}
	return run, nil
}
