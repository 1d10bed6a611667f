package results

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
)

// TestConfig is test.json: everything needed to understand and repeat a
// run. Its types are the store's: test.json is read back long after it
// was written (chaos check, chaos report, a campaign's index), so it
// changes only when this file does. The workload runs with Workload
// itself (workload.Config embeds it); the runner fills in the rest from
// its own types at the boundary.
type TestConfig struct {
	Name     string            `json:"name"`
	Seed     uint64            `json:"seed"`
	Start    time.Time         `json:"start"`
	Command  []string          `json:"command"`
	Versions map[string]string `json:"versions"`
	Cluster  ClusterConfig     `json:"cluster"`
	Workload Workload          `json:"workload"`
	Nemesis  []string          `json:"nemesis"` // fault kinds, as the guarantee model reads them
	// FaultFamilies are the families (process, network, disk) of the
	// kinds Nemesis starts, by kind, as the nemesis's registry says: what
	// the report colours a window by. Absent in runs recorded before it
	// was kept.
	FaultFamilies map[string]string `json:"fault_families,omitempty"`
	Schedule      Schedule          `json:"schedule"`
	// ScheduleGiven: the schedule was given as such (chaos sim
	// --schedule: a shrunk run, a real run replayed in simulation), not
	// drawn from the seed; a replay needs the windows, not only the seed.
	ScheduleGiven bool `json:"schedule_given,omitempty"`
	// NemesisInterval is the interval the schedule was drawn at (absent
	// for a given schedule, for no faults, and in runs recorded before it
	// was kept); NemesisIntervalChosen: chosen for the run, not given, so
	// that every kind got room for a window.
	NemesisInterval       time.Duration `json:"nemesis_interval,omitempty"`
	NemesisIntervalChosen bool          `json:"nemesis_interval_chosen,omitempty"`
	// NemesisOverlap, above 1, is how many kinds could overlap in a window
	// (chaos run --nemesis-overlap); the schedule holds the composites drawn.
	NemesisOverlap int           `json:"nemesis_overlap,omitempty"`
	Converge       time.Duration `json:"converge_timeout"`
	// MonitorInterval is how often the monitor sampled; absent in runs
	// recorded before it was kept (which sampled every 250ms), and in
	// runs without a monitor.
	MonitorInterval time.Duration `json:"monitor_interval,omitempty"`
	// LivenessBound is how long after the last heal the cluster had to
	// converge and serve again (the liveness checks' bound); absent in
	// runs recorded before the checks, which are then not judged.
	LivenessBound time.Duration `json:"liveness_bound,omitempty"`
	// Convergence is how the final phase found the cluster.
	Convergence *Convergence `json:"convergence,omitempty"`
	// Stopped says why the run ended before its time limit, skipping the
	// final phase (a fault command that failed); empty for a run that
	// went its course.
	Stopped string `json:"stopped,omitempty"`
}

// ClusterConfig is the system under test's configuration.
type ClusterConfig struct {
	Runtime string `json:"runtime"`
	// ClusterID is the id the tester gave the cluster it started, and
	// checked that every broker answered with before the workload began.
	ClusterID            string `json:"cluster_id,omitempty"`
	Nodes                int    `json:"nodes"`
	ReplicationFactor    int16  `json:"replication_factor"`
	MinInsyncReplicas    int32  `json:"min_insync_replicas"`
	Election             string `json:"election"`
	SessionTimeoutMs     int64  `json:"session_timeout_ms"`
	ReplicaLagTimeMaxMs  int64  `json:"replica_lag_time_max_ms"`
	ReplicaLagMaxMessage int64  `json:"replica_lag_max_messages"`
	// ReplicaFetchWaitMaxMs and HeartbeatIntervalMs are the brokers'
	// fetch wait and heartbeat; absent (0) in runs recorded before they
	// were, which took the brokers' defaults.
	ReplicaFetchWaitMaxMs int32  `json:"replica_fetch_wait_max_ms,omitempty"`
	HeartbeatIntervalMs   int64  `json:"heartbeat_interval_ms,omitempty"`
	Fsync                 string `json:"fsync"`
	LoseUnsynced          bool   `json:"lose_unsynced"`
	// Bugs are the bugs planted in the cluster on purpose (chaos bugs),
	// by name; none in a real test. The guarantee model does not know of
	// them: a bug shows as an anomaly the configuration forbids, or not.
	Bugs []string `json:"bugs,omitempty"`
	// DelayMechanism is how the runtime delays links for network faults:
	// proxy (local), netem, or userspace (docker on a kernel without netem:
	// the proxy's delay line in a relay beside each broker); htb-rate in
	// runs recorded before that.
	DelayMechanism string `json:"delay_mechanism,omitempty"`
	// External describes a cluster the tester did not start (runtime
	// external): where it was reached, the nodes and commands that
	// faulted it, and what it could not be asked.
	External *External `json:"external,omitempty"`
	// Unsupported are the checks the cluster gives no evidence for, by
	// design, with the reason (checker.Config.Unsupported): reported as
	// not checked and left out of the verdict.
	Unsupported map[string]string `json:"unsupported,omitempty"`
	// Invariants: the simulator watched the ISR invariant (every in-sync
	// replica holds the committed log) at every step; a run without it
	// gives no evidence for checker.ISRInvariantName (checker.Config.Invariants).
	Invariants bool `json:"invariants,omitempty"`
	// Weakened are the fault kinds the cluster let the run apply only in
	// part, which the user allowed, with what they lacked
	// (checker.Config.Weakened).
	Weakened map[string]string `json:"weakened,omitempty"`
}

// External is how a run reached and faulted a cluster it did not start.
type External struct {
	Bootstrap []string       `json:"bootstrap"`
	Nodes     []ExternalNode `json:"nodes,omitempty"`
	// Commands are the fault command templates by action (kill, start,
	// stop, pause, resume, partition, heal); an action without one was
	// not available.
	Commands map[string]string `json:"commands,omitempty"`
	// TopicExisted: the topic was the user's (--topic), not created by
	// the run; its settings are what the run was judged by.
	TopicExisted bool `json:"topic_existed,omitempty"`
	// Notes say what the run had to assume of the cluster.
	Notes []string `json:"notes,omitempty"`
}

// ExternalNode is a node of an external cluster: its name in the
// history and the commands, its address, and its broker id (-1: the
// controller node).
type ExternalNode struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	ID   int32  `json:"id"`
}

// Workload is the clients' configuration: what the producers and
// consumers do, the one type the workload runs with (workload.Config
// embeds it, with what only a run needs) and test.json keeps. Durations
// are nanoseconds in JSON.
type Workload struct {
	// Name is the workload's kind (--workload); absent: queue, the only
	// one before there were others.
	Name           string        `json:"name,omitempty"`
	Bootstrap      []string      `json:"bootstrap"`
	Topic          string        `json:"topic"`
	Partitions     int32         `json:"partitions"`
	Acks           int16         `json:"acks"`
	Concurrency    int           `json:"concurrency"`          // producer processes
	Consumers      int           `json:"consumers"`            // consumer processes
	Rate           float64       `json:"rate"`                 // target sends per second, all producers together; 0: unthrottled
	TimeLimit      time.Duration `json:"time_limit"`           // how long producers and consumers ran
	Seed           uint64        `json:"seed"`                 // drove partition choice and pacing jitter
	RequestTimeout time.Duration `json:"request_timeout"`      // the produce request timeout sent to brokers
	EndOffsetEvery int           `json:"end_offset_every"`     // a consumer read the end offset every N operations
	Retries        int           `json:"retries,omitempty"`    // a send was tried again up to this many times after a retriable error
	Idempotent     bool          `json:"idempotent,omitempty"` // producers used KIP-98 idempotence
	// MaxInFlight is how many produce requests each producer session
	// could have outstanding, its lanes (absent: 1).
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// SubVia is how the consumers read: "assign" (absent), each polling
	// partitions of its own, or "subscribe", as members of one consumer
	// group (Jepsen's option).
	SubVia string `json:"sub_via,omitempty"`
}

// Sub-via values.
const (
	SubViaAssign    = "assign"
	SubViaSubscribe = "subscribe"
)

// WorkloadTxn is the transactional workload's name (--workload txn).
const WorkloadTxn = "txn"

// Subscribe says whether the consumers read as members of a group.
func (w Workload) Subscribe() bool { return w.SubVia == SubViaSubscribe }

// InFlight is how many produce requests each producer session could have
// outstanding.
func (w Workload) InFlight() int { return max(w.MaxInFlight, 1) }

// Schedule is the fault windows planned for a run, in start order, one at
// a time; null in JSON when no fault was asked for. What really ran is in
// the history.
type Schedule []PlannedFault

// String is the schedule as chaos sim --schedule takes it: one window
// per comma, FAULT@START+LENGTH ("kill@5s+4s,partition@12s+5s"); "none"
// for no window (nemesis.ParseSchedule reads it; nemesis.Schedule, a
// schedule of the same windows, says it so too).
func (s Schedule) String() string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, len(s))
	for i, f := range s {
		parts[i] = f.String()
	}
	return strings.Join(parts, ",")
}

// PlannedFault is one planned fault window, the nemesis's own
// (nemesis.Event). Times are nanoseconds since the workload started.
type PlannedFault struct {
	Fault string        `json:"fault"`
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
}

// String is the window in the written form, FAULT@START+LENGTH.
func (f PlannedFault) String() string {
	return fmt.Sprintf("%s@%s+%s", f.Fault, f.Start, f.End-f.Start)
}

// Convergence is how the final phase found the cluster: whether every
// replica was back in the ISR before the final reads, after how long, and
// if not, what was still wrong.
type Convergence struct {
	Converged bool          `json:"converged"`
	Waited    time.Duration `json:"waited"`
	Why       string        `json:"why,omitempty"`
}

// ReadTestConfig reads a run's test.json.
func ReadTestConfig(path string) (TestConfig, error) { return readJSON[TestConfig](path) }

// ReadResults reads a run's results.json, whose schema is the checker's.
func ReadResults(path string) (*checker.Results, error) {
	res, err := readJSON[checker.Results](path)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// readJSON reads one of the store's JSON files. A file that cannot be read
// fails with an *fs.PathError; one that does not decode, with its path and
// the decoding error: callers tell "missing" from "damaged" that way.
func readJSON[T any](path string) (T, error) {
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// FaultKinds are the kinds a nemesis list starts: a composite "a+b"
// (kinds overlapping in one window) starts a and b, each recorded as a
// window of its own, so that is what the guarantee model looks for; a
// triggered kind (KIND:EVENT...) starts its KIND.
func FaultKinds(names []string) []string {
	var out []string
	for _, n := range names {
		for _, k := range history.FaultParts(n) {
			k = history.FaultKind(k)
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// CheckerConfig is what the guarantee model is told about the run: the
// replication settings, the faults asked for (the history records which
// ran), the storage settings that decide whether a kill destroys data,
// and chaos run's producers, with as many requests in flight and retrying
// as test.json says.
func (tc TestConfig) CheckerConfig() checker.Config {
	txn := tc.Workload.Name == WorkloadTxn
	var txnTimeout time.Duration
	if txn {
		txnTimeout = TxnTimeout
	}
	return checker.Config{
		Acks: int(tc.Workload.Acks), MinInsyncReplicas: int(tc.Cluster.MinInsyncReplicas),
		Election: tc.Cluster.Election, ReplicationFactor: int(tc.Cluster.ReplicationFactor),
		Faults: FaultKinds(tc.Nemesis), FaultsRecorded: true, LoseUnsynced: tc.Cluster.LoseUnsynced, Fsync: tc.Cluster.Fsync,
		// The transactional workload's sessions are idempotent producers
		// that retry (as every transactional producer is), whatever the
		// flags say of the queue workload's.
		MaxInFlight: tc.Workload.InFlight(), ClientRetries: tc.Workload.Retries > 0 && !tc.Workload.Idempotent && !txn,
		Idempotent:  tc.Workload.Idempotent || txn,
		Unsupported: tc.Cluster.Unsupported, Invariants: tc.Cluster.Invariants, LivenessBoundMs: tc.LivenessBound.Milliseconds(),
		Weakened: tc.Cluster.Weakened, Stopped: tc.Stopped,
		// The transactional workload's checks are judged even in a run
		// whose history holds no transaction yet (its model, a campaign's
		// predictions).
		Transactions: txn, TransactionTimeoutMs: txnTimeout.Milliseconds(),
	}
}

// TxnTimeout is the transaction timeout the transactional workload's
// sessions ask for (package workload/txn): a transaction a session lost
// track of is aborted by its coordinator after this.
const TxnTimeout = 10 * time.Second
