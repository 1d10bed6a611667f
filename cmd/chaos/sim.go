package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// simFlags are chaos run's flags and chaos sim's own; sim is complete
// (sim.Flags.Parsed) once the command line is parsed.
type simFlags struct {
	run runner.Flags
	sim sim.Flags
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
second. It tests chaos's own broker, not Apache Kafka: no broker process runs (to test a
cluster you run, Apache Kafka among them, use chaos run --runtime external).

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
	fl := cmd.Flags()
	f.run.Register(fl)
	f.run.RegisterSchedule(fl)
	f.sim.Register(fl)
	// A simulation has no runtime to choose and no ports.
	_ = fl.MarkHidden("runtime")
	_ = fl.MarkHidden("base-port")
	// --parallel's default is this machine's cores: help says so in
	// words, the same on every machine (and in docs/commands.md).
	fl.Lookup("parallel").DefValue = "the cores"
	groupFlags(cmd, simGroups())
	return cmd, f
}

func simTest(cmd *cobra.Command, f *simFlags, judge judgeFunc) (int, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	f.sim = f.sim.Parsed(cmd.Flags(), f.run.Seed)
	if f.sim.From != "" {
		return simFrom(cmd, f, judge)
	}
	spec, err := f.sim.Spec(f.run)
	if err != nil {
		return 0, err
	}
	seeds, err := f.sim.Check()
	if err != nil {
		return 0, err
	}
	if err := cli.StopIfValidating(cmd.Context()); err != nil {
		return 0, err
	}
	if f.sim.Shrink {
		// The replay command of each run of the search is its own spec's
		// flags (sim.ReplayCommand), not these.
		spec.Command = nil
		return simShrink(out, errOut, spec, f, nil, judge)
	}
	if seeds != nil {
		return simSweep(out, errOut, spec, seeds, f)
	}
	ctx, _, stop := cli.InterruptContext(errOut, "stopping the simulation")
	defer stop()
	outcome, err := f.console(out, errOut).Run(ctx, spec, runner.Options{
		Version: fullVersion(),
		Started: func(string, uint64, string) {
			runner.SayBugs(out, spec.Settings.Bugs)
			runner.SayInterval(out, spec)
		},
	})
	return outcome.Say(out, errOut, err)
}

func (f *simFlags) console(out, errOut io.Writer) sim.Console {
	return sim.Console{Out: out, Err: errOut, Quiet: f.run.Quiet}
}

// simSweep runs a sweep, prints its progress, the table of verdicts and
// anomalies and the failing seeds, and returns the worst exit code.
func simSweep(out, errOut io.Writer, spec runner.Spec, seeds []uint64, f *simFlags) (int, error) {
	ctx, _, stop := cli.InterruptContext(errOut, "stopping the sweep")
	defer stop()
	fmt.Fprintf(out, "sweep of %d seeds, %d at a time: %s, %s each\n", len(seeds), f.sim.Parallel, spec.Normalized().Name, spec.TimeLimit)
	runner.SayBugs(out, spec.Settings.Bugs)
	runner.SayInterval(out, spec)
	args := slices.Clone(os.Args)
	runs := f.console(out, errOut).Sweep(ctx, spec, seeds, sim.SweepOptions{
		Parallel: f.sim.Parallel, KeepValid: f.sim.KeepValid, Version: fullVersion(),
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
	ctx, _, stop := cli.InterruptContext(errOut, "stopping the search")
	defer stop()
	res, err := f.console(out, errOut).Shrink(ctx, spec, sim.ShrinkOptions{
		Runs: f.sim.ShrinkRuns, Target: target, Version: fullVersion(), Command: sim.ReplayCommand, Unexpected: judge,
	})
	switch {
	case err != nil:
		return 0, err
	case res.Interrupted && res.Runs <= 1:
		return exitInterrupted, nil
	}
	code, err := res.Outcome.Say(out, errOut, nil)
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
	failed, seeds, err := f.sim.FailedRun(f.run.Store, func(dir string) string { return results.RunsHint(results.NearestDir(dir)) })
	if err != nil {
		return 0, err
	}
	if err := cli.StopIfValidating(cmd.Context()); err != nil {
		return 0, err
	}
	ctx, _, stop := cli.InterruptContext(errOut, "stopping the search")
	rep := f.console(out, errOut).Reproduce(ctx, failed, seeds, sim.ReproduceOptions{
		Parallel: f.sim.Parallel, Version: fullVersion(), Command: sim.ReplayCommand, Unexpected: judge,
	})
	stop()
	switch {
	case !rep.Found && rep.Interrupted:
		return exitInterrupted, nil
	case !rep.Found:
		return exitUnknown, nil
	case f.sim.Shrink:
		fmt.Fprintln(out)
		return simShrink(out, errOut, rep.Spec, f, failed.Results.Unexpected, judge)
	}
	fmt.Fprintf(out, "run %s\nseed %d\n", rep.Run.Outcome.Dir, rep.Spec.Seed)
	return rep.Run.Outcome.Say(out, errOut, rep.Run.Err)
}
