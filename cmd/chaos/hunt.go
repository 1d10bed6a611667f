package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/hunt"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/runner"
)

func newHuntCmd() *cobra.Command {
	var f hunt.Flags
	cmd := &cobra.Command{
		Use:   "hunt",
		Short: "Search for replication bugs, every scenario drawn from the seed (in simulation, or in real time with --runtime)",
		Long: `Search for replication bugs without knowing where they are: run simulated tests (as
chaos sim does, on chaos's own broker) whose whole scenario is drawn from each run's
seed: which fault kinds and how they overlap, window lengths and quiet periods from 20 ms
to 20 s, the brokers, partitions and timeouts, the producers' retries, idempotence and
requests in flight, the consumers and the rate. Every scenario is judged as the
configuration the flags give (default: the strongest promise, acks=-1,
min.insync.replicas=2, clean election), or one drawn with --draw-config.

The search keeps a corpus of the scenarios that showed something new (coverage: short
sequences of what the tester observed through the protocol: leader changes, ISR sizes,
errors answered, faults in effect) and most runs mutate one of them; --no-feedback draws
every scenario afresh. It stops at the first INVALID run (--keep-going goes on), prints
its scenario and the chaos sim command that replays it byte for byte, and shrinks it
(--shrink-runs). Only the runs that were not valid stay in the store. The hunt's record,
STORE/hunts/<time>/hunt.json, and its page, hunt.html, are written as it goes: the
findings with their reports, replay commands and shrunk runs, the coverage after each
run (a plateau shows), and the runs that could not be judged.

--runtime local, docker or external draws the scenarios the same way and runs them one
after another in real time, against real processes, containers or your own cluster (whose
brokers and their settings stay as they are; the fault kinds drawn are those its
--*-cmd commands can apply, and --cluster-file or the external flags say how, as for chaos
run). Coverage is then only what the tester observed through the protocol; budget it in
wall time (--time). A finding is a real run with its report; it does not replay, so it is
not shrunk, and its scenario is printed as the chaos run command (with --schedule) that
runs it again.

Exit code as chaos sim's sweeps: 1 if a run was invalid, else 3 if one ended in an
error, else 2 if one was unknown, else 0; 130 when interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.Options()
			if err != nil {
				return exitWith(0, err)
			}
			if err := cli.StopIfValidating(cmd.Context()); err != nil {
				return exitWith(0, err)
			}
			if o.Seed == 0 {
				o.Seed = runner.RandomSeed()
			}
			o.Version = fullVersion()
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			ctx, intr, stop := cli.InterruptContext(errOut, "stopping the hunt")
			defer stop()
			o.ClusterUp = intr.OnSecond
			res, err := hunt.Console{Out: out, Err: errOut, Quiet: f.Quiet, Command: os.Args}.Run(ctx, o)
			if err != nil {
				return exitWith(0, err)
			}
			return exitWith(res.ExitCode(), nil)
		},
	}
	f.Register(cmd.Flags())
	groupFlags(cmd, huntGroups())
	return cmd
}
