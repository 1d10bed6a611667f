package main

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// chaos campaign is flags and output: the matrix flags, chaos run's flags
// after "--" read into the base spec every run shares (baseSpec), and the
// exit code. Package campaign resolves the flags into a spec, plans the
// runs, executes them (as child "chaos run" processes by default, or in
// this process with --in-process), keeps the record and prints it.

func newCampaignCmd() *cobra.Command {
	var f campaign.Flags
	cmd := &cobra.Command{
		Use:   "campaign [flags] [-- chaos run flags]",
		Short: "Run a matrix of configurations x nemeses x runs and tabulate prediction against observation",
		Long: `Run a campaign: every cell of a matrix of configurations (acks, min.insync.replicas,
election, nemesis) is run --runs times, each run a "chaos run" child process (or, with
--in-process, in this process) with a seed derived from the campaign's --seed, so the same
seed replays every run. The matrix comes from the flags, from --spec FILE, or from
--preset NAME (below). Flags after -- go to every "chaos run" (e.g. -- --nodes 5).

With --runtime sim every run is a "chaos sim" run in deterministic simulation, in this
process, --parallel at a time (the cores by default): a preset's runs take seconds instead
of minutes, and replay exactly.

` + presetsHelp() + `

--shard K/N (with --seed) runs only the K-th of N slices of the planned runs, so that N
machines can share a campaign; "chaos campaign merge" joins their stores into one.

Prints a line per run, then a table of at most 120 columns, a row per cell under a line per
configuration: what its runs observed, the worst verdict in how many runs, the guarantee
model's word on lost writes and the share of sends acknowledged; then the runs that were not
valid, and the runs counted by verdict. The index page leads with a heatmap of lost writes.
A spec file's cells may plant bugs on purpose ("bugs": names chaos bugs lists) and take
chaos run flags of their own ("run_args"): such a detection campaign first prints, per
cell, whether its runs caught its bugs (an anomaly the configuration forbids), with which
anomalies and how soon (median time and operations to first detection), and a control
cell's (one without bugs) false alarms.
Writes STORE/campaigns/<timestamp>/campaign.json (and STORE/campaigns/latest), and with
--junit a JUnit XML file. Exit code, from the worst run: 1 if any run was invalid, else 3
if any run ended in an error, else 2 if any was unknown (0 with --fail-on invalid), else 0;
3 also for a refused campaign; 130 interrupted.`,
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
	f.Register(cmd.Flags())
	groupFlags(cmd, campaignGroups())
	cmd.AddCommand(newCampaignMergeCmd())
	return cmd
}

// presetsHelp describes every preset with its size, as the preset itself
// says it: a preset that grows a column grows its help.
func presetsHelp() string {
	var b strings.Builder
	b.WriteString("The presets (--preset NAME; --dry-run prints one as a spec file to start from):")
	for _, name := range campaign.PresetNames() {
		fmt.Fprintf(&b, "\n  %-6s %s\n         %s", name, campaign.PresetDoc(name), campaign.PresetSize(name))
	}
	return b.String()
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
		if f.External.Bootstrap != "" || f.External.File != "" {
			if err := notForExternal(run.Flags(), runner.RuntimeExternal); err != nil {
				return runner.Spec{}, fmt.Errorf("flags for chaos run: %w", err)
			}
		}
		// The spec takes known bugs only, and would leave an unknown one out.
		if _, err := node.ParseBugs(f.Bugs); err != nil {
			return runner.Spec{}, fmt.Errorf("flags for chaos run: %w", err)
		}
		// Acks and faults are the cells'.
		s := f.SpecOf(-1, nil)
		s.Store, s.Command = store, nil
		if err := f.External.Base(&s); err != nil {
			return runner.Spec{}, fmt.Errorf("flags for chaos run: %w", err)
		}
		return s, nil
	}
}

// planCampaign plans the spec's runs in the store.
func planCampaign(spec campaign.Spec, store string) (*campaign.Plan, error) {
	var checks []func(runner.Spec) error
	switch spec.Runtime {
	case runner.RuntimeSim:
		// Refuses a fault the simulation does not model, with every other
		// impossible cell, before anything runs.
		checks = append(checks, sim.Validate)
	case runner.RuntimeExternal:
		// A fault the user's commands cannot inject, or a missing
		// bootstrap, is refused before any run starts.
		checks = append(checks, func(s runner.Spec) error { return s.Validate() })
	}
	return spec.Plan(baseSpec(store), checks...)
}

func runCampaign(cmd *cobra.Command, f campaign.Flags, passthrough []string) (int, error) {
	out := cmd.OutOrStdout()
	f.RunArgs = passthrough
	spec, err := f.Resolve(baseSpec(f.Store))
	if err != nil {
		return 0, err
	}
	sh, err := f.ParseShard()
	if err != nil {
		return 0, err
	}
	plan, err := planCampaign(spec, f.Store)
	if err != nil {
		return 0, err
	}
	plan.Shard = sh
	if err := cli.StopIfValidating(cmd.Context()); err != nil {
		return 0, err
	}
	seed := cmp.Or(f.Seed, runner.RandomSeed())
	if f.DryRun {
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
	case f.InProcess:
		opts.Executor = campaign.InProcess{Version: fullVersion()}
	}
	opts.Show(plan, out, cmd.ErrOrStderr())
	rec, dir, writeErr := campaign.Run(ctx, plan, opts)
	if rec == nil {
		return 0, writeErr
	}
	campaign.WriteSummary(out, rec, dir, f.FailOn)
	if f.JUnit != "" {
		if err := campaign.WriteJUnit(f.JUnit, rec); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	if writeErr != nil {
		// Results that were not written are worse than a failed cell: the
		// campaign's record cannot be trusted.
		return 0, writeErr
	}
	return cli.FailOnExit(f.FailOn, *rec.ExitCode), nil
}
