package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/internal/statusline"
	"github.com/chaos-isr/chaos/runner"
)

// Exit codes of run and check (docs/guarantees.md): 0 valid, 1 invalid, 2 unknown;
// 3 and up are errors that left no verdict.
const (
	exitValid       = 0
	exitInvalid     = 1
	exitUnknown     = 2
	exitErrorCode   = 3
	exitInterrupted = 130
)

// runFlags are chaos run's flags (runner.Flags) and a campaign's child
// protocol (hidden): run exactly the spec in a JSON file, write the
// outcome to another.
type runFlags struct {
	runner.Flags
	specFile, outcomeFile string
	// failOn is --fail-on (failon.go).
	failOn string
}

func newRunCmd() *cobra.Command {
	cmd, _ := newRunCmdFlags()
	return cmd
}

// newRunCmdFlags is chaos run and the values its flags parse into.
func newRunCmdFlags() (*cobra.Command, *runFlags) {
	f := new(runFlags)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one test: a local cluster, the workload, the final reads and the checkers",
		Long: `Run one test. It starts a cluster of chaos's own brokers (child processes on
127.0.0.1, or containers with --runtime docker), creates a topic, drives it with producers
and consumers for --time-limit while recording every operation in a history, reads every
partition and every replica's log once the cluster has converged, and judges the history
against what the configuration promises (acks, min.insync.replicas, election policy).

Before the workload starts, every broker must answer (Metadata) with the cluster id this
run gave its cluster and list exactly its brokers, and the topic must have the requested
partitions, replication factor, min.insync.replicas and election (DescribeConfigs): a node
that cannot start, or another cluster on the ports, is an error (exit 3), never a verdict.

--runtime external tests a cluster chaos did not start (Apache Kafka, Redpanda, a chaos
cluster up) at --bootstrap: it starts nothing, and faults the brokers named with --node
only through the shell commands given as --kill-cmd, --start-cmd, --partition-cmd and the
like; a fault whose commands are missing is refused (docs/external.md).

Results go to STORE/<name>/<timestamp>/ (history.jsonl, test.json, results.json, node logs)
and STORE/latest points at the newest run. Exit code: 0 valid, 1 invalid, 2 unknown
(0 with --fail-on invalid), 3 an error left no verdict, 130 interrupted: Ctrl-C heals the
open fault window, records its end and stops the cluster (an external cluster's nodes are
restored, never stopped); a second Ctrl-C kills the cluster at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitWith(runTest(cmd, *f))
		},
	}
	fl := cmd.Flags()
	f.Register(fl)
	f.RegisterSchedule(fl)
	f.External.RegisterExternal(fl)
	registerFailOn(fl, &f.failOn)
	fl.StringVar(&f.specFile, "spec-file", "", "run exactly the runner spec in this JSON file (a campaign's child runs)")
	fl.StringVar(&f.outcomeFile, "outcome-file", "", "write the run's outcome as JSON to this file, when it starts and when it ends")
	_ = fl.MarkHidden("spec-file")
	_ = fl.MarkHidden("outcome-file")
	groupFlags(cmd, runGroups())
	return cmd, f
}

// brokerOnlyFlags set what chaos starts its own brokers and controller
// with: an external cluster has its own settings, which chaos does not
// know and does not change.
var brokerOnlyFlags = []string{
	"nodes", "replica-lag-time-max-ms", "replica-lag-max-messages", "replica-fetch-wait-max-ms",
	"heartbeat-interval-ms", "fsync", "no-auto-create-topics", "session-timeout-ms",
}

// notForExternal refuses, with --runtime external, a flag that sets up
// chaos's own brokers: given, it would be silently ignored.
func notForExternal(fs *pflag.FlagSet, rt string) error {
	if rt != runner.RuntimeExternal {
		return nil
	}
	for _, name := range brokerOnlyFlags {
		if fl := fs.Lookup(name); fl != nil && fl.Changed {
			return cli.Error(name, fl.Value.String(), "not with --runtime external", "leave it out: it sets up chaos's own brokers, and the external cluster has its own settings (its brokers are those its metadata lists)")
		}
	}
	return nil
}

// errSilent marks an exit whose reason has already been printed.
var errSilent = errors.New("")

// exitWith turns a command's verdict code or error into cobra's error: an
// error exits 3 with its reason, a verdict exits with its code silently.
func exitWith(code int, err error) error {
	if err != nil {
		return &exitError{code: exitErrorCode, err: err}
	}
	if code != 0 {
		return &exitError{code: code, err: errSilent}
	}
	return nil
}

// runSpec is the spec chaos run runs: the flags', checked flag by flag
// first so that a refusal names the flag; or, for a campaign's child,
// exactly the one in --spec-file.
func (f runFlags) runSpec(cmd *cobra.Command) (runner.Spec, error) {
	if f.specFile == "" {
		if err := notForExternal(cmd.Flags(), f.Runtime); err != nil {
			return runner.Spec{}, err
		}
		return f.Spec()
	}
	// Display and protocol flags may go with a spec file.
	var others []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name != "spec-file" && fl.Name != "outcome-file" && fl.Name != "quiet" {
			others = append(others, "--"+fl.Name)
		}
	})
	return runner.ReadChildSpec(f.specFile, others)
}

func runTest(cmd *cobra.Command, f runFlags) (int, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	spec, err := f.runSpec(cmd)
	if err == nil {
		err = cli.CheckFailOn(f.failOn)
	}
	if err != nil {
		return 0, runner.WriteOutcome(f.outcomeFile, runner.Outcome{}, err)
	}
	if err := cli.StopIfValidating(cmd.Context()); err != nil {
		return 0, err
	}
	doing := "healing faults and stopping the cluster"
	if spec.Runtime == runner.RuntimeExternal {
		// Not ours to stop: its nodes are started, resumed and healed.
		doing = "healing faults and restoring the cluster's nodes"
	}
	ctx, intr, stop := cli.InterruptContext(errOut, doing)
	defer stop()
	outcome, err := runner.Run(ctx, spec, runner.Options{
		Version: fullVersion(),
		Started: func(dir string, seed uint64, clusterID string) {
			fmt.Fprintf(out, "run %s\nseed %d\n", dir, seed)
			if clusterID != "" {
				fmt.Fprintf(out, "cluster id %s\n", clusterID)
			}
			runner.SayBugs(out, spec.Settings.Bugs)
			runner.SayInterval(out, spec)
			// Where the run is, should it end without another word.
			_ = runner.WriteOutcome(f.outcomeFile, runner.Outcome{Dir: dir, Seed: seed, ClusterID: clusterID}, nil)
		},
		ClusterUp: intr.OnSecond,
		Workload:  func(st *runner.Status) func() { return progress(errOut, st, f.Quiet) },
		Log:       func(format string, args ...any) { fmt.Fprintf(errOut, format+"\n", args...) },
		Judging:   runner.JudgingLine(errOut, f.Quiet),
	})
	code, err := outcome.Say(out, errOut, runner.WriteOutcome(f.outcomeFile, outcome, err))
	return failOnExit(out, f.failOn, code), err
}

// progress shows the workload's progress on w until the returned stop is
// called: on one rewritten line on a terminal, as plain lines every 5 s
// otherwise.
func progress(w io.Writer, st *runner.Status, quiet bool) func() {
	if quiet {
		return func() {}
	}
	pl := statusline.New(w)
	stop := st.Progress(pl.Show, pl.Print)
	return func() {
		stop()
		pl.End()
	}
}
