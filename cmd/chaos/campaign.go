package main

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// chaos campaign is flags and output: the matrix flags, chaos run's flags
// after "--" read into the base spec every run shares (baseSpec), and the
// exit code. Package campaign resolves the flags into a spec, plans the
// runs, executes them (as child "chaos run" processes by default, or in
// this process with --in-process), keeps the record and prints it.

type campaignFlags struct {
	campaign.Flags
	store, junit      string
	dryRun, inProcess bool
}

func newCampaignCmd() *cobra.Command {
	var f campaignFlags
	cmd := &cobra.Command{
		Use:   "campaign [flags] [-- chaos run flags]",
		Short: "Run a matrix of configurations x nemeses x runs and tabulate prediction against observation",
		Long: `Run a campaign: every cell of a matrix of configurations (acks, min.insync.replicas,
election, nemesis) is run --runs times, each run a "chaos run" child process (or, with
--in-process, in this process) with a seed derived from the campaign's --seed, so the same
seed replays every run. The matrix comes from the flags, from --spec FILE, or from
--preset smoke|seed. Flags after -- go to every "chaos run" (e.g. -- --nodes 5).

With --runtime sim every run is a "chaos sim" run in deterministic simulation, in this
process, --parallel at a time (the cores by default): the seed preset's 36 runs take
seconds, not 19 minutes, and replay exactly.

--shard K/N (with --seed) runs only the K-th of N slices of the planned runs, so that N
machines can share a campaign; "chaos campaign merge" joins their stores into one.

Prints a line per run and a table per cell: the verdicts, what the guarantee model
predicted, the anomalies seen as permitted and those seen unexpectedly, and availability.
A spec file's cells may plant bugs on purpose ("bugs": names chaos bugs lists) and take
chaos run flags of their own ("run_args"): such a detection campaign first prints, per
cell, whether its runs caught its bugs (an anomaly the configuration forbids), with which
anomalies and how soon (median time and operations to first detection), and a control
cell's (one without bugs) false alarms.
Writes STORE/campaigns/<timestamp>/campaign.json (and STORE/campaigns/latest), and with
--junit a JUnit XML file. Exit code, from the worst run: 1 if any run was invalid, else 3
if any run ended in an error, else 2 if any was unknown, else 0; 3 also for a refused
campaign; 130 interrupted.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("unexpected argument %q (flags for chaos run go after --)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitWith(runCampaign(cmd, f, args))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Preset, "preset", "", "a predefined campaign: smoke (CI, 2 runs of 20 s, about 45 s), seed (the full 36-cell matrix of 30 s runs, about 19 minutes) or bugs (a detection campaign: every planted bug in its scenario and a control per scenario, 21 cells x 3 runs of 30 s; about 35 minutes, a minute with --runtime sim)")
	fl.StringVar(&f.SpecFile, "spec", "", "read the campaign from a JSON spec file (see README)")
	fl.StringVar(&f.Acks, "acks", "-1", "acks of the matrix, a comma list of 0, 1, -1")
	fl.StringVar(&f.MinInsyncReplicas, "min-insync-replicas", "2", "min.insync.replicas of the matrix, a comma list")
	fl.StringVar(&f.Election, "election", "clean", "elections of the matrix, a comma list of clean, unclean")
	fl.StringVar(&f.Nemesis, "nemesis", "none", "nemeses of the matrix, separated by ';' (each is a comma list as for chaos run)")
	fl.IntVar(&f.Runs, "runs", 1, "runs per cell")
	fl.DurationVar(&f.TimeLimit, "time-limit", 30*time.Second, "each run's --time-limit")
	fl.DurationVar(&f.NemesisInterval, "nemesis-interval", 0, "each run's --nemesis-interval (default: chaos run's)")
	fl.Uint64Var(&f.Seed, "seed", 0, "campaign seed, from which every run's seed is derived (default: random, printed and stored)")
	fl.StringVar(&f.store, "store", "store", "the result store directory")
	fl.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file")
	fl.StringVar(&f.Runtime, "runtime", runtimeLocal, "every run's --runtime: "+runtimeUsage+"; or sim (every run in deterministic simulation, in this process, as chaos sim runs it)")
	fl.IntVar(&f.Parallel, "parallel", 0, "runs at once, in the sim runtime only (default: the cores there, 1 elsewhere)")
	fl.StringVar(&f.Shard, "shard", "", "run only the K-th of N slices of the planned runs, e.g. 2/4, or I+1/4 for a 0-based index I (needs --seed; chaos campaign merge joins the shards)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the resolved spec and every run's seed and command, run nothing")
	fl.BoolVar(&f.inProcess, "in-process", false, "run every run in this process instead of a child chaos run process (no isolation: a run that crashes or hangs takes the campaign with it)")
	f.Given, f.CheckElection = fl.Changed, checkElection
	f.CheckNemesis = func(s string) error { _, err := parseNemesisFlag(s); return err }
	cmd.AddCommand(newCampaignMergeCmd())
	return cmd
}

// baseSpec reads chaos run's flags given after "--" (or a spec file's
// run_args) with chaos run's own flag set into chaos run's spec, in the
// campaign's store: what every run of a campaign shares. The campaign
// varies the rest per cell and run.
func baseSpec(store string) campaign.RunFlags {
	return func(runArgs []string) (runner.Spec, error) {
		run, f := newRunCmdFlags()
		(&cobra.Command{Use: "chaos"}).AddCommand(run)
		if err := run.Flags().Parse(runArgs); err != nil {
			return runner.Spec{}, fmt.Errorf("flags for chaos run: %w", flagParseError(run, err))
		}
		if run.Flags().NArg() > 0 {
			return runner.Spec{}, fmt.Errorf("flags for chaos run: unexpected argument %q", run.Flags().Arg(0))
		}
		// The spec takes known bugs only, and would leave an unknown one out.
		if _, err := f.bugs.parse(); err != nil {
			return runner.Spec{}, fmt.Errorf("flags for chaos run: %w", err)
		}
		// Acks and faults are the cells'.
		s := f.spec(-1, nil)
		s.Store, s.Command = store, nil
		return s, nil
	}
}

// planCampaign plans the spec's runs in the store.
func planCampaign(spec campaign.Spec, store string) (*campaign.Plan, error) {
	var checks []func(runner.Spec) error
	if spec.Runtime == runner.RuntimeSim {
		// Refuses a fault the simulation does not model, with every other
		// impossible cell, before anything runs.
		checks = append(checks, sim.Validate)
	}
	return spec.Plan(baseSpec(store), checks...)
}

func runCampaign(cmd *cobra.Command, f campaignFlags, passthrough []string) (int, error) {
	out := cmd.OutOrStdout()
	f.RunArgs = passthrough
	spec, err := f.Resolve(baseSpec(f.store))
	if err != nil {
		return 0, err
	}
	sh, err := f.ParseShard()
	if err != nil {
		return 0, err
	}
	plan, err := planCampaign(spec, f.store)
	if err != nil {
		return 0, err
	}
	plan.Shard = sh
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}
	seed := cmp.Or(f.Seed, runner.RandomSeed())
	if f.dryRun {
		campaign.WriteDryRun(out, spec, plan, seed)
		return 0, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	ctx, kill, stop := campaign.Interrupts()
	defer stop()
	opts := campaign.Options{
		Seed: seed, Executor: campaign.Child{Exe: exe}, Program: exe, Preset: f.Preset, SpecFile: f.SpecFile, Command: os.Args,
		Versions: map[string]string{"chaos": fullVersion(), "go": runtime.Version()}, Kill: kill, Parallel: 1,
	}
	switch {
	case spec.Runtime == runner.RuntimeSim:
		// A simulated run needs no process of its own (package campaign
		// says why), and runs side by side never disturb each other.
		opts.Executor = campaign.InProcess{Version: fullVersion(), Run: sim.Run}
		opts.Parallel = cmp.Or(f.Parallel, runtime.GOMAXPROCS(0))
	case f.inProcess:
		opts.Executor = campaign.InProcess{Version: fullVersion()}
	}
	opts.Show(plan, out, cmd.ErrOrStderr())
	rec, dir, writeErr := campaign.Run(ctx, plan, opts)
	if rec == nil {
		return 0, writeErr
	}
	campaign.WriteSummary(out, rec, dir)
	if f.junit != "" {
		if err := campaign.WriteJUnit(f.junit, rec); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	if writeErr != nil {
		// Results that were not written are worse than a failed cell: the
		// campaign's record cannot be trusted.
		return 0, writeErr
	}
	return *rec.ExitCode, nil
}
