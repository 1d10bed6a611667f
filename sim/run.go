package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/workload"
)

// Run runs spec in simulation and judges it, as runner.Run runs it on a
// real cluster: the same store layout (test.json says runtime sim and the
// command that replays the run), history, results and report, and the
// same Outcome. The run takes what its events take, not its time limit.
// Of opts, Version, Started and Log are used (a simulated run is too
// quick to watch). A ctx that ends stops the simulation: the outcome is
// interrupted, with the history so far.
func Run(ctx context.Context, spec runner.Spec, opts runner.Options) (runner.Outcome, error) {
	if spec.Runtime == "" {
		spec.Runtime = runner.RuntimeSim
	}
	if err := Validate(spec); err != nil {
		return runner.Outcome{}, err
	}
	spec = spec.Normalized()
	if spec.Seed == 0 {
		spec.Seed = runner.RandomSeed()
		if len(spec.Command) > 0 {
			spec.Command = append(spec.Command, "--seed", formatSeed(spec.Seed))
		}
	}
	dir, err := newRunDir(spec.Store, spec.Name)
	if err != nil {
		return runner.Outcome{}, err
	}
	// The id names the cluster in its metadata; a simulated cluster needs
	// no random one to tell it from another on the same ports.
	clusterID := fmt.Sprintf("sim-%016x", spec.Seed)
	out := runner.Outcome{Dir: dir.Dir, Name: spec.Name, Seed: spec.Seed, ClusterID: clusterID}
	if opts.Started != nil {
		opts.Started(dir.Dir, spec.Seed, clusterID)
	}
	if n := spec.CoverageNote(); n != "" && opts.Log != nil {
		opts.Log("%s", n)
	}
	fail := func(err error) (runner.Outcome, error) {
		out.Error = err.Error()
		return out, err
	}
	tc, ops, err := simulate(ctx, spec, dir, clusterID, opts)
	switch {
	case ctx.Err() != nil:
		logf(opts, "interrupted: the history so far is in %s", dir.Path(results.HistoryFile))
		out.Interrupted = true
		out.Reported(dir, report.WriteRun(dir.Dir, nil))
		return out, nil
	case err != nil:
		out.Reported(dir, report.WriteRun(dir.Dir, nil))
		return fail(fmt.Errorf("simulation: %w (history so far in %s)", err, dir.Path(results.HistoryFile)))
	}
	// The ops as written, not read back: a third less time per run, and
	// the same results (TestJudgedFromMemoryAsFromFile). A history too
	// long to hold is read back as a stream.
	var o runner.Outcome
	if ops != nil {
		o, err = runner.JudgeOps(dir, tc, ops, opts.Judging)
	} else {
		o, err = runner.Judge(dir, tc, opts.Judging)
	}
	out.Verdict, out.Results, out.Report, out.ReportErr = o.Verdict, o.Results, o.Report, o.ReportErr
	out.Detection = o.Detection
	if err != nil {
		return fail(err)
	}
	return out, nil
}

func logf(opts runner.Options, format string, args ...any) {
	if opts.Log != nil {
		opts.Log(format, args...)
	}
}

// simulate runs the test into dir (test.json and history.jsonl) and
// returns the test's configuration as stored, with how the final phase
// found the cluster, and the history's ops.
func simulate(ctx context.Context, spec runner.Spec, dir *results.Run, clusterID string, opts runner.Options) (results.TestConfig, []history.Op, error) {
	// The simulated brokers' logs only grow: a long simulation's garbage
	// is bounded as a judge's is.
	defer runner.CollectForSimulation()()
	// The brokers' full log chunks go to a file in the run's directory:
	// an hours-long simulation's memory would otherwise hold every record
	// written (storage.Spill).
	spill, err := storage.NewSpill(dir.Dir)
	if err != nil {
		return results.TestConfig{}, nil, err
	}
	defer spill.Close()
	w, err := newSimWorld(spec, clusterID, opts.NodeLog, spill)
	if err != nil {
		return results.TestConfig{}, nil, err
	}
	cfg := spec.WorkloadConfig(w.bootstrap())
	delays := ""
	if nemesis.NeedsNetwork(spec.Faults) {
		delays = runner.RuntimeSim
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	tc := spec.TestConfig(time.Now(), version, clusterID, delays, cfg)
	tc.Cluster.Invariants = true
	if err := dir.WriteJSON(results.TestFile, tc); err != nil {
		return tc, nil, err
	}
	if err := markLatest(dir); err != nil {
		return tc, nil, err
	}
	hw, err := history.CreateBuffered(dir.Path(results.HistoryFile))
	if err != nil {
		return tc, nil, err
	}
	hw.Keep(keepOps)
	wl, err := runner.NewWorkload(cfg)
	if err != nil {
		return tc, nil, err
	}
	s := &simulation{ctx: ctx, spec: spec, w: w, cfg: cfg, opts: opts}
	s.rec = workload.NewRecorderClock(hw, w.now)
	s.phases = workload.NewPhases(w, cfg, s.rec, wl)
	err = s.run()
	if simulated != nil {
		simulated()
	}
	if cerr := hw.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err == nil {
		// A log that could not read its own bytes back served errors
		// the system never made: what followed is not the system's.
		err = spill.Err()
	}
	if err != nil || ctx.Err() != nil {
		return tc, nil, err
	}
	tc.Convergence = runner.StoredConvergence(s.conv)
	return tc, hw.Kept(), dir.WriteJSON(results.TestFile, tc)
}

// simulated, when set, is called once a simulation's events are over,
// with its cluster still held: a test measures what it holds then.
var simulated func()

// keepOps is how many operations a simulation holds for its judge (about
// 90 s of the default test's, past a hunt's longest): a longer one's are
// read back from its history as a stream, so an hours-long simulation's
// memory does not follow its history. Held, they save a short
// simulation's judge a tenth of its time (0.28 against 0.35 s at 10 s,
// 1.1 against 1.2 at 45 s); at 90 s the two were even, and at 5 minutes
// streaming was the faster (6.0-6.3 against 7.1-7.5 s) in a quarter of the
// memory (86 against 330-380 MB). Every longer simulation held this many
// until it knew it must stream: with 500,000, 0.3-0.4 GB.
var keepOps = 100_000

func newSimWorld(spec runner.Spec, clusterID string, nodeLog func(int32, string), spill *storage.Spill) (*world, error) {
	opts, err := clusterOptions(spec, clusterID)
	if err != nil {
		return nil, err
	}
	opts.OnLog, opts.Spill = nodeLog, spill
	return newWorld(spec, opts), nil
}

// simulation is one simulated test, from the topic's creation to the last
// final read: every part of it is a chain of events on w's clock.
type simulation struct {
	ctx  context.Context
	spec runner.Spec
	w    *world
	cfg  workload.Config
	opts runner.Options
	rec  *workload.Recorder

	// phases are the workload's: the workers, the monitor and the final
	// phase, driven by w's events.
	phases *workload.Phases
	nem    *nemDriver
	conv   workload.Convergence

	finished bool
	err      error
}

// How long topic creation may take, and the spare virtual time past the
// workload and the final phase's convergence wait after which a
// simulation that has not finished is a bug, not a slow cluster.
const (
	setupTimeout = 30 * time.Second
	spareTime    = 10 * time.Minute
)

// run runs the event loop until the last final read, an error, or the
// end of ctx (checked every few thousand events: a simulated second
// takes milliseconds).
func (s *simulation) run() error {
	s.w.c.After(0, s.createTopic)
	budget := int64((setupTimeout + s.spec.TimeLimit + s.spec.ConvergeTimeout + spareTime) / time.Millisecond)
	events, interrupted := 0, false
	stop := func() bool {
		if events++; events%4096 == 0 && s.ctx.Err() != nil {
			interrupted = true
		}
		return interrupted || s.finished || s.err != nil || s.phases.Err() != nil
	}
	for !stop() {
		if s.w.c.Now() > budget {
			return fmt.Errorf("the simulation did not finish within %s of virtual time", time.Duration(budget)*time.Millisecond)
		}
		s.w.c.RunUntil(10_000, stop)
	}
	if interrupted && s.nem != nil && s.err == nil {
		// Interrupted: as in a real run, the open window still gets its
		// stop, so that no fault is without its end.
		s.err = s.nem.stop()
	}
	if s.err == nil {
		s.err = s.phases.Err()
	}
	return s.err
}

// createTopic creates the test's topic as workload.CreateTopic does (once
// the brokers have registered: an attempt refused for too few brokers is
// tried again) and starts the workload once every partition has a leader
// and a full ISR. A real run then checks, through the protocol, that the
// cluster and the topic are the ones it asked for, against another
// cluster on its ports; a simulated cluster is the simulation's own.
func (s *simulation) createTopic() {
	st := s.spec.Settings
	spec := workload.TopicSpec{Name: s.cfg.Topic, Partitions: s.cfg.Partitions, ReplicationFactor: st.ReplicationFactor,
		MinInsyncReplicas: st.MinInsyncReplicas, Unclean: st.Election == "unclean", ELR: st.Election == "elr"}
	admin := workload.NewClient(s.w, s.cfg.Bootstrap, workload.ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	deadline := s.w.now() + setupTimeout
	mayExist := false // an attempt whose answer was lost may have created it
	var attempt, ready func()
	retry := func(what string, next func(), err error) {
		if s.w.now() >= deadline {
			s.err = fmt.Errorf("%s %s: %w", what, spec.Name, err)
			return
		}
		s.w.after(200*time.Millisecond, next)
	}
	attempt = func() {
		admin.CreateTopic(spec, setupTimeout, func(err error) {
			var ke *kerr.Error
			switch {
			case err == nil, errors.Is(err, kerr.TopicAlreadyExists) && mayExist:
				ready()
			case errors.Is(err, kerr.TopicAlreadyExists):
				s.err = fmt.Errorf("create topic %s: it already exists", spec.Name)
			default:
				if !errors.Is(err, workload.ErrNotSent) && (!errors.As(err, &ke) || ke == kerr.RequestTimedOut) {
					mayExist = true
				}
				retry("create topic", attempt, err)
			}
		})
	}
	var md workload.Metadata
	ready = func() {
		admin.Converged(spec.Name, spec.Partitions, &md, func(why string) {
			if why == "" {
				s.startWorkload()
				return
			}
			retry("topic not ready", ready, errors.New(why))
		})
	}
	attempt()
}

// startWorkload starts the clock of the history and everything the
// workload runs alongside: the monitor, the nemesis's schedule, and each
// worker of the generator.
func (s *simulation) startWorkload() {
	s.w.t0 = s.w.c.Now()
	if s.spec.MonitorInterval > 0 {
		s.phases.StartMonitor(s.spec.MonitorInterval, time.Second)
	}
	s.nem = newNemDriver(s)
	s.watchCrashes()
	s.watchViolations()
	s.nem.start()
	s.phases.StartWorkers(s.workloadDone)
}

// workloadDone: every worker has stopped. As a real run does, the
// nemesis stops (a window still open is closed early), every fault still
// in effect is healed and every node that crashed restarted (in a run
// without faults too: HealAll records nothing when nothing needs it), and
// the final phase begins; once its reads are done the monitor stops.
func (s *simulation) workloadDone() {
	if err := s.nem.stop(); err != nil {
		s.err = err
		return
	}
	if err := s.nem.nem.HealAll(context.Background()); err != nil {
		logf(s.opts, "healing: %v", err)
	}
	logf(s.opts, "final phase: waiting up to %s for the cluster to converge",
		s.cfg.ConvergeWait(s.spec.ConvergeTimeout, s.rec.LastFault(), s.w.now()))
	s.phases.Final(s.spec.ConvergeTimeout, func(conv workload.Convergence) {
		s.conv = conv
		s.phases.StopMonitor()
		if conv.Converged {
			logf(s.opts, "converged after %s; final reads done", conv.Waited)
		} else {
			logf(s.opts, "did NOT converge within %s: %s", conv.Waited, conv.Why)
		}
		s.finished = true
	})
}

func formatSeed(seed uint64) string { return strconv.FormatUint(seed, 10) }
