package runner

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/external"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/workload"
)

// Options are what a caller adds to a spec: the version of chaos to
// record, and hooks to show the run as it goes (each may be nil).
type Options struct {
	// Version is recorded in test.json as the version of chaos.
	Version string
	// Started: the run's directory exists, and its seed and cluster id
	// are chosen (chaos run prints them first).
	Started func(dir string, seed uint64, clusterID string)
	// ClusterUp: the cluster runs; abort kills every node at once and
	// releases what the runtime made (a second interrupt calls it).
	ClusterUp func(abort func())
	// Workload: the workload starts; the Status tells a display what
	// happens. The returned function is called when the workload ends.
	Workload func(s *Status) (done func())
	// Log: a line saying what the run does now (the final phase,
	// convergence, a heal that failed, an interruption).
	Log func(format string, args ...any)
	// Judging: how far judging the history has come (reading it, the
	// checks, the report), a line to show in place of the last; "" once
	// it is over. A day's run is judged for minutes.
	Judging func(step string)
	// NodeLog, when set, hears each line a node of a simulated cluster
	// logs (node 0 the controller, brokers by id): the cluster's own
	// state transitions, which a search may steer by. Only the simulation
	// calls it.
	NodeLog func(node int32, line string)
}

func (h Options) log(format string, args ...any) {
	if h.Log != nil {
		h.Log(format, args...)
	}
}

// Status is what a progress display shows of a running workload.
type Status struct {
	rec   *workload.Recorder
	nem   *nemesis.Nemesis
	Limit time.Duration // the workload's time limit
}

// Stats counts completed operations.
type Stats = workload.Stats

// Stats counts the operations completed so far.
func (s *Status) Stats() Stats { return s.rec.Stats() }

// Since is the time since the workload started.
func (s *Status) Since() time.Duration { return s.rec.Since() }

// Fault is the fault window open now, if any.
func (s *Status) Fault() (nemesis.Window, bool) { return s.nem.Current() }

// Outcome is how a run ended.
type Outcome struct {
	// Dir is the run's directory in the store ("" if the run was
	// refused before it had one).
	Dir       string `json:"dir,omitempty"`
	Name      string `json:"name,omitempty"`
	Seed      uint64 `json:"seed"`
	ClusterID string `json:"cluster_id,omitempty"`
	// Verdict is the checkers' verdict; empty when the run ended without
	// one (interrupted, or an error).
	Verdict checker.Validity `json:"verdict,omitempty"`
	// Interrupted: the context ended before the run did; the history so
	// far and a report without a verdict are in Dir.
	Interrupted bool `json:"interrupted,omitempty"`
	// Results are the checkers' results (also in Dir/results.json).
	Results *checker.Results `json:"-"`
	// Report is the path of report.html, or ReportErr why it could not
	// be written (the verdict stands either way).
	Report    string `json:"report,omitempty"`
	ReportErr string `json:"report_error,omitempty"`
	// Detection is where the history first shows an anomaly the
	// configuration forbids (checker.FirstDetection), when it shows one:
	// found while the judged ops are at hand, so that nobody reads the
	// history again for it.
	Detection *checker.Detection `json:"detection,omitempty"`
	// Error is why the run left no verdict, when Run returned an error
	// (for outcome files; Run's error says the same).
	Error string `json:"error,omitempty"`
}

// Exit codes of a run (docs/run.md): 0 valid, 1 invalid, 2 unknown, 3 an error
// left no verdict, 130 interrupted.
const (
	ExitError       = 3
	ExitInterrupted = 130
)

// ExitCode maps the outcome to chaos run's exit code.
func (o Outcome) ExitCode() int {
	switch {
	case o.Interrupted:
		return ExitInterrupted
	case o.Verdict == "" || o.Error != "":
		return ExitError
	}
	return checker.ExitCode(o.Verdict)
}

// RandomSeed draws a seed for a run (or a campaign) that was given none.
func RandomSeed() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

// Run runs one test: see the package doc. It returns an error, with the
// Outcome so far, when the run could not reach a verdict (a refused spec,
// a cluster that did not start or is not the one started, a workload that
// failed); an interrupted run (ctx ended) returns Interrupted and no
// error.
func Run(ctx context.Context, spec Spec, opts Options) (Outcome, error) {
	if err := spec.Validate(); err != nil {
		return Outcome{}, err
	}
	if err := RuntimeReady(ctx, spec.Runtime); err != nil {
		return Outcome{}, err
	}
	given := spec.LivenessBound != 0
	spec = spec.Normalized()
	if spec.Seed == 0 {
		spec.Seed = RandomSeed()
		if len(spec.Command) > 0 {
			spec.Command = append(spec.Command, "--seed", fmt.Sprint(spec.Seed))
		}
	}
	r := &run{spec: spec, hooks: opts, boundGiven: given}
	err := r.do(ctx)
	if err != nil {
		r.out.Error = err.Error()
	}
	return r.out, err
}

type run struct {
	spec  Spec
	hooks Options
	out   Outcome
	dir   *results.Run
	// What the nemesis is told of a cluster it did not start (the
	// external runtime): its nodes' names, its brokers' ids, and whether
	// it has a controller node to fault.
	names        func(int) string
	brokerIDs    []int32
	noController bool
	// boundGiven says the liveness bound was asked for, not the default
	// (an external cluster's own timeouts make its default).
	boundGiven bool
}

func (r *run) do(ctx context.Context) error {
	s := r.spec
	start := time.Now()
	dir, err := results.NewRun(s.Store, s.Name, start)
	if err != nil {
		return err
	}
	r.dir = dir
	clusterID := NewClusterID()
	if s.Runtime == RuntimeExternal {
		// The cluster has an id of its own, known once it answers.
		clusterID = ""
	}
	r.out = Outcome{Dir: dir.Dir, Name: s.Name, Seed: s.Seed, ClusterID: clusterID}
	if r.hooks.Started != nil {
		r.hooks.Started(dir.Dir, s.Seed, clusterID)
	}
	if n := s.CoverageNote(); n != "" {
		r.hooks.log("%s", n)
	}

	var (
		lc     *Cluster
		wcfg   workload.Config
		tc     results.TestConfig
		halted bool
	)
	if s.Runtime == RuntimeExternal {
		lc, wcfg, tc, halted, err = r.external(ctx, start)
	} else {
		lc, wcfg, tc, halted, err = r.start(ctx, start, clusterID)
	}
	if halted || err != nil {
		r.out.Interrupted = halted
		return err
	}
	defer lc.Close()
	schedule := s.Schedule()
	runErr := r.workload(ctx, lc, wcfg, schedule, &tc)
	lc.Close()
	switch {
	case ctx.Err() != nil:
		r.hooks.log("interrupted: the history so far is in %s", dir.Path(results.HistoryFile))
		r.out.Interrupted = true
		r.report(report.WriteRun(dir.Dir, nil))
		return nil
	case runErr != nil:
		r.report(report.WriteRun(dir.Dir, nil))
		return fmt.Errorf("workload: %w (history so far in %s)", runErr, dir.Path(results.HistoryFile))
	}
	return r.judge(tc)
}

// start starts the cluster in a runtime of the tester's own, writes
// test.json and creates the topic. halted: ctx ended first.
func (r *run) start(ctx context.Context, start time.Time, clusterID string) (lc *Cluster, wcfg workload.Config, tc results.TestConfig, halted bool, err error) {
	s, dir := r.spec, r.dir
	for attempt := 1; ; attempt++ {
		base := s.BasePort
		if base == 0 {
			if base, err = cluster.FreeBasePort("127.0.0.1", s.Nodes); err != nil {
				return nil, wcfg, tc, false, err
			}
		}
		cspec := cluster.Spec{
			Nodes: s.Nodes, BasePort: base, DataDir: dir.Path("cluster"), ClusterID: clusterID, Binary: s.Binary,
			ControllerArgs: s.Settings.ControllerArgs(), BrokerArgs: s.Settings.BrokerArgs(),
		}
		lc, err = StartCluster(ctx, s.Runtime, cspec, nemesis.NeedsNetwork(s.Faults))
		// Ports the tester chose were free when it looked; another
		// process may have taken one since. Other ports, on a fresh
		// directory, are as good.
		if err == nil || s.BasePort != 0 || attempt == 5 || !errors.Is(err, cluster.ErrPortInUse) || ctx.Err() != nil {
			break
		}
		if rerr := os.RemoveAll(dir.Path("cluster")); rerr != nil {
			break
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, wcfg, tc, true, nil
		}
		return nil, wcfg, tc, false, fmt.Errorf("starting the cluster: %w%s", err, keptLogs(dir))
	}
	if r.hooks.ClusterUp != nil {
		r.hooks.ClusterUp(lc.Abort)
	}
	wcfg = s.WorkloadConfig(strings.Split(lc.Bootstrap(), ","))
	tc = s.TestConfig(start, r.version(), clusterID, lc.Delays, wcfg)
	fail := func(err error) (*Cluster, workload.Config, results.TestConfig, bool, error) {
		lc.Close()
		return nil, wcfg, tc, ctx.Err() != nil, err
	}
	if err := dir.WriteJSON(results.TestFile, tc); err != nil {
		return fail(err)
	}
	if err := dir.MarkLatest(); err != nil {
		return fail(err)
	}
	if err := workload.CreateTopic(ctx, wcfg.Bootstrap, workload.TopicSpec{
		Name: wcfg.Topic, Partitions: wcfg.Partitions, ReplicationFactor: s.Settings.ReplicationFactor,
		MinInsyncReplicas: s.Settings.MinInsyncReplicas, Unclean: s.Settings.Election == "unclean", ELR: s.Settings.Election == "elr",
	}, 30*time.Second); err != nil {
		if ctx.Err() != nil {
			return fail(nil)
		}
		return fail(err)
	}
	return lc, wcfg, tc, false, nil
}

// external reaches the external cluster, matches its nodes, creates (or
// takes) the topic, finds which checks the cluster cannot support and
// writes test.json. Nothing is written to the store before the cluster
// answered: an unreachable bootstrap leaves no run behind.
func (r *run) external(ctx context.Context, start time.Time) (lc *Cluster, wcfg workload.Config, tc results.TestConfig, halted bool, err error) {
	s, dir, x := &r.spec, r.dir, r.spec.External
	refuse := func(err error) (*Cluster, workload.Config, results.TestConfig, bool, error) {
		if ctx.Err() != nil {
			keptLogs(dir)
			return nil, wcfg, tc, true, nil
		}
		return nil, wcfg, tc, false, fmt.Errorf("%w%s", err, keptLogs(dir))
	}
	conn, err := x.connect(ctx, dir.Path("cluster"), len(s.Faults) > 0)
	if err != nil {
		return refuse(err)
	}
	if int(s.Settings.ReplicationFactor) > conn.brokers && x.Topic == "" {
		return refuse(fmt.Errorf("external cluster: --replication-factor %d is above its %d brokers", s.Settings.ReplicationFactor, conn.brokers))
	}
	s.Nodes = conn.brokers
	r.out.ClusterID = conn.clusterID
	if x.CheckCommands {
		// Before the topic: a refused run leaves nothing on the cluster.
		did, err := conn.cluster.CheckCommands(ctx, commandsFor(s.Faults), time.Duration(max(s.Settings.ReplicaLagTimeMaxMs, 1000))*time.Millisecond)
		if err != nil {
			return refuse(fmt.Errorf("--check-commands: %w", err))
		}
		r.hooks.log("checked the fault commands: %s", did)
	}
	r.names, r.brokerIDs, r.noController = conn.cluster.Name, conn.brokerIDs, conn.spec.Controller == nil
	topic, existed, notes, err := x.topic(ctx, *s)
	if err != nil {
		return refuse(err)
	}
	// The run is judged by the topic as it is. Consumers that were one
	// per partition stay one per partition of the topic.
	if s.Consumers == int(s.Settings.Partitions) {
		s.Consumers = int(topic.Partitions)
	}
	s.Settings.Partitions, s.Settings.ReplicationFactor = topic.Partitions, topic.ReplicationFactor
	s.Settings.MinInsyncReplicas = topic.MinInsyncReplicas
	s.Settings.Election = "clean"
	switch {
	case topic.Unclean:
		s.Settings.Election = "unclean"
	case topic.ELR:
		// Kafka 4.1's default for new clusters: the cluster's
		// ApiVersions finalizes eligible.leader.replicas.version.
		s.Settings.Election = "elr"
	}
	if err := s.checkerConfig().Validate(); err != nil {
		return refuse(fmt.Errorf("topic %s: %w", topic.Name, err))
	}
	unsupported, err := x.unsupported(ctx, topic.Name, topic.Partitions)
	if err != nil {
		return refuse(err)
	}
	if existed {
		// The liveness checks blame a partition left without its leader
		// or ISR on the faults; one that began so is not theirs to judge.
		if why := workload.TopicUnconverged(ctx, x.Bootstrap, topic.Name, topic.Partitions, 10*time.Second); why != "" && ctx.Err() == nil {
			for _, name := range []string{checker.NoConvergenceName, checker.StuckPartitionName} {
				unsupported[name] = "the topic was not converged before the test began (" + why + "): the end state cannot be blamed on the faults"
			}
		}
	}
	// How long a slowed follower takes to leave the ISR is the cluster's
	// replica.lag.time.max.ms: slow faults delay links beyond it.
	lagKnown := false
	if v, ok := workload.BrokerConfig(ctx, x.Bootstrap, conn.anyBroker, "replica.lag.time.max.ms"); ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			s.Settings.ReplicaLagTimeMaxMs, lagKnown = ms, true
		}
	}
	if !r.boundGiven {
		// The default bound is the cluster's timeouts', not chaos's
		// brokers': Kafka fences a broker after broker.session.timeout.ms
		// (9 s unless the cluster says otherwise).
		st := s.Settings
		st.SessionTimeoutMs = 9000
		if v, ok := workload.BrokerConfig(ctx, x.Bootstrap, conn.anyBroker, "broker.session.timeout.ms"); ok {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
				st.SessionTimeoutMs = ms
			}
		}
		if !lagKnown {
			st.ReplicaLagTimeMaxMs = 30000 // Kafka's default
		}
		s.LivenessBound = DefaultLivenessBound(st)
	}
	if !lagKnown && slices.ContainsFunc(s.Faults, func(f string) bool {
		n, _ := nemesis.Lookup(f)
		return n != nil && slices.Contains(n.Needs, nemesis.NeedSlow)
	}) {
		notes = append(notes, fmt.Sprintf("the cluster does not describe replica.lag.time.max.ms: slow faults delay links by %s, which drops a follower from the ISR only if its lag time is shorter",
			time.Duration(max(s.Settings.ReplicaLagTimeMaxMs, 1000))*time.Millisecond))
	}
	lc = &Cluster{Cluster: conn.cluster, stop: conn.cluster.Close}
	if slices.ContainsFunc(s.Faults, func(f string) bool { n, _ := nemesis.Lookup(f); return n != nil && n.Network }) {
		lc.Net = conn.cluster
	}
	if r.hooks.ClusterUp != nil {
		r.hooks.ClusterUp(lc.Abort)
	}
	wcfg = s.WorkloadConfig(x.Bootstrap)
	wcfg.Topic, wcfg.Partitions = topic.Name, topic.Partitions
	wcfg.NoReplicaReads = unsupported[checker.ReplicaDivergenceName] != ""
	tc = s.TestConfig(start, r.version(), conn.clusterID, "", wcfg)
	// What chaos's brokers are told and the external cluster's are not.
	tc.Cluster.SessionTimeoutMs, tc.Cluster.ReplicaLagTimeMaxMs, tc.Cluster.ReplicaLagMaxMessage = 0, 0, 0
	if lagKnown {
		tc.Cluster.ReplicaLagTimeMaxMs = s.Settings.ReplicaLagTimeMaxMs
	}
	tc.Cluster.Fsync = ""
	tc.Cluster.External = conn.stored(x, existed, notes)
	tc.Cluster.Unsupported = unsupported
	tc.Cluster.Weakened = x.weakened(s.Faults)
	how := "created"
	if existed {
		how = "existing"
	}
	r.hooks.log("external cluster %s at %s: %d brokers; topic %s (%s): %d partitions, replication factor %d, min.insync.replicas %d, %s election",
		conn.clusterID, strings.Join(x.Bootstrap, ","), conn.brokers, topic.Name, how, topic.Partitions, topic.ReplicationFactor,
		topic.MinInsyncReplicas, s.Settings.Election)
	for _, n := range notes {
		r.hooks.log("%s", n)
	}
	for name, why := range unsupported {
		r.hooks.log("%s will not be checked: %s", name, why)
	}
	for _, k := range slices.Sorted(maps.Keys(tc.Cluster.Weakened)) {
		r.hooks.log("%s will run weakened (--allow-weakened-faults): %s", k, tc.Cluster.Weakened[k])
	}
	if err := dir.WriteJSON(results.TestFile, tc); err != nil {
		lc.Close()
		return nil, wcfg, tc, false, err
	}
	if err := dir.MarkLatest(); err != nil {
		lc.Close()
		return nil, wcfg, tc, false, err
	}
	return lc, wcfg, tc, false, nil
}

// watched are the brokers' answers as a triggered fault watches them.
func watched(got []workload.WatchAnswer) []nemesis.Answer {
	out := make([]nemesis.Answer, 0, len(got))
	for _, a := range got {
		parts := make(map[int32]nemesis.PartitionView, len(a.Partitions))
		for p, st := range a.Partitions {
			parts[p] = nemesis.PartitionView{Leader: st.Leader, Epoch: st.Epoch, ISR: st.ISR}
		}
		out = append(out, nemesis.Answer{From: fmt.Sprintf("broker id %d", a.Broker), Partitions: parts})
	}
	return out
}

// workload records the history: the workload, the nemesis's schedule and
// the monitor, then the heal and the final phase.
func (r *run) workload(ctx context.Context, lc *Cluster, wcfg workload.Config, schedule nemesis.Schedule, tc *results.TestConfig) error {
	s := r.spec
	hw, err := history.Create(r.dir.Path(results.HistoryFile))
	if err != nil {
		return err
	}
	wstart := time.Now()
	rec := workload.NewRecorder(hw, wstart)
	leaders := func(ctx context.Context) (map[int32]int32, error) {
		return workload.Leaders(ctx, wcfg.Bootstrap, wcfg.Topic)
	}
	watch := workload.NewWatch(wcfg.Bootstrap, wcfg.Topic)
	defer watch.Close()
	// The workload, the monitor and the final phase run on one loop
	// (workload.Live), whose consumer group the client faults act on.
	wl, err := NewWorkload(wcfg)
	if err != nil {
		return err
	}
	live := workload.NewLive(wcfg, rec, wl)
	defer live.Close()
	nem := nemesis.New(nemesis.Config{
		Brokers: s.Nodes, Partitions: wcfg.Partitions, Seed: s.Seed,
		LagTimeMax:   time.Duration(s.Settings.ReplicaLagTimeMaxMs) * time.Millisecond,
		NoController: r.noController, Names: r.names, BrokerIDs: r.brokerIDs,
		Observe: func(ctx context.Context) ([]nemesis.Answer, error) {
			got, err := watch.Poll(ctx)
			return watched(got), err
		},
		Consumers: live.Consumers(), Clients: live.Clients(), Producers: live.Clients(),
	}, lc, lc.Net, leaders, rec)
	stopCrashes := r.watchCrashes(lc, nem)
	defer stopCrashes()
	// The monitor runs until the final reads are done, so the report
	// shows the cluster healing as well as breaking.
	if s.MonitorInterval > 0 {
		if err := live.StartMonitor(s.MonitorInterval, time.Second); err != nil {
			return err
		}
	}
	stopMonitor := sync.OnceValue(live.StopMonitor)
	defer stopMonitor()
	nemCtx, nemCancel := context.WithCancel(ctx)
	nemDone := make(chan error, 1)
	// A fault command that failed stops the workload at once (see
	// nemesis.Stopped): the clients' operations in flight end with it.
	wctx, stopWorkload := context.WithCancel(ctx)
	defer stopWorkload()
	go func() {
		err := nem.Run(nemCtx, wstart, schedule)
		if errors.As(err, new(*nemesis.Stopped)) {
			stopWorkload()
		}
		nemDone <- err
	}()
	done := func() {}
	if r.hooks.Workload != nil {
		done = r.hooks.Workload(&Status{rec: rec, nem: nem, Limit: s.TimeLimit})
	}
	runErr := live.Run(wctx)
	done()
	nemCancel()
	var stopped *nemesis.Stopped
	if err := <-nemDone; errors.As(err, &stopped) {
		r.hooks.log("%v; the window was healed and the workload stopped: the history so far is judged, without a final phase", err)
		tc.Stopped = err.Error()
		_ = r.dir.WriteJSON(results.TestFile, tc)
	} else if err != nil && runErr == nil {
		runErr = err
	}
	// Also without faults: nodes that crashed are restarted (HealAll
	// records nothing when nothing needs it).
	if ctx.Err() == nil {
		if err := nem.HealAll(ctx); err != nil {
			r.hooks.log("healing: %v", err)
		}
	}
	if runErr == nil && ctx.Err() == nil && stopped == nil {
		r.hooks.log("final phase: waiting up to %s for the cluster to converge", wcfg.ConvergeWait(s.ConvergeTimeout, rec.LastFault(), rec.Since()).Round(time.Second))
		var conv workload.Convergence
		conv, runErr = live.Final(ctx, s.ConvergeTimeout)
		if runErr == nil {
			if conv.Converged {
				r.hooks.log("converged after %s; final reads done", conv.Waited.Round(time.Millisecond))
			} else {
				r.hooks.log("did NOT converge within %s: %s", conv.Waited.Round(time.Millisecond), conv.Why)
			}
			tc.Convergence = StoredConvergence(conv)
			_ = r.dir.WriteJSON(results.TestFile, tc)
		}
	}
	if err := stopMonitor(); err != nil && runErr == nil {
		runErr = err
	}
	stopCrashes()
	if err := hw.Close(); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// commandsFor are the external runtime's actions the faults may run
// (their needs that a command supplies), for --check-commands.
func commandsFor(faults []string) []string {
	var out []string
	for _, f := range faults {
		k, ok := nemesis.Lookup(f)
		if !ok {
			continue
		}
		for _, nd := range k.Needs {
			a := nd
			if nd == external.Delay {
				a = external.Slow
			}
			if external.FlagOf(a) != "" && a != external.ControllerNode && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// watchCrashes has the nemesis record each node that dies on its own
// (where the runtime watches its nodes, cluster.CrashWatcher), and says
// so; the returned function stops it, before the history is closed.
func (r *run) watchCrashes(lc *Cluster, nem *nemesis.Nemesis) func() {
	name := cluster.NodeName
	if r.names != nil {
		name = r.names
	}
	lc.WatchCrashes(func(c cluster.Crash) {
		how := c.Exit
		if c.Panic != "" {
			how += ": panic: " + c.Panic
		}
		r.hooks.log("%s exited on its own (%s): recorded as a crash; the next heal restarts it", name(c.ID), how)
		if err := nem.RecordCrash(c); err != nil {
			r.hooks.log("recording the crash of %s: %v", name(c.ID), err)
		}
	})
	return sync.OnceFunc(func() { lc.WatchCrashes(nil) })
}

// judge reads the run's history back and judges it.
func (r *run) judge(tc results.TestConfig) error {
	o, err := Judge(r.dir, tc, r.hooks.Judging)
	r.out.Verdict, r.out.Results, r.out.Report, r.out.ReportErr = o.Verdict, o.Results, o.Report, o.ReportErr
	r.out.Detection = o.Detection
	return err
}

// Judge judges a stored run as its test.json says, writes results.json and
// the report, and returns the verdict: what is stored is what is checked,
// so "chaos check" on the run gives the same verdict. A history that cannot
// be read is an error, with a report that says what is damaged.
//
// The history is read as a stream, never held whole, so a run of hours
// is judged in the memory its index takes: the checkers' index and the
// recovery table in one reading, the first detection (when the run is
// invalid) and the report in others. show, if not nil, is told how far it
// has come (Options.Judging).
func Judge(dir *results.Run, tc results.TestConfig, show func(string)) (Outcome, error) {
	defer CollectTighter()()
	if show != nil {
		defer show("")
	}
	path := dir.Path(results.HistoryFile)
	b := checker.NewBuilder(tc.CheckerConfig())
	b.InFile(dir.Dir) // in the heap if no file can be made
	var rec results.RecoveryReader
	defer samplesInFile(&rec, dir.Dir)()
	_, err := scanShowing(path, b, rec.Add, show)
	if errors.Is(err, history.ErrTornTail) {
		err = nil
	}
	// The recovery table is made now: what it is made of is then no
	// longer referenced through the checks.
	var recovery []results.WindowRecovery
	if err == nil {
		recovery, err = results.RecoveriesFile(path, &rec)
	}
	if err != nil {
		// A report without a verdict still shows the readable prefix and
		// says what is damaged.
		o := Outcome{Dir: dir.Dir, Name: tc.Name, Seed: tc.Seed, ClusterID: tc.Cluster.ClusterID}
		o.Reported(dir, report.WriteRun(dir.Dir, nil))
		return o, err
	}
	detect := func(res *checker.Results) (checker.Detection, bool) {
		r := checker.NewDetector(res)
		if r == nil {
			return checker.Detection{}, false
		}
		// It reads no records: a long read's are streamed, and dropped.
		err := history.ScanReadsFile(path, func(op *history.Op) error { r.Add(op); return nil }, func(history.Key, bool, []history.Record) error { return nil })
		if err != nil && !errors.Is(err, history.ErrTornTail) {
			return checker.Detection{}, false
		}
		return r.Detection()
	}
	h := b.History()
	readDone(h)
	return judge(dir, tc, h, func() []results.WindowRecovery { return recovery }, detect, nil, show)
}

// JudgeOps is Judge of the ops the run's history.jsonl holds, given in
// memory by a caller that wrote them (history.Writer.Keep): the same
// results, without decoding the file again.
func JudgeOps(dir *results.Run, tc results.TestConfig, ops []history.Op, show func(string)) (Outcome, error) {
	recovery := func() []results.WindowRecovery { return results.Recoveries(ops) }
	detect := func(res *checker.Results) (checker.Detection, bool) { return checker.FirstDetection(ops, res) }
	return judge(dir, tc, checker.NewHistory(ops, tc.CheckerConfig()), recovery, detect, ops, show)
}

// judge is Judge of the history h indexes; ops is the history when the
// caller holds it, else the report reads the file.
func judge(dir *results.Run, tc results.TestConfig, h *checker.History, recovery func() []results.WindowRecovery,
	detect func(*checker.Results) (checker.Detection, bool), ops []history.Op, show func(string)) (Outcome, error) {
	o := Outcome{Dir: dir.Dir, Name: tc.Name, Seed: tc.Seed, ClusterID: tc.Cluster.ClusterID}
	written := func(err error) { o.Reported(dir, err) }
	// A visualization left by a chaos check of the run while it was
	// running is not this verdict's.
	os.Remove(dir.Path(results.LinearizabilityFile))
	opts := checker.Options{VisualizationPath: dir.Path(results.LinearizabilityFile)}
	if show != nil {
		defer show("")
		show("judging")
		opts.Progress = func(step string) { show("judging: " + step) }
	}
	res := checker.CheckHistory(h, opts)
	// The index's file takes space in the store's file system: given
	// back before results.json and the report are written there.
	h.Close()
	stored := results.StoredResults{Results: storedResults(dir, res), Recovery: recovery()}
	if err := dir.WriteJSON(results.ResultsFile, stored); err != nil {
		written(report.WriteRun(dir.Dir, nil))
		return o, err
	}
	o.Verdict, o.Results = res.Valid, res
	if len(res.Unexpected) > 0 {
		if show != nil {
			show("finding the first operation that shows an anomaly")
		}
		if d, ok := detect(res); ok {
			o.Detection = &d
		}
	}
	var reading func(string)
	if show != nil {
		show("writing the report")
		reading = func(step string) { show("writing the report: " + step) }
	}
	written(report.WriteJudgedRun(dir.Dir, tc, res, ops, reading))
	return o, nil
}

// storedResults is res as results.json holds it: the files the checkers
// wrote named relative to the run's directory, so that the store can move
// and a replayed run (package sim) stores the same bytes. res itself keeps
// the paths a caller can open.
func storedResults(dir *results.Run, res *checker.Results) *checker.Results {
	out := *res
	out.Results = slices.Clone(res.Results)
	for i, r := range out.Results {
		if len(r.Artifacts) == 0 {
			continue
		}
		arts := make([]string, len(r.Artifacts))
		for j, a := range r.Artifacts {
			arts[j] = a
			if rel, err := filepath.Rel(dir.Dir, a); err == nil && filepath.IsLocal(rel) {
				arts[j] = rel
			}
		}
		out.Results[i].Artifacts = arts
	}
	return &out
}

func (r *run) report(err error) { r.out.Reported(r.dir, err) }

// Reported records how writing dir's report went: its path, or why it
// could not be written (the verdict stands either way).
func (o *Outcome) Reported(dir *results.Run, err error) {
	if err != nil {
		o.ReportErr = err.Error()
		return
	}
	o.Report = dir.Path(results.ReportFile)
}

func (r *run) version() string {
	if v := r.hooks.Version; v != "" {
		return v
	}
	return "dev"
}

// keptLogs says where a run that could not start its cluster keeps the
// node logs that say why, or removes the run's directory when nothing was
// written there, and says so: a refused run leaves no empty run behind.
func keptLogs(run *results.Run) string {
	if err := os.Remove(run.Path("cluster")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf(" (node logs in %s)", run.Path("cluster"))
	}
	// Each only if empty: the test's directory may hold other runs.
	if os.Remove(run.Dir) != nil {
		return ""
	}
	_ = os.Remove(filepath.Dir(run.Dir))
	// The run's directory was printed when it was made.
	return fmt.Sprintf(" (nothing stored: %s is removed)", run.Dir)
}
