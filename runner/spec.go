package runner

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// Spec is one test: everything Run needs, as data. It travels as JSON to a
// campaign's child processes, so it holds no functions.
type Spec struct {
	// Name is the test's name in the store; empty: DefaultName.
	Name string `json:"name,omitempty"`
	// Store is the result store's directory.
	Store string `json:"store"`
	// Seed drives the workload's and the nemesis's choices; 0 draws one
	// at random (reported in the Outcome and stored in test.json).
	Seed uint64 `json:"seed,omitempty"`
	// Runtime is where the cluster runs: RuntimeLocal or RuntimeDocker;
	// RuntimeExternal tests the cluster External names.
	Runtime string `json:"runtime"`
	// External is the cluster of the external runtime: where to reach
	// it, and the commands that fault it.
	External *External `json:"external,omitempty"`
	// Nodes is the number of brokers.
	Nodes int `json:"nodes"`
	// BasePort puts broker i at BasePort+i-1 and the controller at
	// BasePort-1; 0 picks free ports.
	BasePort int `json:"base_port,omitempty"`
	// Settings are the brokers' and the controller's; the topic gets
	// their partitions, replication factor, min.insync.replicas and
	// election.
	Settings cluster.Settings `json:"settings"`

	// The workload.
	Acks        int16 `json:"acks"`
	Concurrency int   `json:"concurrency"`
	// Consumers is the number of consumer processes; -1: one per
	// partition.
	Consumers      int           `json:"consumers"`
	Rate           float64       `json:"rate"`
	TimeLimit      time.Duration `json:"time_limit"`
	RequestTimeout time.Duration `json:"request_timeout"`
	// Retries is how many times a producer sends a batch again after a
	// retriable error; Idempotent gives producers a producer id and
	// sequence numbers (KIP-98), so that brokers write a retry once.
	Retries    int  `json:"retries,omitempty"`
	Idempotent bool `json:"idempotent,omitempty"`
	// MaxInFlight is how many produce requests each producer session may
	// have outstanding (0 is 1): with more than one, a session is that
	// many lanes sharing a producer id and connections.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// SubVia is how the consumers read: assign (""), each its own
	// partitions, or subscribe, as members of one consumer group.
	SubVia string `json:"sub_via,omitempty"`
	// Workload is the workload's kind (Workloads): "" is queue.
	Workload string `json:"workload,omitempty"`

	// The nemesis: fault kinds (registry names) and the length of quiet
	// periods and windows.
	Faults          []string      `json:"faults,omitempty"`
	NemesisInterval time.Duration `json:"nemesis_interval,omitempty"`
	// NemesisOverlap, above 1, lets that many kinds overlap in a window
	// (nemesis.Schedule.Overlap); 0 or 1: one fault at a time.
	NemesisOverlap int `json:"nemesis_overlap,omitempty"`
	// NemesisIntervalChosen: NemesisInterval was not given but chosen for
	// the kinds of Faults and the time limit (ChooseNemesisInterval).
	NemesisIntervalChosen bool `json:"nemesis_interval_chosen,omitempty"`
	// AllowPartialSchedule lets a schedule leave kinds of Faults without
	// a window (chaos run --allow-partial-schedule), which FitSchedule
	// refuses otherwise; the run says which before it starts, and is
	// judged by the kinds that ran.
	AllowPartialSchedule bool `json:"allow_partial_schedule,omitempty"`
	// Windows, when not empty, is the fault schedule itself, in place of
	// the one drawn from the seed, Faults and NemesisInterval: the windows
	// a shrunk run kept, or a real run's planned windows replayed in
	// simulation. The seed still drives every other choice (the targets
	// of each window among them). Faults must then be empty or the
	// windows' kinds, which Normalized fills in.
	Windows nemesis.Schedule `json:"windows,omitempty"`

	// ConvergeTimeout bounds the final phase's wait for every replica to
	// be back in the ISR; MonitorInterval is how often the monitor
	// samples (0: no monitor).
	ConvergeTimeout time.Duration `json:"converge_timeout"`
	MonitorInterval time.Duration `json:"monitor_interval"`
	// LivenessBound is how long after the last heal the cluster has to
	// converge (a leader and a full ISR for every partition) and serve
	// sends and reads again before the liveness checks call it stuck; 0:
	// DefaultLivenessBound of the settings (Normalized fills it in).
	LivenessBound time.Duration `json:"liveness_bound,omitempty"`

	// Command is what test.json records as the command that replays the
	// run (the seed is added to it when it was drawn at random).
	Command []string `json:"command,omitempty"`
	// Binary is the chaos binary the local runtime starts nodes with;
	// empty: this executable (the docker runtime builds its image from
	// it too).
	Binary string `json:"binary,omitempty"`
}

// DefaultSpec is chaos run's defaults: 3 brokers, acks=-1,
// min.insync.replicas=2, clean election, 5 producers at 500 sends/s, one
// consumer per partition, 60 s, no faults.
func DefaultSpec() Spec {
	s := cluster.DefaultSettings()
	s.MinInsyncReplicas = 2
	return Spec{
		Store: "store", Runtime: RuntimeLocal, Nodes: 3, Settings: s,
		Acks: -1, Concurrency: 5, Consumers: -1, Rate: 500, TimeLimit: 60 * time.Second, RequestTimeout: 5 * time.Second, MaxInFlight: 1,
		NemesisInterval: DefaultNemesisInterval, ConvergeTimeout: 60 * time.Second, MonitorInterval: 250 * time.Millisecond,
	}
}

// maxFaultsInName is the longest fault list a default name spells out.
const maxFaultsInName = 100

// DefaultName names a test by what it tests, e.g. acksall_isr2_clean_kill
// (acks -1 reads as "all": "acks-1" read as acks=1 at a glance).
func (s Spec) DefaultName() string {
	acks := fmt.Sprint(s.Acks)
	if s.Acks < 0 {
		acks = "all"
	}
	nem := "none"
	if len(s.Faults) > 0 {
		// A composite's parts start in turn: "a-then-b" tells it from
		// the list a,b.
		var kinds []string
		for _, f := range s.Faults {
			kinds = append(kinds, strings.ReplaceAll(f, "+", "-then-"))
		}
		nem = strings.Join(kinds, "+")
		if s.NemesisOverlap > 1 {
			nem += fmt.Sprintf("_overlap%d", s.NemesisOverlap)
		}
	}
	if len(nem) > maxFaultsInName {
		// Every kind at once would make a directory name longer than a
		// file system takes; test.json keeps the list.
		h := fnv.New32a()
		h.Write([]byte(nem))
		nem = fmt.Sprintf("%d-faults-%08x", len(s.Faults), h.Sum32())
	}
	name := fmt.Sprintf("acks%s_isr%d_%s_%s", acks, s.Settings.MinInsyncReplicas, s.Settings.Election, nem)
	if s.Retries > 0 {
		// Retries change what is promised (duplicates), idempotence
		// changes it back: each is a test of its own.
		name += fmt.Sprintf("_retries%d", s.Retries)
	}
	if s.Idempotent {
		name += "_idempotent"
	}
	if s.InFlight() > 1 {
		// Several requests in flight permit reordering without
		// idempotence, and test the sequence checks with it.
		name += fmt.Sprintf("_inflight%d", s.InFlight())
	}
	for _, b := range s.Settings.Bugs {
		// A run with a planted bug is not the same test as one without.
		name += "_bug-" + b
	}
	return name
}

// CoverageNote says, before the run starts, which fault kinds its
// schedule gives no window and how long a run needs for every kind to get
// one; "" when each has one (or the windows were given). A run that
// tested fewer kinds than it names must say so before anyone waits for it.
func (s Spec) CoverageNote() string {
	if len(s.Windows) > 0 || len(s.Faults) == 0 {
		return ""
	}
	miss := s.Schedule().Uncovered(s.Faults)
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("faults: %d kinds need a time limit of at least %s at nemesis interval %s; in %s this seed's schedule gives %s no window",
		len(s.Faults), nemesis.CoverTimeLimit(len(s.Faults), s.NemesisInterval), s.NemesisInterval, s.TimeLimit, strings.Join(miss, ", "))
}

// Schedule is the spec's fault schedule: Windows when given, else seeded,
// the same for the same seed, faults and times.
func (s Spec) Schedule() nemesis.Schedule {
	if len(s.Windows) > 0 {
		return slices.Clone(s.Windows)
	}
	return nemesis.NewSchedule(s.Faults, s.NemesisInterval, s.TimeLimit, s.Seed).Overlap(s.Faults, s.NemesisOverlap, s.Seed)
}

// Validate refuses a spec no test can run, with the reason; the names are
// the JSON fields'. (chaos run checks its flags first and names them.)
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(s.Windows) > 0 && len(s.Faults) == 0 {
		// A given schedule's kinds are what every rule below judges: a
		// fault refused in --nemesis is refused in --schedule too.
		s.Faults = s.Windows.Kinds()
	}
	if !slices.Contains(Runtimes(), s.Runtime) && s.Runtime != RuntimeSim && s.Runtime != RuntimeExternal {
		bad("runtime: %q is not one of %s", s.Runtime, strings.Join(append(Runtimes(), RuntimeExternal), ", "))
	}
	s.validateExternal(bad)
	if s.Store == "" {
		errs = append(errs, fieldError("store", s.Store, "empty", "a directory for the result store"))
	}
	if s.Runtime != RuntimeExternal {
		// An external cluster's metadata says how many brokers it has;
		// the run checks the replication factor against them.
		errs = append(errs, asField(CheckNodes(s.Nodes, s.Settings.ReplicationFactor)))
	}
	errs = append(errs, asField(CheckBasePort(s.BasePort, s.Nodes, true)))
	// The nodes' own rules (broker/node), which every node would apply
	// to the flags it is started with, one by one after the run began.
	r, t := NodeFlags(s.Settings)
	errs = append(errs, asField(node.CheckCluster(r, t, s.Settings.Bugs)))
	field := func(flag string, got any, problem, accepted string) {
		errs = append(errs, fieldError(flag, got, problem, accepted))
	}
	if _, err := WorkloadKind(s.Workload); err != nil {
		errs = append(errs, asField(err))
	}
	// The clients' own rules (workload.CheckClients), on the workload the
	// run would drive: consumers -1 is one per partition (Normalized).
	if s.Consumers < -1 {
		field("consumers", s.Consumers, "negative", "0 or more (default: one per partition)")
	} else {
		n := s
		n.Consumers = max(n.Consumers, 0)
		errs = append(errs, asField(workload.CheckClients(n.WorkloadConfig(nil))))
	}
	switch {
	case s.ConvergeTimeout <= 0:
		field("converge-timeout", s.ConvergeTimeout, "not positive", "a duration such as 60s")
	case s.MonitorInterval < 0:
		field("monitor-interval", s.MonitorInterval, "negative", "a duration such as 250ms, or 0 for no monitor")
	}
	overlaps := s.NemesisOverlap > 1 || s.Windows.Overlaps()
	for _, f := range s.Faults {
		if err := nemesis.Composite(f); err != nil {
			bad("faults: %w", err)
		} else if err := nemesis.CheckTrigger(f); err != nil {
			bad("faults: %w", err)
		} else if _, ok := nemesis.Lookup(f); !ok {
			bad("faults: %q is not a fault; known: %s", f, strings.Join(nemesis.Names(), ", "))
		}
		overlaps = overlaps || strings.Contains(f, "+")
	}
	if s.subVia() != results.SubViaSubscribe && nemesis.NeedsGroup(append(slices.Clone(s.Faults), s.Windows.Kinds()...)) {
		field("nemesis", strings.Join(s.Faults, ","), "a fault of the consumer group without one",
			"--sub-via subscribe with crash-consumer, pause-consumer and partition-coordinator: they act on the consumers' group, and assign's consumers form none")
	}
	if s.Workload != results.WorkloadTxn && nemesis.NeedsTxn(append(slices.Clone(s.Faults), s.Windows.Kinds()...)) {
		field("nemesis", strings.Join(s.Faults, ","), "a fault of the transactional sessions without them",
			"--workload txn with pause-producer: it pauses a transactional session, which only the txn workload runs")
	}
	switch {
	case s.NemesisOverlap < 0 || s.NemesisOverlap > 3:
		field("nemesis-overlap", s.NemesisOverlap, "out of range", "1 to 3 fault kinds at once (1: one at a time)")
	case overlaps && (s.Settings.LoseUnsynced || nemesis.DestroysData(s.Faults)):
		// The guarantee model classes data loss per window: kills that
		// overlap where brokers lose unsynced writes would lose them on
		// several nodes at once unnoticed.
		bad("faults overlap (a composite, windows open at once, or nemesis_overlap %d) while brokers lose unsynced writes or disks are damaged: not supported, the guarantee model judges data loss per window", s.NemesisOverlap)
	}
	if len(s.Windows) > 0 {
		if err := s.Windows.Check(s.TimeLimit); err != nil {
			bad("windows: %w", err)
		}
		if kinds := s.Windows.Kinds(); len(s.Faults) > 0 && !sameSet(s.Faults, kinds) {
			// A kind asked for that no window runs would be reported as
			// never started; one that runs but was not asked for, judged
			// as a fault nobody declared.
			bad("faults: %s, but the windows run %s: leave faults empty, or list the windows' kinds",
				strings.Join(s.Faults, ","), strings.Join(kinds, ","))
		}
	} else if len(s.Faults) > 0 {
		switch {
		case s.NemesisInterval <= 0:
			field("nemesis-interval", s.NemesisInterval, "not positive", "a duration such as 10s: the faults need windows")
		case s.TimeLimit < nemesis.MinTimeLimit(s.NemesisInterval):
			// A run whose faults never start would be judged as a
			// healthy cluster's while claiming the faults.
			errs = append(errs, &NoWindowError{TimeLimit: s.TimeLimit, Interval: s.NemesisInterval})
		}
	}
	// The guarantee model's own rules, the ones chaos check applies too.
	if err := s.checkerConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// NoWindowError is Validate's refusal of a time limit too short for the
// nemesis interval: no fault window fits. It is a type, not a text, so
// that FlagCombination can say it in the flags' words.
type NoWindowError struct{ TimeLimit, Interval time.Duration }

func (e *NoWindowError) Error() string {
	return fmt.Sprintf("time_limit: %s is too short for nemesis_interval %s: no fault window fits (a run needs at least %s)",
		e.TimeLimit, e.Interval, nemesis.MinTimeLimit(e.Interval))
}

// sameSet says whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) }) &&
		!slices.ContainsFunc(b, func(x string) bool { return !slices.Contains(a, x) })
}

// checkerConfig is what the guarantee model is told before the run, from
// the spec alone: derived from test.json's part of it
// (results.TestConfig.CheckerConfig), as the run is judged by test.json.
func (s Spec) checkerConfig() checker.Config {
	return s.judged(s.WorkloadConfig(nil)).CheckerConfig()
}

// InFlight is how many produce requests each producer session may have
// outstanding.
func (s Spec) InFlight() int { return max(s.MaxInFlight, 1) }

// workloadName is the workload's kind, "" for queue (the default, which
// test.json leaves out).
func (s Spec) workloadName() string {
	if s.Workload == DefaultWorkload {
		return ""
	}
	return s.Workload
}

// subVia is how the consumers read, "" for assign (the default, which
// test.json leaves out).
func (s Spec) subVia() string {
	if s.SubVia == results.SubViaAssign {
		return ""
	}
	return s.SubVia
}

// Model is what the guarantee model is told of the spec before it runs:
// its configuration, the storage settings the run will have, and each
// fault declared once (a campaign's prediction). The run itself is judged
// by the fault windows its history records.
func (s Spec) Model() checker.Config {
	n := s.Normalized()
	c := n.checkerConfig()
	c.Declared = DeclaredFaults(n.Faults, n.Nodes)
	return c
}

// DeclaredFaults is what the guarantee model is told of a fault list
// before (or without) a history that records its windows: each kind once,
// with the brokers it kills at once in a cluster of that many brokers.
func DeclaredFaults(names []string, brokers int) []checker.FaultRun {
	var out []checker.FaultRun
	for _, name := range names {
		f, ok := nemesis.Lookup(name)
		if ok && f.Parts != nil {
			// A composite starts each of its kinds as a window of its own.
			for _, p := range f.Parts {
				out = append(out, checker.FaultRun{Kind: p.Name, KilledBrokers: p.Kills(brokers), DamagedBrokers: p.Damages()})
			}
			continue
		}
		// A triggered kind's windows are its kind's.
		r := checker.FaultRun{Kind: nemesis.Kind(name)}
		if ok {
			r.KilledBrokers, r.DamagedBrokers = f.Kills(brokers), f.Damages()
		}
		out = append(out, r)
	}
	return out
}

// Normalized fills what a run derives from the spec: the storage mode the
// faults need, consumers per partition, the name.
func (s Spec) Normalized() Spec {
	s.Faults = slices.Clone(s.Faults)
	if len(s.Windows) > 0 {
		s.Windows = slices.Clone(s.Windows)
		if len(s.Faults) == 0 {
			s.Faults = s.Windows.Kinds()
		}
	}
	if nemesis.LosesUnsynced(s.Faults) {
		// Only brokers that keep unsynced writes in memory lose them.
		s.Settings.LoseUnsynced = true
	}
	if s.Consumers < 0 {
		s.Consumers = int(s.Settings.Partitions)
	}
	if s.Name == "" {
		s.Name = s.DefaultName()
	}
	if s.LivenessBound == 0 {
		s.LivenessBound = DefaultLivenessBound(s.Settings)
	}
	return s
}

// DefaultLivenessBound is the liveness bound for brokers with settings st:
// three times the longer of the session timeout (a restarted or resumed
// broker is fenced and unfenced within it) and the replica lag time (a
// healed follower is back within it), and at least 10 s. After the last
// heal a correct cluster converges within a session timeout and a few
// heartbeats and catch-up fetches; three times leaves room for a loaded
// machine, and a liveness bug (a partition that never gets its leader or
// ISR back) stays stuck however long one waits.
func DefaultLivenessBound(st cluster.Settings) time.Duration {
	longest := time.Duration(max(st.SessionTimeoutMs, st.ReplicaLagTimeMaxMs)) * time.Millisecond
	return max(3*longest, 10*time.Second)
}
