package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/results/serve"
	"github.com/chaos-isr/chaos/runner"
)

// The commands that read the result store: check, report and serve.

func newCheckCmd() *cobra.Command {
	var c runner.Check
	var failOn string
	cmd := &cobra.Command{
		Use:   "check PATH",
		Short: "Judge a stored history again (a run directory or a history.jsonl file)",
		Long: `Judge a history again. PATH is a run directory (store/<test>/<time>, or store/latest)
or a history file in the format of docs/history.md, which any tool may write. The
configuration the guarantee model assumes comes from the run's test.json when there is one;
flags override it. Without test.json the defaults are the strictest promise:
acks=-1, min.insync.replicas=2, clean election, no faults. The faults are judged by the
fault windows the history records (the kinds that started); a history that records none
is judged by --faults as given.
Exit code: 0 valid, 1 invalid, 2 unknown (0 with --fail-on invalid), 3 error.`,
		Args: func(_ *cobra.Command, args []string) error { return results.CheckArgs(args) },
		RunE: func(cmd *cobra.Command, args []string) error {
			c.Path, c.Given = args[0], cmd.Flags().Changed
			if err := cli.CheckFailOn(failOn); err != nil {
				return exitWith(0, err)
			}
			defer runner.CollectTighter()()
			res, err := c.Run(cmd.OutOrStdout())
			if err != nil {
				return exitWith(0, err)
			}
			return exitWith(failOnExit(cmd.OutOrStdout(), failOn, res.ExitCode()), nil)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.Acks, "acks", "-1", "producer acks the history was written with: 0, 1, -1 or all")
	fl.IntVar(&c.MinInsyncReplicas, "min-insync-replicas", 2, "the topic's min.insync.replicas")
	fl.StringVar(&c.Election, "election", "clean", "the topic's election policy: clean, unclean or elr")
	fl.IntVar(&c.ReplicationFactor, "replication-factor", 3, "the topic's replication factor")
	fl.StringSliceVar(&c.Faults, "faults", nil, "fault kinds the test was asked to inject (comma list of chaos run's --nemesis names, e.g. kill,partition,lose-unsynced); a history that records its fault windows is judged by those that started")
	fl.BoolVar(&c.LoseUnsynced, "lose-unsynced", false, "brokers lost their unsynced writes when killed (chaos broker --lose-unsynced, or a power loss): every kill then counts as losing data")
	fl.StringVar(&c.Fsync, "fsync", "", "the brokers' fsync policy: never, always or interval:DURATION; under always no fault loses unsynced writes")
	fl.BoolVar(&c.ClientRetries, "client-retries", false, "producers retried sends without idempotence (permits duplicates)")
	fl.BoolVar(&c.Idempotent, "idempotent", false, "producers were idempotent (KIP-98): duplicates and reordering stay forbidden whatever their retries")
	fl.IntVar(&c.MaxInFlight, "max-in-flight", 1, "produce requests a producer had in flight (above 1 permits reordering)")
	fl.DurationVar(&c.LinearizableTimeout, "linearizable-timeout", 0, "bound on the linearizability search; past it that check is unknown (default: 10s for each million operations it searches)")
	fl.BoolVar(&c.SkipLinearizability, "skip-linearizability", false, "skip the porcupine search (its checks report unknown)")
	fl.DurationVar(&c.LivenessBound, "liveness-bound", 0, "how long after the last heal the cluster had to converge and serve again (the liveness checks' bound; default: the run's test.json, and without one the liveness checks do not apply; 0 leaves them out)")
	fl.StringVar(&c.Out, "out", "", "also write the results as JSON to this file")
	registerFailOn(fl, &failOn)
	groupFlags(cmd, checkGroups())
	return cmd
}

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report PATH...",
		Short: "Render report.html for runs, index.html for campaigns and hunt.html for hunts, again",
		Long: `Render the HTML pages again from what is stored. PATH is a run directory
(store/<test>/<time>, or store/latest), a campaign directory (store/campaigns/<time>), a hunt
directory (store/hunts/<time>), or any directory above them, e.g. the whole store: every run,
campaign and hunt below it is rendered. A run's report.html is built from its test.json,
history.jsonl and results.json (an interrupted run without results.json still gets a report,
saying so); a campaign's index.html from its campaign.json; a hunt's hunt.html from its
hunt.json. Each page written is printed.
Exit code: 0 all rendered, 3 something could not be.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("PATH: missing; chaos report takes run, campaign or hunt directories, or a directory above them, e.g. chaos report store/latest, or chaos report store for everything")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			defer runner.CollectTighter()()
			return exitWith(0, report.WriteTrees(cmd.OutOrStdout(), cmd.ErrOrStderr(), args))
		},
	}
}

func newServeCmd() *cobra.Command {
	var store, addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Browse the result store in a web browser (on 127.0.0.1)",
		Long: `Serve the result store over HTTP on a loopback address: the front page lists every test
with its runs, newest first, the campaigns and the hunts, and links to each run's report,
history and node logs. A run, campaign or hunt without its page gets one rendered on first
visit. Nothing outside
the store is served: paths with "..", and symlinks that lead out of the store, are refused,
and so are requests addressed to any host name but localhost or a loopback address (a web page
that points its own name at 127.0.0.1 cannot read the store).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := serve.New(store, addr)
			if err != nil {
				return err
			}
			if err := cli.StopIfValidating(cmd.Context()); err != nil {
				return err
			}
			ctx, stop := cli.SignalContext()
			defer stop()
			return s.Serve(ctx, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&store, "store", "store", "the result store directory")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "where to listen: a loopback host and a port (0: any free port)")
	return cmd
}
