package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/nemesis"
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

type runFlags struct {
	name        string
	store       string
	nodes       int
	basePort    int
	runtime     string
	acks        string
	concurrency int
	consumers   int
	rate        float64
	timeLimit   time.Duration
	seed        uint64
	nemesis     string
	nemInterval time.Duration
	nemOverlap  int
	reqTimeout  time.Duration
	retries     int
	idempotent  bool
	maxInFlight int
	converge    time.Duration
	monitor     time.Duration
	quiet       bool
	rf          replicationFlags
	tf          topicFlags
	bugs        bugFlags

	// specFile and outcomeFile are a campaign's child protocol (hidden):
	// run exactly the spec in a JSON file, write the outcome to another.
	specFile, outcomeFile string
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
		Long: `Run one test. It starts a local cluster, creates a topic, drives it with producers
and consumers for --time-limit while recording every operation in a history, reads every
partition and every replica's log once the cluster has converged, and judges the history
against what the configuration promises (acks, min.insync.replicas, election policy).

Before the workload starts, every broker must answer (Metadata) with the cluster id this
run gave its cluster and list exactly its brokers, and the topic must have the requested
partitions, replication factor, min.insync.replicas and election (DescribeConfigs): a node
that cannot start, or another cluster on the ports, is an error (exit 3), never a verdict.

Results go to STORE/<name>/<timestamp>/ (history.jsonl, test.json, results.json, node logs)
and STORE/latest points at the newest run. Exit code: 0 valid, 1 invalid, 2 unknown,
3 an error left no verdict, 130 interrupted: Ctrl-C heals the open fault window, records
its end and stops the cluster; a second Ctrl-C kills the cluster at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitWith(runTest(cmd, *f))
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.specFile, "spec-file", "", "run exactly the runner spec in this JSON file (a campaign's child runs)")
	fl.StringVar(&f.outcomeFile, "outcome-file", "", "write the run's outcome as JSON to this file, when it starts and when it ends")
	_ = fl.MarkHidden("spec-file")
	_ = fl.MarkHidden("outcome-file")
	return cmd, f
}

// register defines the flags of a test on cmd: chaos run's, which chaos
// sim takes too.
func (f *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "test name (default: from the configuration, e.g. acksall_isr2_clean_none for acks=-1)")
	fl.StringVar(&f.store, "store", "store", "the result store directory")
	fl.IntVar(&f.nodes, "nodes", 3, "number of brokers")
	fl.IntVar(&f.basePort, "base-port", 0, "broker i listens on base-port+i-1, the controller on base-port-1 (default: free ports)")
	fl.StringVar(&f.runtime, "runtime", runtimeLocal, runtimeUsage)
	fl.StringVar(&f.acks, "acks", "-1", "producer acks: 0, 1, or -1 (also 'all')")
	fl.IntVar(&f.concurrency, "concurrency", 5, "producers (sessions), one request in flight each unless --max-in-flight")
	fl.IntVar(&f.consumers, "consumers", -1, "consumer processes (default: one per partition)")
	fl.Float64Var(&f.rate, "rate", 500, "target sends per second across all producers (0: as fast as they go)")
	fl.DurationVar(&f.timeLimit, "time-limit", 60*time.Second, "how long the workload runs")
	fl.Uint64Var(&f.seed, "seed", 0, "random seed for the workload's choices (default: random, printed and stored)")
	fl.StringVar(&f.nemesis, "nemesis", "none", "faults to inject, a comma list: "+strings.Join(nemesis.Names(), ", ")+"; or none")
	fl.DurationVar(&f.nemInterval, "nemesis-interval", 10*time.Second, "quiet period between fault windows, and a window's length (each ±25%, seeded)")
	fl.IntVar(&f.nemOverlap, "nemesis-overlap", 1, "up to this many fault kinds overlap in a window (1-3): about half the windows start further kinds of the list while the first holds, all healed at the window's end")
	fl.DurationVar(&f.reqTimeout, "request-timeout", 5*time.Second, "produce request timeout sent to brokers")
	fl.IntVar(&f.retries, "retries", 0, "times a producer sends a batch again after a retriable error (0: never; above 0, duplicates are permitted unless --idempotent)")
	fl.BoolVar(&f.idempotent, "idempotent", false, "idempotent producers (KIP-98: a producer id and sequence numbers, so a broker writes a retry once; duplicates are then forbidden)")
	fl.IntVar(&f.maxInFlight, "max-in-flight", 1, "produce requests each producer may have outstanding (max.in.flight.requests.per.connection; at most 5 with --idempotent; above 1 without it, reordering is permitted)")
	fl.DurationVar(&f.converge, "converge-timeout", 60*time.Second, "how long the final phase waits for every replica to be back in the ISR")
	fl.DurationVar(&f.monitor, "monitor-interval", 250*time.Millisecond, "how often the monitor samples each partition's leader, ISR and HW into the history, for the report and the ack-below-min-isr check (0: off; that check then cannot be made)")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress display")
	f.rf.register(cmd)
	f.tf.register(cmd)
	f.bugs.register(cmd)
	// Set as the value, not with fl.Set, which would mark the flag as
	// given on the command line.
	fl.Lookup("min-insync-replicas").DefValue = "2"
	f.tf.MinInsyncReplicas = 2
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

// spec maps chaos run's flags to the runner's spec.
func (f runFlags) spec(acks int16, faults []string) runner.Spec {
	s := runner.DefaultSpec()
	s.Name, s.Store, s.Seed, s.Runtime, s.Nodes, s.BasePort = f.name, f.store, f.seed, f.runtime, f.nodes, f.basePort
	s.Settings = runner.NodeSettings(node.Replication(f.rf), node.Topics(f.tf), f.bugs)
	s.Acks, s.Concurrency, s.Consumers, s.Rate = acks, f.concurrency, f.consumers, f.rate
	s.TimeLimit, s.RequestTimeout = f.timeLimit, f.reqTimeout
	s.Retries, s.Idempotent, s.MaxInFlight = f.retries, f.idempotent, f.maxInFlight
	s.Faults, s.NemesisInterval = faults, f.nemInterval
	if f.nemOverlap != 1 {
		s.NemesisOverlap = f.nemOverlap // 1, one fault at a time, is the spec's zero
	}
	s.ConvergeTimeout, s.MonitorInterval = f.converge, f.monitor
	s.Command = os.Args
	return s
}

// runSpec is the spec chaos run runs: the flags', checked flag by flag
// first so that a refusal names the flag; or, for a campaign's child,
// exactly the one in --spec-file.
func (f runFlags) runSpec(cmd *cobra.Command) (runner.Spec, error) {
	if f.specFile == "" {
		acks, faults, err := f.validate()
		if err != nil {
			return runner.Spec{}, err
		}
		spec := f.spec(acks, faults)
		if err := spec.Validate(); err != nil {
			// Flags the checks above passed but the spec refuses: a
			// combination (e.g. a schedule with no window).
			return runner.Spec{}, flagCombination(err, f)
		}
		return spec, nil
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

// writeOutcome writes the outcome to --outcome-file, if one was asked for
// (runner.WriteOutcome), and returns runErr.
func (f runFlags) writeOutcome(o runner.Outcome, runErr error) error {
	return runner.WriteOutcome(f.outcomeFile, o, runErr)
}

func runTest(cmd *cobra.Command, f runFlags) (int, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	spec, err := f.runSpec(cmd)
	if err != nil {
		return 0, f.writeOutcome(runner.Outcome{}, err)
	}
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}
	ctx, intr, stop := interruptContext(errOut, "healing faults and stopping the cluster")
	defer stop()
	outcome, err := runner.Run(ctx, spec, runner.Options{
		Version: fullVersion(),
		Started: func(dir string, seed uint64, clusterID string) {
			fmt.Fprintf(out, "run %s\nseed %d\ncluster id %s\n", dir, seed, clusterID)
			sayBugs(out, spec.Settings.Bugs)
			// Where the run is, should it end without another word.
			_ = f.writeOutcome(runner.Outcome{Dir: dir, Seed: seed, ClusterID: clusterID}, nil)
		},
		ClusterUp: intr.OnSecond,
		Workload:  func(st *runner.Status) func() { return progress(errOut, st, f.quiet) },
		Log:       func(format string, args ...any) { fmt.Fprintf(errOut, format+"\n", args...) },
	})
	return sayOutcome(out, errOut, outcome, f.writeOutcome(outcome, err))
}

// sayBugs says which bugs a run plants, if any.
var sayBugs = runner.SayBugs

// sayOutcome prints how a run ended (its verdict and where its results and
// report are, or why there is no verdict) and returns its exit code.
func sayOutcome(out, errOut io.Writer, outcome runner.Outcome, err error) (int, error) {
	return outcome.Say(out, errOut, err)
}

// flagCombination says which flags a refused spec is about: chaos run
// names its flags, where the runner names the spec's fields.
func flagCombination(err error, f runFlags) error {
	return runner.FlagCombination(err, f.timeLimit, f.nemInterval)
}

// progress shows the workload's progress on w until the returned stop is
// called: on one rewritten line on a terminal, as plain lines every 5 s
// otherwise.
func progress(w io.Writer, st *runner.Status, quiet bool) func() {
	if quiet {
		return func() {}
	}
	pl := newProgressLine(w)
	stop := st.Progress(pl.show, pl.print)
	return func() {
		stop()
		pl.end()
	}
}
