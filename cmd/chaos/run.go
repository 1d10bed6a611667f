package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/proxy"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
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
	reqTimeout  time.Duration
	converge    time.Duration
	monitor     time.Duration
	quiet       bool
	rf          replicationFlags
	tf          topicFlags
}

func newRunCmd() *cobra.Command {
	var f runFlags
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
			return exitWith(runTest(cmd, f))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "test name (default: from the configuration, e.g. acks-1_isr2_clean_none)")
	fl.StringVar(&f.store, "store", "store", "the result store directory")
	fl.IntVar(&f.nodes, "nodes", 3, "number of brokers")
	fl.IntVar(&f.basePort, "base-port", 0, "broker i listens on base-port+i-1, the controller on base-port-1 (default: free ports)")
	fl.StringVar(&f.runtime, "runtime", runtimeLocal, runtimeUsage)
	fl.StringVar(&f.acks, "acks", "-1", "producer acks: 0, 1, or -1 (also 'all')")
	fl.IntVar(&f.concurrency, "concurrency", 5, "producer processes, one request in flight each")
	fl.IntVar(&f.consumers, "consumers", -1, "consumer processes (default: one per partition)")
	fl.Float64Var(&f.rate, "rate", 500, "target sends per second across all producers (0: as fast as they go)")
	fl.DurationVar(&f.timeLimit, "time-limit", 60*time.Second, "how long the workload runs")
	fl.Uint64Var(&f.seed, "seed", 0, "random seed for the workload's choices (default: random, printed and stored)")
	fl.StringVar(&f.nemesis, "nemesis", "none", "faults to inject, a comma list: "+strings.Join(nemesis.Names(), ", ")+"; or none")
	fl.DurationVar(&f.nemInterval, "nemesis-interval", 10*time.Second, "quiet period between fault windows, and a window's length (each ±25%, seeded)")
	fl.DurationVar(&f.reqTimeout, "request-timeout", 5*time.Second, "produce request timeout sent to brokers")
	fl.DurationVar(&f.converge, "converge-timeout", 60*time.Second, "how long the final phase waits for every replica to be back in the ISR")
	fl.DurationVar(&f.monitor, "monitor-interval", 250*time.Millisecond, "how often the monitor samples each partition's leader, ISR and HW into the history for the report (0: off)")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress display")
	f.rf.register(cmd)
	f.tf.register(cmd)
	fl.Lookup("min-insync-replicas").DefValue = "2"
	_ = fl.Set("min-insync-replicas", "2")
	return cmd
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

func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

func runTest(cmd *cobra.Command, f runFlags) (int, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	acks, faults, err := f.validate()
	if err != nil {
		return 0, err
	}
	if nemesis.LosesUnsynced(faults) {
		// Only brokers that keep unsynced writes in memory lose them.
		f.rf.loseUnsynced = true
	}
	if f.consumers < 0 {
		f.consumers = int(f.tf.partitions)
	}
	if f.seed == 0 {
		f.seed = randomSeed()
	}
	if f.name == "" {
		nem := "none"
		if len(faults) > 0 {
			nem = strings.Join(faults, "+")
		}
		f.name = fmt.Sprintf("acks%d_isr%d_%s_%s", acks, f.tf.minISR, f.tf.election, nem)
	}
	schedule := nemesis.NewSchedule(faults, f.nemInterval, f.timeLimit, f.seed)
	if len(faults) > 0 && len(schedule) == 0 {
		// A run whose faults never start would be judged as a healthy
		// cluster's while claiming the faults: refuse it up front.
		return 0, fmt.Errorf("--time-limit %s is too short for --nemesis-interval %s: no fault window fits (a run needs at least twice the interval; try --time-limit %s or a shorter --nemesis-interval)",
			f.timeLimit, f.nemInterval, 2*f.nemInterval+f.nemInterval/2)
	}
	// The guarantee model's own rules, the ones chaos check applies too.
	if err := (checker.Config{Acks: int(acks), MinInsyncReplicas: int(f.tf.minISR), Election: f.tf.election,
		ReplicationFactor: int(f.tf.rf), Faults: faults, MaxInFlight: 1}).Validate(); err != nil {
		return 0, err
	}
	wcfg := workload.Config{
		Topic: "chaos", Partitions: f.tf.partitions, Acks: acks, Concurrency: f.concurrency, Consumers: f.consumers,
		Rate: f.rate, TimeLimit: f.timeLimit, Seed: f.seed, RequestTimeout: f.reqTimeout, EndOffsetEvery: 5,
		Bootstrap: []string{"placeholder"},
	}
	if err := wcfg.Validate(); err != nil {
		return 0, err
	}
	ccfg := coreDefaults()
	var st storageOpts
	if err := f.rf.apply(&ccfg, &st); err != nil {
		return 0, err
	}
	if err := ccfg.Validate(); err != nil {
		return 0, err
	}
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}

	ctx, intr, stop := interruptContext(errOut, "healing faults and stopping the cluster")
	defer stop()
	if err := runtimeReady(ctx, f.runtime); err != nil {
		return 0, err
	}
	start := time.Now()
	run, err := results.NewRun(f.store, f.name, start)
	if err != nil {
		return 0, err
	}
	clusterID := newClusterID()
	fmt.Fprintf(out, "run %s\nseed %d\ncluster id %s\n", run.Dir, f.seed, clusterID)

	base := f.basePort
	if base == 0 {
		if base, err = cluster.FreeBasePort("127.0.0.1", f.nodes); err != nil {
			return 0, err
		}
	}
	spec := cluster.Spec{
		Nodes: f.nodes, BasePort: base, DataDir: run.Path("cluster"), ClusterID: clusterID,
		ControllerArgs: f.tf.args(), BrokerArgs: f.rf.args(),
	}
	lc, err := startCluster(ctx, f.runtime, spec, nemesis.NeedsNetwork(faults))
	if err != nil {
		if ctx.Err() != nil {
			return exitInterrupted, nil
		}
		return 0, fmt.Errorf("starting the cluster%s: %w", keptLogs(run), err)
	}
	defer lc.Close()
	intr.onSecond(lc.Abort)
	wcfg.Bootstrap = strings.Split(lc.Bootstrap(), ",")

	tc := results.TestConfig{
		Name: f.name, Seed: f.seed, Start: start, Command: os.Args,
		Versions: map[string]string{"chaos": fullVersion(), "go": runtime.Version()},
		Cluster: results.ClusterConfig{
			Runtime: f.runtime, ClusterID: clusterID, DelayMechanism: lc.delays, Nodes: f.nodes, ReplicationFactor: f.tf.rf, MinInsyncReplicas: f.tf.minISR,
			Election: f.tf.election, SessionTimeoutMs: f.tf.sessionMs, ReplicaLagTimeMaxMs: f.rf.lagTimeMs,
			ReplicaLagMaxMessage: f.rf.lagMessages, Fsync: storage.FormatFsync(st.Fsync, st.FsyncIntervalMs), LoseUnsynced: f.rf.loseUnsynced,
		},
		Workload: storedWorkload(wcfg), Nemesis: faults, Schedule: storedSchedule(schedule), Converge: f.converge,
	}
	if err := run.WriteJSON("test.json", tc); err != nil {
		return 0, err
	}
	if err := run.MarkLatest(); err != nil {
		return 0, err
	}
	if err := workload.CreateTopic(ctx, wcfg.Bootstrap, workload.TopicSpec{
		Name: wcfg.Topic, Partitions: wcfg.Partitions, ReplicationFactor: f.tf.rf,
		MinInsyncReplicas: f.tf.minISR, Unclean: f.tf.election == "unclean",
	}, 30*time.Second); err != nil {
		if ctx.Err() != nil {
			return exitInterrupted, nil
		}
		return 0, err
	}

	hw, err := history.Create(run.Path("history.jsonl"))
	if err != nil {
		return 0, err
	}
	wstart := time.Now()
	rec := workload.NewRecorder(hw, wstart)
	leaders := func(ctx context.Context) (map[int32]int32, error) {
		return workload.Leaders(ctx, wcfg.Bootstrap, wcfg.Topic)
	}
	nem := nemesis.New(nemesis.Config{
		Brokers: f.nodes, Partitions: f.tf.partitions, Seed: f.seed,
		LagTimeMax: time.Duration(f.rf.lagTimeMs) * time.Millisecond,
	}, lc, lc.net, leaders, rec)
	// The monitor runs until the final reads are done, so the report shows
	// the cluster healing as well as breaking.
	monCtx, monCancel := context.WithCancel(ctx)
	monDone := make(chan error, 1)
	if f.monitor > 0 {
		go func() { monDone <- workload.Monitor(monCtx, wcfg, rec, f.monitor, time.Second) }()
	} else {
		monDone <- nil
	}
	stopMonitor := sync.OnceValue(func() error {
		monCancel()
		return <-monDone
	})
	defer stopMonitor()
	nemCtx, nemCancel := context.WithCancel(ctx)
	nemDone := make(chan error, 1)
	go func() { nemDone <- nem.Run(nemCtx, wstart, schedule) }()
	stopProgress := progress(errOut, rec, f.timeLimit, f.quiet, func() string {
		w, ok := nem.Current()
		return faultStatus(w, ok, time.Now())
	})
	runErr := workload.Run(ctx, wcfg, rec)
	stopProgress()
	nemCancel()
	if err := <-nemDone; err != nil && runErr == nil {
		runErr = err
	}
	if len(faults) > 0 && ctx.Err() == nil {
		if err := nem.HealAll(ctx); err != nil {
			fmt.Fprintf(errOut, "healing: %v\n", err)
		}
	}
	if runErr == nil && ctx.Err() == nil {
		fmt.Fprintf(errOut, "final phase: waiting up to %s for the cluster to converge\n", f.converge)
		var conv workload.Convergence
		conv, runErr = workload.Final(ctx, wcfg, rec, f.converge)
		if runErr == nil {
			if conv.Converged {
				fmt.Fprintf(errOut, "converged after %s; final reads done\n", conv.Waited.Round(time.Millisecond))
			} else {
				fmt.Fprintf(errOut, "did NOT converge within %s: %s\n", f.converge, conv.Why)
			}
			tc.Convergence = storedConvergence(conv)
			_ = run.WriteJSON("test.json", tc)
		}
	}
	if err := stopMonitor(); err != nil && runErr == nil {
		runErr = err
	}
	if err := hw.Close(); err != nil && runErr == nil {
		runErr = err
	}
	lc.Close()
	if ctx.Err() != nil {
		fmt.Fprintf(errOut, "interrupted: the history so far is in %s\n", run.Path("history.jsonl"))
		writeRunReport(errOut, run)
		return exitInterrupted, nil
	}
	if runErr != nil {
		writeRunReport(errOut, run)
		return 0, fmt.Errorf("workload: %w (history so far in %s)", runErr, run.Path("history.jsonl"))
	}
	return judgeRun(out, run, tc)
}

// faultStatus describes an open fault window in a few words for the
// progress line, e.g. "partition-leader broker-3, 4s left": the fault, its
// first targets (up to the "|" of a partition: the side cut off), why it
// failed if it did, and the time to its heal. It is empty when no window
// is open.
func faultStatus(w nemesis.Window, open bool, now time.Time) string {
	if !open {
		return ""
	}
	var targets []string
	for _, t := range w.Targets {
		if t == "|" || len(targets) == 3 {
			break
		}
		if !strings.HasPrefix(t, "via ") {
			targets = append(targets, t)
		}
	}
	s := strings.Join(append([]string{w.Fault}, targets...), " ")
	switch {
	case !w.Started:
		s = "starting " + s
	case w.Err != "":
		s += " (failed: " + w.Err + ")"
	}
	if left := w.End.Sub(now); left > 0 {
		return fmt.Sprintf("%s, %ds left", s, int((left+time.Second-1)/time.Second))
	}
	return s + ", healing"
}

// keptLogs says where a run that could not start its cluster keeps the
// node logs that say why, or removes the run's directory when nothing was
// written there: a refused run leaves no empty run behind.
func keptLogs(run *results.Run) string {
	if err := os.Remove(run.Path("cluster")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf(" (node logs in %s)", run.Path("cluster"))
	}
	// Each only if empty: the test's directory may hold other runs.
	_ = os.Remove(run.Dir)
	_ = os.Remove(filepath.Dir(run.Dir))
	return ""
}

// progress prints elapsed time, throughput, outcomes and the fault window
// open (fault's description, if any) once a second until the returned
// stop is called: on one rewritten line on a terminal, as plain lines every
// 5 s otherwise.
func progress(w io.Writer, rec *workload.Recorder, limit time.Duration, quiet bool, fault func() string) func() {
	if quiet {
		return func() {}
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			tty = fi.Mode()&os.ModeCharDevice != 0
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var last workload.Stats
		n := 0
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprintln(w)
				}
				return
			case <-t.C:
			}
			n++
			s := rec.Stats()
			line := fmt.Sprintf("[%3ds/%ds] %5d ops/s  ok %d  fail %d  info %d",
				int(rec.Since().Seconds()), int(limit.Seconds()), s.OK+s.Fail+s.Info-last.OK-last.Fail-last.Info, s.OK, s.Fail, s.Info)
			if f := fault(); f != "" {
				line += "  | " + f
			}
			last = s
			if tty {
				fmt.Fprintf(w, "\r%s\x1b[K", line)
			} else if n%5 == 0 {
				fmt.Fprintln(w, line)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// linkFabric puts a proxy on every link a broker dials (to each peer and to
// the controller) and points the brokers at them.
func linkFabric(spec *cluster.Spec) (*proxy.Fabric, error) {
	fabric := proxy.NewFabric()
	addr := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	ctrlPort := spec.ControllerPort
	if ctrlPort == 0 {
		ctrlPort = spec.BasePort - 1
	}
	for i := 1; i <= spec.Nodes; i++ {
		if _, err := fabric.Add(cluster.NodeName(i), "controller", addr(ctrlPort)); err != nil {
			fabric.Close()
			return nil, err
		}
		for j := 1; j <= spec.Nodes; j++ {
			if j == i {
				continue
			}
			if _, err := fabric.Add(cluster.NodeName(i), cluster.NodeName(j), addr(spec.BasePort+j-1)); err != nil {
				fabric.Close()
				return nil, err
			}
		}
	}
	spec.BrokerArgsFor = func(i int) []string {
		args := []string{"--controller", fabric.Link(cluster.NodeName(i), "controller").Addr()}
		for j := 1; j <= spec.Nodes; j++ {
			if j != i {
				args = append(args, "--peer-addr", fmt.Sprintf("%d=%s", j, fabric.Link(cluster.NodeName(i), cluster.NodeName(j)).Addr()))
			}
		}
		return args
	}
	return fabric, nil
}
