package runner

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
)

// RuntimeUsage is --runtime's help: where the cluster runs (docs/docker.md
// for the docker runtime).
const RuntimeUsage = "where the cluster runs: local (child processes on 127.0.0.1) or docker (a container per node; needs a Docker engine)"

// RunRuntimeUsage is chaos run's and campaign's --runtime help: they also
// test a cluster they did not start.
const RunRuntimeUsage = RuntimeUsage + "; or external (a cluster you run, at --bootstrap, faulted by your --*-cmd commands)"

// Flags are chaos run's flags, which chaos sim takes too. Register binds
// them to a command's flag set (as klog.InitFlags does klog's), so that
// the command holds no copy of them; Spec checks them flag by flag and
// makes the Spec they give.
type Flags struct {
	Name, Store, Runtime, Acks, Nemesis string
	// Schedule is --schedule, FAULT@START+LENGTH,...: the windows
	// themselves, for chaos run and sim (RegisterSchedule; a campaign's
	// cells draw theirs).
	Schedule                                                                      string
	Nodes, BasePort, Concurrency, Consumers, NemesisOverlap, Retries, MaxInFlight int
	SubVia, Workload                                                              string
	Rate                                                                          float64
	TimeLimit, NemesisInterval, RequestTimeout, ConvergeTimeout, MonitorInterval  time.Duration
	LivenessBound                                                                 time.Duration
	Seed                                                                          uint64
	Idempotent, Quiet, AllowPartialSchedule                                       bool
	Replication                                                                   node.Replication
	Topics                                                                        node.Topics
	Bugs                                                                          []string
	// External are the external runtime's flags, which chaos run and
	// campaign register (RegisterExternal) and chaos sim does not.
	External ExternalFlags
	// Given says whether the flag of that name was on the command line
	// (Register takes it from the flag set; nil: none was): a nemesis
	// interval not given is chosen to fit the kinds (FitSchedule).
	Given func(name string) bool
	// Value is a flag's value as given, for refusals that quote it.
	Value func(name string) string
}

func (f Flags) given(name string) bool { return f.Given != nil && f.Given(name) }

// Register defines chaos run's flags on fs, with their defaults.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Name, "name", "", "test name (default: from the configuration, e.g. acksall_isr2_clean_none for acks=-1)")
	fs.StringVar(&f.Store, "store", "store", "the result store directory")
	fs.IntVar(&f.Nodes, "nodes", 3, "number of brokers")
	fs.IntVar(&f.BasePort, "base-port", 0, "broker i listens on base-port+i-1, the controller on base-port-1 (default: free ports)")
	fs.StringVar(&f.Runtime, "runtime", RuntimeLocal, RunRuntimeUsage)
	fs.StringVar(&f.Acks, "acks", "-1", "producer acks: 0, 1, or -1 (also 'all')")
	fs.IntVar(&f.Concurrency, "concurrency", 5, "producers (sessions), one request in flight each unless --max-in-flight")
	fs.IntVar(&f.Consumers, "consumers", -1, "consumer processes (default: one per partition)")
	fs.Float64Var(&f.Rate, "rate", 500, "target sends per second across all producers (0: as fast as they go)")
	fs.DurationVar(&f.TimeLimit, "time-limit", 60*time.Second, "how long the workload runs")
	fs.Uint64Var(&f.Seed, "seed", 0, "random seed for the workload's choices (default: random, printed and stored)")
	fs.StringVar(&f.Nemesis, "nemesis", "none", "faults to inject, a comma list: "+strings.Join(nemesis.Names(), ", ")+"; or none. A leader-aimed kind armed on an event fires a delay after it, at the broker the event names: "+nemesis.TriggerSyntax+" (docs/faults.md)")
	fs.DurationVar(&f.NemesisInterval, "nemesis-interval", DefaultNemesisInterval, "quiet period between fault windows, and a window's length (each ±25%, seeded); when not given, 10s, or if that has no room for a window of each --nemesis kind in --time-limit, the longest that has (at least 1s, in steps of 100ms; the run prints it)")
	fs.BoolVar(&f.AllowPartialSchedule, "allow-partial-schedule", false, "run even if the schedule has no room for a window of each --nemesis kind (refused otherwise: the run would test fewer kinds than it names); the run says which kinds get none")
	fs.IntVar(&f.NemesisOverlap, "nemesis-overlap", 1, "up to this many fault kinds overlap in a window (1-3): about half the windows start further kinds of the list while the first holds, all healed at the window's end")
	fs.DurationVar(&f.RequestTimeout, "request-timeout", 5*time.Second, "produce request timeout sent to brokers")
	fs.IntVar(&f.Retries, "retries", 0, "times a producer sends a batch again after a retriable error (0: never; above 0, duplicates are permitted unless --idempotent)")
	fs.BoolVar(&f.Idempotent, "idempotent", false, "idempotent producers (KIP-98: a producer id and sequence numbers, so a broker writes a retry once; duplicates are then forbidden)")
	fs.StringVar(&f.Workload, "workload", DefaultWorkload, "the workload: "+WorkloadDocs())
	fs.StringVar(&f.SubVia, "sub-via", results.SubViaAssign, "how the consumers read: assign (each polls partitions of its own) or subscribe (they are the members of one consumer group, which the brokers' coordinator balances, and commit what they read)")
	fs.IntVar(&f.MaxInFlight, "max-in-flight", 1, "produce requests each producer may have outstanding (max.in.flight.requests.per.connection; at most 5 with --idempotent; above 1 without it, reordering is permitted)")
	fs.DurationVar(&f.ConvergeTimeout, "converge-timeout", 60*time.Second, "how long the final phase waits for every replica to be back in the ISR")
	fs.DurationVar(&f.LivenessBound, "liveness-bound", 0, "how long after the last heal the cluster may take to converge (a leader and a full ISR for every partition) and serve sends and reads again before the liveness checks call it stuck; the final phase waits and tries at least this long (default: 3x the longer of --session-timeout-ms and --replica-lag-time-max-ms, at least 10s)")
	fs.DurationVar(&f.MonitorInterval, "monitor-interval", 250*time.Millisecond, "how often the monitor samples each partition's leader, ISR and HW into the history, for the report and the ack-below-min-isr check (0: off; that check then cannot be made)")
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress display")
	ReplicationFlags(fs, &f.Replication)
	TopicFlags(fs, &f.Topics)
	BugFlag(fs, &f.Bugs)
	// A test's topics need two in-sync replicas unless told otherwise. Set
	// as the value, not with fs.Set, which would mark the flag as given on
	// the command line.
	fs.Lookup("min-insync-replicas").DefValue = "2"
	f.Topics.MinInsyncReplicas = 2
	f.Given = fs.Changed
	f.Value = func(name string) string {
		if fl := fs.Lookup(name); fl != nil {
			return fl.Value.String()
		}
		return ""
	}
}

// ScheduleUsage is --schedule's help.
const ScheduleUsage = "the fault windows themselves, in place of --nemesis's seeded schedule: FAULT@START+LENGTH,..., e.g. kill@5s+4s,partition@12s+5s; FAULT may be armed on an event, e.g. kill-leader:leader-change~5ms@9s+3s; a network window may overlap process ones (lanes, docs/faults.md)"

// RegisterSchedule defines --schedule on fs: chaos run and sim take a
// schedule window by window (what chaos hunt prints for a finding), a
// campaign does not (its cells' schedules are seeded).
func (f *Flags) RegisterSchedule(fs *pflag.FlagSet) {
	fs.StringVar(&f.Schedule, "schedule", "", ScheduleUsage)
}

const scheduleAccepted = "FAULT@START+LENGTH windows, comma-separated, in order, e.g. kill@5s+4s,partition@12s+5s"

// ApplySchedule puts --schedule into s: its windows replace the seeded
// schedule of --nemesis and --nemesis-interval, which cannot be given
// with it.
func (f Flags) ApplySchedule(s *Spec) error {
	if !f.given("schedule") {
		return nil
	}
	for _, other := range []string{"nemesis", "nemesis-interval", "nemesis-overlap", "allow-partial-schedule"} {
		if f.given(other) {
			return cli.Error(other, f.valueOf(other), "given with --schedule", "the schedule names its windows' faults and times: leave --"+other+" out")
		}
	}
	w, err := nemesis.ParseSchedule(f.Schedule)
	if err == nil {
		err = w.Check(s.TimeLimit)
	}
	if err != nil {
		return cli.Error("schedule", f.Schedule, strings.ReplaceAll(err.Error(), "\n", "; "), scheduleAccepted+", ending by --time-limit")
	}
	s.Windows, s.Faults, s.NemesisInterval = w, nil, 0
	return nil
}

// valueOf is the value flag name was given, as the command line spelled
// it ("" when the flags were not registered on a flag set).
func (f Flags) valueOf(name string) string {
	if f.Value == nil {
		return ""
	}
	return f.Value(name)
}

// Spec checks every flag, naming a bad one, and returns the Spec they
// give, with the nemesis interval chosen if none was given (FitSchedule),
// validated: a combination Validate refuses (e.g. a schedule with no
// window) is said in the flags' words (FlagCombination).
func (f Flags) Spec() (Spec, error) {
	s, err := f.Checked()
	if err != nil {
		return Spec{}, err
	}
	if err := f.FitSchedule(&s); err != nil {
		return Spec{}, err
	}
	if err := s.Validate(); err != nil {
		return Spec{}, FlagCombination(err)
	}
	return s, nil
}

// Checked checks every flag one by one (ParseAcks, ParseFaults,
// Spec.CheckFlags), so that a refusal names the flag, and returns the
// Spec they give, with the command line that gave them, not yet
// validated as a whole: chaos sim validates it as a simulation.
func (f Flags) Checked() (Spec, error) {
	acks, err := ParseAcks(f.Acks)
	if err != nil {
		return Spec{}, err
	}
	faults, err := ParseFaults(f.Nemesis)
	if err != nil {
		return Spec{}, err
	}
	s := f.SpecOf(acks, faults)
	if err := f.ApplySchedule(&s); err != nil {
		return Spec{}, err
	}
	if err := f.External.apply(&s); err != nil {
		return Spec{}, err
	}
	return s, s.CheckFlags(f.Replication, f.Topics, f.Bugs)
}

// FitSchedule applies FitSchedule to s, the spec of the flags, with
// --nemesis-interval given or not: chaos run and chaos sim (once its
// --schedule is in s) fit their schedules alike.
func (f Flags) FitSchedule(s *Spec) error {
	return FitSchedule(s, f.given("nemesis-interval"))
}

// SpecOf is the Spec of the flags with the acks and faults given, unchecked:
// a campaign's base spec, whose acks and faults are its cells'.
func (f Flags) SpecOf(acks int16, faults []string) Spec {
	s := DefaultSpec()
	s.Name, s.Store, s.Seed, s.Runtime, s.Nodes, s.BasePort = f.Name, f.Store, f.Seed, f.Runtime, f.Nodes, f.BasePort
	s.Settings = NodeSettings(f.Replication, f.Topics, f.Bugs)
	s.Acks, s.Concurrency, s.Consumers, s.Rate = acks, f.Concurrency, f.Consumers, f.Rate
	s.TimeLimit, s.RequestTimeout = f.TimeLimit, f.RequestTimeout
	s.Retries, s.Idempotent, s.MaxInFlight = f.Retries, f.Idempotent, f.MaxInFlight
	if f.SubVia != results.SubViaAssign {
		s.SubVia = f.SubVia // assign, the default, is the spec's zero
	}
	if f.Workload != DefaultWorkload {
		s.Workload = f.Workload // queue, the default, is the spec's zero
	}
	s.Faults, s.NemesisInterval, s.AllowPartialSchedule = faults, f.NemesisInterval, f.AllowPartialSchedule
	if f.NemesisOverlap != 1 {
		s.NemesisOverlap = f.NemesisOverlap // 1, one fault at a time, is the spec's zero
	}
	s.ConvergeTimeout, s.MonitorInterval, s.LivenessBound = f.ConvergeTimeout, f.MonitorInterval, f.LivenessBound
	s.Command = os.Args
	return s
}

// ReplicationFlags defines the brokers' settings on fs, as chaos broker,
// chaos cluster up and chaos run take them, with the brokers' defaults.
func ReplicationFlags(fs *pflag.FlagSet, r *node.Replication) {
	d := cluster.DefaultSettings()
	fs.Int64Var(&r.ReplicaLagTimeMaxMs, "replica-lag-time-max-ms", d.ReplicaLagTimeMaxMs, "a follower not caught up with the leader for this long leaves the ISR")
	fs.Int64Var(&r.ReplicaLagMaxMessages, "replica-lag-max-messages", d.ReplicaLagMaxMessages, "a follower this many messages behind the leader leaves the ISR (0 disables the rule)")
	fs.Int32Var(&r.ReplicaFetchWaitMaxMs, "replica-fetch-wait-max-ms", d.ReplicaFetchWaitMaxMs, "how long a follower's fetch waits at the leader for new data")
	fs.Int64Var(&r.HeartbeatIntervalMs, "heartbeat-interval-ms", d.HeartbeatIntervalMs, "how often a broker heartbeats to the controller")
	fs.StringVar(&r.Fsync, "fsync", d.Fsync, "fsync policy: never (rely on replication, Kafka's default), always, or interval:DURATION (e.g. interval:100ms)")
	fs.BoolVar(&r.LoseUnsynced, "lose-unsynced", false, "keep unsynced writes in process memory so that a kill -9 loses them (simulates power loss)")
	fs.BoolVar(&r.NoAutoCreateTopics, "no-auto-create-topics", false, "do not create unknown topics named in Metadata requests")
}

// TopicFlags defines the controller's topic defaults on fs, as chaos
// controller, chaos cluster up and chaos run take them.
func TopicFlags(fs *pflag.FlagSet, t *node.Topics) {
	d := cluster.DefaultSettings()
	fs.Int64Var(&t.SessionTimeoutMs, "session-timeout-ms", d.SessionTimeoutMs, "a broker without a heartbeat for this long is fenced and loses its leaderships")
	fs.Int32Var(&t.Partitions, "partitions", d.Partitions, "partitions of auto-created topics and of CreateTopics without a count")
	fs.Int16Var(&t.ReplicationFactor, "replication-factor", d.ReplicationFactor, "replication factor of auto-created topics")
	fs.Int32Var(&t.MinInsyncReplicas, "min-insync-replicas", d.MinInsyncReplicas, "min.insync.replicas of new topics (acks=-1 writes need this many in-sync replicas)")
	fs.StringVar(&t.Election, "election", d.Election, "leader election policy of new topics: clean (only an in-sync replica), unclean (the first live replica) or elr (KIP-966: an in-sync replica, else an eligible one that left the ISR below min.insync.replicas)")
}

// BugFlag defines --bug on fs: bugs planted on purpose (package bug), one
// list that every node of a cluster is given and takes its own bugs from.
func BugFlag(fs *pflag.FlagSet, bugs *[]string) {
	fs.StringSliceVar(bugs, "bug", nil,
		"plant bug NAME on purpose (repeatable, or NAME,NAME; chaos bugs lists them); a node takes the bugs that live in it and ignores the others")
}
