package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// simFlags are chaos run's flags and chaos sim's own (package sim's Flags).
type simFlags struct {
	run        runFlags
	seeds      string
	runs       int
	parallel   int
	keepValid  bool
	schedule   string
	shrink     bool
	shrinkRuns int
	from       string
	shard      string
}

func newSimCmd() *cobra.Command {
	cmd, _ := newSimCmdFlags(nil)
	return cmd
}

// newSimCmdFlags is chaos sim and the values its flags parse into, with
// judge naming the anomalies held against a run when it shrinks or
// reproduces one (nil: its own verdict's; tests plant a failure with
// another).
func newSimCmdFlags(judge judgeFunc) (*cobra.Command, *simFlags) {
	f := new(simFlags)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a test in deterministic simulation, replayable from its seed",
		Long: `Run a test in deterministic simulation: the same broker and controller state machines,
workload, nemesis, monitor, final phase and checkers as chaos run, on a cluster simulated
in memory on a virtual clock. Every choice (message delays and order, the workload's
timing, the faults' times and targets) comes from --seed, so the same seed and flags give
the same history.jsonl and results.json, byte for byte: a failure found once comes back
with "chaos sim ... --seed N", the command the report prints. A 60 s test takes about a
second.

It takes chaos run's flags (not --runtime or --base-port) and writes the run to the store
as chaos run does, with runtime "sim" in test.json; times in the history are virtual.
Exit code as chaos run's: 0 valid, 1 invalid, 2 unknown, 3 an error, 130 interrupted.

A sweep runs many seeds, --parallel at a time: --seeds 1-1000 (or a list such as
1,5,9-12), or --runs N for N seeds from --seed on. Only the runs that were not valid
stay in the store (--keep-valid keeps all); it prints a table of verdicts and anomalies
and each failing seed with its replay command, and exits with the worst: 1 if any run
was invalid, else 3 if any ended in an error, else 2 if any was unknown, else 0.

--schedule gives the fault windows themselves, FAULT@START+LENGTH, comma-separated
(kill@5s+4s,partition@12s+5s), in place of the schedule --nemesis and --nemesis-interval
draw from the seed; the seed still drives every other choice.

--shrink takes a failing run (its flags and --seed) and searches for a smaller run that
still shows every anomaly it showed that its configuration forbids: fewer and shorter
fault windows, a shorter time limit, fewer partitions, producers and consumers, a lower
rate. It replays each candidate from the same seed, at most --shrink-runs of them, keeps
only the smallest in the store, and prints it with its replay command (with --schedule).
Exit code: the smallest run's verdict; 3 if the run shows nothing forbidden to shrink.

--from DIR takes a stored run (chaos run's or chaos sim's: its test.json and results.json)
and runs its configuration, workload and planned windows in simulation, seed after seed
(--runs N from the run's seed, default 100, or --seeds), until one shows the unexpected
anomalies the run showed; it keeps that run, prints its replay command, and with --shrink
shrinks it. Exit code: 1 when a seed reproduced it, 2 when none did.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitWith(simTest(cmd, f, judge))
		},
	}
	f.run.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.seeds, "seeds", "", "sweep: run these seeds, e.g. 1-1000 or 1,5,9-12")
	fl.IntVar(&f.runs, "runs", 0, "sweep: run this many seeds, from --seed on (default: a random first seed)")
	fl.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "sweep: runs at once")
	fl.BoolVar(&f.keepValid, "keep-valid", false, "sweep: keep the valid runs in the store too")
	fl.StringVar(&f.schedule, "schedule", "", "the fault windows themselves, in place of --nemesis's seeded schedule: FAULT@START+LENGTH,..., e.g. kill@5s+4s,partition@12s+5s")
	fl.BoolVar(&f.shrink, "shrink", false, "search for a smaller run of --seed that still shows its unexpected anomalies, and print its replay command")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", sim.DefaultShrinkRuns, "shrink: the most simulations the search runs")
	fl.StringVar(&f.from, "from", "", "a stored run directory: sweep seeds of its configuration and schedule until one shows its unexpected anomalies")
	fl.StringVar(&f.shard, "shard", "", "sweep: run only the K-th of N slices of the seeds, e.g. 2/4, or I+1/4 for a 0-based index I (with --runs, needs --seed)")
	// A simulation has no runtime to choose and no ports.
	_ = fl.MarkHidden("runtime")
	_ = fl.MarkHidden("base-port")
	return cmd, f
}

func simTest(cmd *cobra.Command, f *simFlags, judge judgeFunc) (int, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.from != "" {
		return simFrom(cmd, f, judge)
	}
	spec, err := f.simSpec(cmd.Flags())
	if err != nil {
		return 0, err
	}
	seeds, err := f.sim(cmd.Flags()).Check()
	if err != nil {
		return 0, err
	}
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}
	if f.shrink {
		// The replay command of each run of the search is its own spec's
		// flags (sim.ReplayCommand), not these.
		spec.Command = nil
		return simShrink(out, errOut, spec, f, nil, judge)
	}
	if seeds != nil {
		return simSweep(out, errOut, spec, seeds, f)
	}
	ctx, _, stop := interruptContext(errOut, "stopping the simulation")
	defer stop()
	outcome, err := f.console(out, errOut).Run(ctx, spec, runner.Options{
		Version: fullVersion(),
		Started: func(string, uint64, string) { sayBugs(out, spec.Settings.Bugs) },
	})
	return sayOutcome(out, errOut, outcome, err)
}

// simSpec is the spec of chaos sim's flags, checked flag by flag as chaos
// run's are, then as a simulation.
func (f *simFlags) simSpec(fl *pflag.FlagSet) (runner.Spec, error) {
	if fl.Changed("runtime") && f.run.runtime != runner.RuntimeSim {
		return runner.Spec{}, flagError("runtime", f.run.runtime, "not the simulation", "chaos sim runs in the sim runtime; chaos run runs local and docker")
	}
	if fl.Changed("base-port") {
		return runner.Spec{}, flagError("base-port", f.run.basePort, "no ports in a simulation", "leave it out")
	}
	// chaos run's checks, for a runtime they know.
	f.run.runtime = runtimeLocal
	acks, faults, err := f.run.validate()
	if err != nil {
		return runner.Spec{}, err
	}
	for _, name := range faults {
		if err := sim.Simulated(name); err != nil {
			return runner.Spec{}, flagError("nemesis", name, "not simulated", err.Error())
		}
	}
	spec := f.run.spec(acks, faults)
	spec.Runtime = runner.RuntimeSim
	if err := f.sim(fl).ApplySchedule(&spec); err != nil {
		return runner.Spec{}, err
	}
	if err := sim.Validate(spec); err != nil {
		return runner.Spec{}, flagCombination(err, f.run)
	}
	return spec, nil
}

// sim is chaos sim's own flags for package sim, with those given on the
// command line.
func (f *simFlags) sim(fl *pflag.FlagSet) sim.Flags {
	given := map[string]string{}
	fl.Visit(func(x *pflag.Flag) { given[x.Name] = x.Value.String() })
	return sim.Flags{Seeds: f.seeds, Runs: f.runs, Seed: f.run.seed, Parallel: f.parallel, Shard: f.shard, Schedule: f.schedule,
		Shrink: f.shrink, ShrinkRuns: f.shrinkRuns, From: f.from, Given: given}
}

func (f *simFlags) console(out, errOut io.Writer) sim.Console {
	return sim.Console{Out: out, Err: errOut, Quiet: f.run.quiet}
}

// simSweep runs a sweep, prints its progress, the table of verdicts and
// anomalies and the failing seeds, and returns the worst exit code.
func simSweep(out, errOut io.Writer, spec runner.Spec, seeds []uint64, f *simFlags) (int, error) {
	ctx, _, stop := interruptContext(errOut, "stopping the sweep")
	defer stop()
	fmt.Fprintf(out, "sweep of %d seeds, %d at a time: %s, %s each\n", len(seeds), f.parallel, spec.Normalized().Name, spec.TimeLimit)
	sayBugs(out, spec.Settings.Bugs)
	args := slices.Clone(os.Args)
	runs := f.console(out, errOut).Sweep(ctx, spec, seeds, sim.SweepOptions{
		Parallel: f.parallel, KeepValid: f.keepValid, Version: fullVersion(),
		Command: func(seed uint64) []string { return sim.SweepReplay(args, seed) },
	})
	if ctx.Err() != nil {
		return exitInterrupted, nil
	}
	return sim.SweepExitCode(runs), nil
}

// judgeFunc names the anomalies held against a run: nil, its results'
// Unexpected. Tests plant a failure by judging under a stricter promise
// than the run had, as package sim's do.
type judgeFunc func(runner.Outcome) []string

// simShrink shrinks the run of spec (its seed given) while it shows
// target (nil: its own unexpected anomalies), and exits as the smallest
// run's verdict does.
func simShrink(out, errOut io.Writer, spec runner.Spec, f *simFlags, target []string, judge judgeFunc) (int, error) {
	ctx, _, stop := interruptContext(errOut, "stopping the search")
	defer stop()
	res, err := f.console(out, errOut).Shrink(ctx, spec, sim.ShrinkOptions{
		Runs: f.shrinkRuns, Target: target, Version: fullVersion(), Command: sim.ReplayCommand, Unexpected: judge,
	})
	switch {
	case err != nil:
		return 0, err
	case res.Interrupted && res.Runs <= 1:
		return exitInterrupted, nil
	}
	code, err := sayOutcome(out, errOut, res.Outcome, nil)
	if res.Interrupted {
		return exitInterrupted, err
	}
	return code, err
}

// simFrom sweeps seeds of a stored run's configuration and planned
// windows until one shows its unexpected anomalies (exit 2 if none does),
// and exits as that run's verdict does; with --shrink, it then shrinks
// that run.
func simFrom(cmd *cobra.Command, f *simFlags, judge judgeFunc) (int, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	failed, seeds, err := f.sim(cmd.Flags()).FailedRun(f.run.store, func(dir string) string { return runsHint(nearestDir(dir)) })
	if err != nil {
		return 0, err
	}
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}
	ctx, _, stop := interruptContext(errOut, "stopping the search")
	rep := f.console(out, errOut).Reproduce(ctx, failed, seeds, sim.ReproduceOptions{
		Parallel: f.parallel, Version: fullVersion(), Command: sim.ReplayCommand, Unexpected: judge,
	})
	stop()
	switch {
	case !rep.Found && rep.Interrupted:
		return exitInterrupted, nil
	case !rep.Found:
		return exitUnknown, nil
	case f.shrink:
		fmt.Fprintln(out)
		return simShrink(out, errOut, rep.Spec, f, failed.Results.Unexpected, judge)
	}
	fmt.Fprintf(out, "run %s\nseed %d\n", rep.Run.Outcome.Dir, rep.Spec.Seed)
	return sayOutcome(out, errOut, rep.Run.Outcome, rep.Run.Err)
}
