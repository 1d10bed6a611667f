package sim

import (
	goruntime "runtime"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/runner"
)

// Register defines chaos sim's own flags on fs (chaos run's are
// runner.Flags'), with their defaults.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Seeds, "seeds", "", "sweep: run these seeds, e.g. 1-1000 or 1,5,9-12")
	fs.IntVar(&f.Runs, "runs", 0, "sweep: run this many seeds, from --seed on (default: a random first seed)")
	fs.IntVar(&f.Parallel, "parallel", goruntime.GOMAXPROCS(0), "sweep: runs at once")
	fs.BoolVar(&f.KeepValid, "keep-valid", false, "sweep: keep the valid runs in the store too")
	fs.BoolVar(&f.Shrink, "shrink", false, "search for a smaller run of --seed that still shows its unexpected anomalies, and print its replay command")
	fs.IntVar(&f.ShrinkRuns, "shrink-runs", DefaultShrinkRuns, "shrink: the most simulations the search runs")
	fs.StringVar(&f.From, "from", "", "a stored run directory: sweep seeds of its configuration and schedule until one shows its unexpected anomalies")
	fs.StringVar(&f.Shard, "shard", "", "sweep: run only the K-th of N slices of the seeds, e.g. 2/4, or I+1/4 for a 0-based index I (with --runs, needs --seed)")
}

// Parsed are the flags once fs is parsed: with chaos run's --seed, which
// chaos sim takes as a sweep's first seed, and the flags given on fs.
func (f Flags) Parsed(fs *pflag.FlagSet, seed uint64) Flags {
	f.Seed, f.Given = seed, map[string]string{}
	fs.Visit(func(x *pflag.Flag) { f.Given[x.Name] = x.Value.String() })
	return f
}

// Spec is the spec of chaos sim's flags: chaos run's (run), checked flag
// by flag as chaos run checks them, then as a simulation, with
// --schedule's windows or the nemesis interval chosen as chaos run
// chooses it.
func (f Flags) Spec(run runner.Flags) (runner.Spec, error) {
	if f.given("runtime") && run.Runtime != runner.RuntimeSim {
		return runner.Spec{}, flagError("runtime", run.Runtime, "not the simulation", "chaos sim runs only in simulation (leave --runtime out); chaos run takes the same flags for a real cluster: --runtime local, docker or external")
	}
	if f.given("base-port") {
		return runner.Spec{}, flagError("base-port", run.BasePort, "no ports in a simulation", "leave it out")
	}
	// chaos run's checks, for a runtime they know.
	run.Runtime = runner.RuntimeLocal
	spec, err := run.Checked()
	if err != nil {
		return runner.Spec{}, err
	}
	kinds, flag := spec.Faults, "nemesis"
	if len(spec.Windows) > 0 {
		kinds, flag = spec.Windows.Kinds(), "schedule"
	}
	for _, name := range kinds {
		if err := Simulated(name); err != nil {
			return runner.Spec{}, flagError(flag, name, "not simulated", err.Error())
		}
	}
	spec.Runtime = runner.RuntimeSim
	if err := run.FitSchedule(&spec); err != nil {
		return runner.Spec{}, err
	}
	if err := Validate(spec); err != nil {
		return runner.Spec{}, runner.FlagCombination(err)
	}
	return spec, nil
}
