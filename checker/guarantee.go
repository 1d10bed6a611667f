package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Strictest is the configuration a history is judged under when nothing
// says which it ran with (no results, no test.json): the strongest
// promise, acks=-1 with min.insync.replicas=2 of three replicas and clean
// election, one request in flight, so that nothing is excused unasked.
func Strictest() Config {
	return Config{Acks: -1, MinInsyncReplicas: 2, Election: "clean", ReplicationFactor: 3, MaxInFlight: 1}
}

// Config is what the guarantee model needs to know about a test: the
// replication settings the producers and the topic used, the faults the
// nemesis was asked for, the storage settings that decide whether a fault
// destroys data, and how the client behaved.
type Config struct {
	// Acks is the producers' acks: 0, 1 or -1 (all).
	Acks              int `json:"acks"`
	MinInsyncReplicas int `json:"min_insync_replicas"`
	// Election is "clean" (only an ISR member may become leader) or
	// "unclean" (any live replica). Empty means clean, Kafka's default.
	Election          string `json:"election"`
	ReplicationFactor int    `json:"replication_factor"`
	// Faults names the fault kinds the test was asked to inject. What
	// the model judges by is what ran: the fault windows the history
	// records (see FaultClass).
	Faults []string `json:"faults"`
	// Declared is what the faults would do if each ran once, for judging
	// without a history that records its windows: the kinds with the
	// brokers each kills at once. Callers build it from the nemesis's
	// registry; the checker never reads meaning into a fault's name.
	Declared []FaultRun `json:"declared,omitempty"`
	// FaultsRecorded: the history records every fault window that
	// started (as chaos run's does), so a declared kind without a window
	// never ran. Without it, a history that records no window is judged
	// by Faults as declared.
	FaultsRecorded bool `json:"faults_recorded,omitempty"`
	// LoseUnsynced: a killed broker loses the writes it had not fsynced
	// (the broker's --lose-unsynced storage mode, or a power loss).
	LoseUnsynced bool `json:"lose_unsynced,omitempty"`
	// Fsync is the brokers' fsync policy: "never", "always" or
	// "interval:D"; empty if unknown. Under "always" nothing is ever
	// unsynced, so no fault loses unsynced writes.
	Fsync string `json:"fsync,omitempty"`
	// ClientRetries: the producer retries sends without idempotence, so
	// one value may be written twice.
	ClientRetries bool `json:"client_retries"`
	// Idempotent: the producer retries with idempotence (KIP-98), so a
	// broker writes a retried batch once: duplicates stay forbidden
	// whatever ClientRetries says.
	Idempotent bool `json:"idempotent,omitempty"`
	// MaxInFlight is the number of produce requests a producer may have
	// outstanding; above one, a retry may reorder sends.
	MaxInFlight int `json:"max_in_flight"`
	// MetadataLagMs is the most a broker in touch with the controller may
	// lag it: the ISR it answers Metadata with (what the monitor samples)
	// or leads by; a few heartbeat intervals. AckBelowMinISR allows for
	// it on both sides of a send. Zero means DefaultMetadataLag.
	MetadataLagMs int64 `json:"metadata_lag_ms,omitempty"`
	// LivenessBoundMs is how long after the last heal (the nemesis's last
	// operation) the cluster may take to converge and serve again before
	// the liveness checks call it stuck (docs/guarantees.md). Zero: no
	// bound was set (a history recorded before the checks, or by another
	// tool), and the liveness checks are not applicable.
	LivenessBoundMs int64 `json:"liveness_bound_ms,omitempty"`
	// Unsupported are the checks (anomaly names) the system under test
	// gives no evidence for by design, with the reason: a foreign broker
	// that refuses the final phase's replica reads leaves
	// replica-divergence unsupported. Known before the run, they are
	// reported as not checked and left out of the verdict, which then
	// speaks of the other checks only; evidence missing for any other
	// reason still makes a check unknown.
	Unsupported map[string]string `json:"unsupported,omitempty"`
	// Invariants: the history's recorder watched the ISR invariant at
	// every step (a simulation), so that no breach recorded is no breach;
	// else isr-invariant is not applicable, unless the history records a
	// breach anyway.
	Invariants bool `json:"invariants,omitempty"`
	// Weakened are the fault kinds the run could apply only in part, by
	// kind, with what they lacked: on an external cluster whose
	// controller runs apart and was not named, partition-leader leaves
	// the leader in touch with it. Allowed only when asked for; a kind
	// that ran so is marked in the verdict (Results.Weakened).
	Weakened map[string]string `json:"weakened,omitempty"`
	// Stopped says why the run ended before its time limit, when it did
	// because it could not go on as asked (a fault command that failed):
	// the history is cut short, the final phase was not run, and the
	// verdict is at best unknown.
	Stopped string `json:"stopped,omitempty"`
	// Transactions: the workload ran transactions (--workload txn), so
	// the model judges the transactions' anomalies (TxnNames) too. A
	// history that holds a transaction is judged so whatever this says.
	Transactions bool `json:"transactions,omitempty"`
	// TransactionTimeoutMs is the timeout the workload's transactions ask
	// for: the longest an open transaction may hold a partition's last
	// stable offset, and with it every read_committed reader, before its
	// coordinator must abort it. Stuck-consumer allows it on top of the
	// liveness bound for read_committed reads.
	TransactionTimeoutMs int64 `json:"transaction_timeout_ms,omitempty"`
}

// CheckAcks refuses an acks setting Kafka's producers do not have: the
// one statement of the rule, which the workload and a campaign's plan
// call too.
func CheckAcks(acks int) error {
	if acks != 0 && acks != 1 && acks != -1 {
		return fmt.Errorf("acks must be 0, 1 or -1, got %d", acks)
	}
	return nil
}

// Elections are the election policies the guarantee model knows: clean
// waits for an ISR member, unclean takes the first live replica, elr
// (KIP-966) elects an eligible replica outside the ISR too, which a
// strict high watermark rule makes safe.
func Elections() []string { return []string{"clean", "unclean", "elr"} }

// CheckElection refuses an election policy the model does not know (""
// is clean, Kafka's default): the tester's one statement of the rule,
// which a campaign's plan calls too. (chaos's own brokers check theirs,
// broker/node.CheckElection, as a broker checks its flags.)
func CheckElection(e string) error {
	if e != "" && !slices.Contains(Elections(), e) {
		return fmt.Errorf("election must be one of %s, got %q", strings.Join(Elections(), ", "), e)
	}
	return nil
}

// Validate refuses a configuration no test can have: the same rules
// chaos run applies to the flags it is given.
func (c Config) Validate() error {
	if err := CheckAcks(c.Acks); err != nil {
		return err
	}
	switch {
	case c.ReplicationFactor < 1:
		return fmt.Errorf("the replication factor must be at least 1, got %d", c.ReplicationFactor)
	case c.MinInsyncReplicas < 1:
		return fmt.Errorf("min.insync.replicas must be at least 1, got %d", c.MinInsyncReplicas)
	case c.MinInsyncReplicas > c.ReplicationFactor:
		return fmt.Errorf("min.insync.replicas %d is above the replication factor %d: no acks=-1 write could ever succeed", c.MinInsyncReplicas, c.ReplicationFactor)
	case c.MaxInFlight < 1:
		return fmt.Errorf("max in flight must be at least 1, got %d", c.MaxInFlight)
	case c.MetadataLagMs < 0:
		return fmt.Errorf("the metadata lag must not be negative, got %dms", c.MetadataLagMs)
	case c.LivenessBoundMs < 0:
		return fmt.Errorf("the liveness bound must not be negative, got %dms", c.LivenessBoundMs)
	}
	if err := CheckElection(c.Election); err != nil {
		return err
	}
	for name, why := range c.Unsupported {
		switch {
		case !slices.Contains(Names(), name):
			return fmt.Errorf("unsupported check %q is not a check; known: %s", name, strings.Join(Names(), ", "))
		case strings.TrimSpace(why) == "":
			return fmt.Errorf("unsupported check %s: no reason given", name)
		}
	}
	return nil
}

// Fault classes of the guarantee model (docs/guarantees.md), in increasing
// severity.
const (
	FaultsNone = "none"
	FaultsF1   = "F1" // crashes with the disk intact, pauses, partitions, slow followers
	FaultsF2   = "F2" // F1 plus loss of unsynced writes on one node at a time
	FaultsF3   = "F3" // unsynced writes lost on two or more nodes at once
)

var classRank = map[string]int{FaultsNone: 0, FaultsF1: 1, FaultsF2: 2, FaultsF3: 3}

// FaultRun is one fault window that ran, as far as the guarantee model
// cares: its kind (for people) and the brokers it killed at once.
type FaultRun struct {
	Kind          string `json:"kind"`
	KilledBrokers int    `json:"killed_brokers,omitempty"`
	// DamagedBrokers are the brokers whose data directory it damaged
	// (the disk faults): they lose data whatever the storage settings.
	DamagedBrokers int `json:"damaged_brokers,omitempty"`
	// StartNs and EndNs are when the window opened and healed, where a
	// history says (ELR's one-at-a-time rule, FaultClass).
	StartNs int64 `json:"start_ns,omitempty"`
	EndNs   int64 `json:"end_ns,omitempty"`
}

// FaultClass is the most severe class among the fault windows that ran,
// given the storage settings:
//
//   - no window: none;
//   - a window that killed brokers that lose their unsynced writes
//     (cfg.LoseUnsynced, and an fsync policy other than "always", under
//     which nothing is unsynced), or damaged brokers' data directories
//     (the disk faults, whatever the settings), is F2 if it did so to one,
//     F3 if to several at once;
//   - every other window is F1: process faults with the disk intact,
//     network faults, and kinds the model knows nothing of. A fault that
//     destroys data must say so (by the brokers it killed); guessing that
//     an unknown one might would silently permit lost writes, and a false
//     alarm is easier to notice than a missed one.
//
// Under ELR, whose promise counts unclean shutdowns within one stretch of
// a partition's ISR below the minimum, data lost on one node and then on
// another before the cluster could have recovered (the second window
// opening less than half the liveness bound after the first healed) is
// lost on several at once: F3. Found by chaos hunt --election elr:
// lose-unsynced and kill windows a few hundred milliseconds apart lost
// acknowledged writes that KIP-966 does not promise to keep.
func FaultClass(cfg Config, runs []FaultRun) string {
	class := FaultsNone
	var lastLossEnd int64 = -1
	for _, r := range runs {
		c := runClass(cfg, r)
		if c == FaultsF2 && strings.EqualFold(cfg.Election, "elr") && r.EndNs > 0 {
			if lastLossEnd >= 0 && r.StartNs-lastLossEnd < cfg.LivenessBoundMs*int64(time.Millisecond)/2 {
				c = FaultsF3
			}
			lastLossEnd = r.EndNs
		}
		if classRank[c] > classRank[class] {
			class = c
		}
	}
	return class
}

func runClass(cfg Config, r FaultRun) string {
	name := strings.ToLower(strings.TrimSpace(r.Kind))
	if name == "" || name == "none" {
		return FaultsNone
	}
	lost := r.DamagedBrokers
	if cfg.LoseUnsynced && !strings.EqualFold(strings.TrimSpace(cfg.Fsync), "always") {
		lost = max(lost, r.KilledBrokers)
	}
	switch {
	case lost == 0:
		return FaultsF1
	case lost >= 2:
		return FaultsF3
	}
	return FaultsF2
}

// declared is what the model judges a configuration by before (or
// without) a history: cfg.Declared, or, where the caller gave only names,
// one window of each kind that kills nothing.
func declared(cfg Config) []FaultRun {
	if len(cfg.Declared) > 0 {
		return cfg.Declared
	}
	var out []FaultRun
	for _, k := range cfg.Faults {
		out = append(out, FaultRun{Kind: k})
	}
	return out
}

// faultLog is the fault windows a history records, read by history's
// rule (history.Windows), and what the model makes of them.
type faultLog struct {
	pairs   history.Pairer
	windows history.Windows
	ops     int // nemesis operations of any kind
	// lastEnd is when the nemesis last completed an operation: the end of
	// the last window or heal, from which the liveness bound runs.
	lastEnd int64

	// Set by finish: the windows that started without an error, the
	// number whose start reported one, and the first such error, with
	// its op, to say why.
	started  []FaultRun
	failed   int
	firstErr string
	// neverStopped names the fault of a window that started and never
	// stopped;
	// unhealed the last stop or heal, if it reported an error: either
	// leaves the cluster not known to be healed, so the liveness checks
	// that run from the heal are not judged.
	neverStopped, unhealed string

	crashes []FaultRun // crashes of nodes, each as the kill it amounts to
	// lastCrash is the latest crash (a completion, or an invoke alone),
	// nil if none.
	lastCrash *history.Op
}

func (l *faultLog) add(op *history.Op, pos int32) {
	l.ops++
	if op.Type != history.Invoke {
		l.lastEnd = max(l.lastEnd, op.Time)
	}
	l.windows.Add(op, pos, l.pairs.Add(op, pos))
}

// finish judges the windows read.
func (l *faultLog) finish(op func(int32) *history.Op) {
	last := int32(-1) // the last stop or heal completed
	for _, w := range l.windows.Windows() {
		last = max(last, w.Stop.Done)
		if w.Start.Done < 0 {
			continue // a start that never completed is not known to have run
		}
		start := op(w.Start.Done)
		// A start that reported an error may not have taken effect:
		// counting it could permit what it never caused, so it does not
		// count.
		if start.Error != "" {
			if l.failed == 0 {
				l.firstErr = fmt.Sprintf("%s (op %d): %s", start.F, start.Index, start.Error)
			}
			l.failed++
			continue
		}
		if w.Stop.Done < 0 && (l.neverStopped == "" || w.Fault < l.neverStopped) {
			l.neverStopped = w.Fault // the first by name, to say the same of the same history
		}
		r := FaultRun{Kind: w.Fault, StartNs: start.Time}
		if w.Stop.Done >= 0 {
			r.EndNs = op(w.Stop.Done).Time
		}
		if start.Value != nil && start.Value.FaultInfo != nil {
			r.KilledBrokers = len(start.Value.KilledBrokers)
			r.DamagedBrokers = len(start.Value.DamagedBrokers)
		}
		l.started = append(l.started, r)
	}
	for _, h := range l.windows.Heals() {
		last = max(last, h.Done)
	}
	if last >= 0 && op(last).Error != "" {
		op := op(last)
		l.unhealed = fmt.Sprintf("%s (op %d) reported an error: %s", op.F, op.Index, op.Error)
	}
}

// crash counts a node's crash (history.Crash) as the fault it physically
// is: a kill of that node, with its disk as a kill leaves it, so that what
// the crash caused is judged as a kill's doing (a broker that loses its
// unsynced writes when it dies makes it F2, as a kill does) and the crash
// itself as the anomaly crash. A crash of the controller (no broker id)
// kills no broker: F1.
func (l *faultLog) crash(op *history.Op) {
	r := FaultRun{Kind: CrashName}
	if op.Value != nil && op.Value.Broker != nil {
		r.KilledBrokers = 1
	}
	l.crashes = append(l.crashes, r)
	if l.lastCrash == nil || op.Time >= l.lastCrash.Time {
		l.lastCrash = op
	}
}

// downAfterHeal describes the latest crash if it came after the last heal
// (lastEnd): no heal restarted that node, so the cluster was not whole
// again; "" if there is none.
func (l *faultLog) downAfterHeal() string {
	c := l.lastCrash
	if c == nil || c.Time < l.lastEnd {
		return ""
	}
	return fmt.Sprintf("%s crashed at %s (op %d), after the last heal (at %s), and no heal restarted it", crashNode(c.Value), secs(c.Time), c.Index, secs(l.lastEnd))
}

// notHealed says why the cluster is not known to be healed at the end of
// the history (a window that never stopped, a heal that failed), or "".
func (l *faultLog) notHealed() string {
	if l.neverStopped != "" {
		return fmt.Sprintf("a %s window started and never stopped (the history ends inside it)", l.neverStopped)
	}
	return l.unhealed
}

// ran is what the model judges by: the windows that started if the
// history records its faults, else the declared kinds; and the crashes.
func (l *faultLog) ran(cfg Config) []FaultRun {
	runs := declared(cfg)
	if l.ops > 0 || cfg.FaultsRecorded {
		runs = l.started
	}
	if len(l.crashes) == 0 {
		return runs
	}
	return append(slices.Clone(runs), l.crashes...)
}

// kinds lists the kinds that started at least once, sorted.
func kindsOf(runs []FaultRun) []string {
	var out []string
	for _, r := range runs {
		if k := strings.TrimSpace(r.Kind); k != "" && k != "none" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Permission says whether a configuration permits an anomaly, and why.
// Anomalies are judged per instance by cause (see Cause): Causes says
// which of the anomaly's causes are permitted, Permitted whether any is,
// All whether every one is.
type Permission struct {
	Permitted bool           `json:"permitted"`
	All       bool           `json:"all"`
	Why       string         `json:"why"`
	Causes    map[Cause]bool `json:"causes,omitempty"`
}

func (p Permission) allows(c Cause) bool {
	if p.Causes == nil {
		return p.Permitted
	}
	return p.Causes[c]
}

// reason is one base permission of the model with its reason.
type reason struct {
	ok  bool
	why string
}

// causes builds an anomaly's permission from the permissions of its
// possible causes; the reason lists what is permitted, then what is not.
func causes(lead string, cs map[Cause]reason) Permission {
	p := Permission{All: true, Causes: map[Cause]bool{}}
	var yes, no []string
	for _, c := range Causes() {
		r, ok := cs[c]
		if !ok {
			continue
		}
		p.Causes[c] = r.ok
		p.Permitted = p.Permitted || r.ok
		p.All = p.All && r.ok
		if r.ok {
			yes = append(yes, r.why)
		} else {
			no = append(no, r.why)
		}
	}
	var why []string
	if lead != "" {
		why = append(why, lead)
	}
	if len(yes) > 0 {
		why = append(why, "permitted: "+strings.Join(yes, "; "))
	}
	if len(no) > 0 {
		why = append(why, "forbidden: "+strings.Join(no, "; "))
	}
	p.Why = strings.Join(why, ". ")
	return p
}

// Permitted encodes the guarantee matrix and invariants of
// docs/guarantees.md for the faults cfg declares: for every anomaly of
// Names (the transactions' only under cfg.Transactions), which of its
// causes cfg permits. Check judges a history by the faults that ran
// instead.
func Permitted(cfg Config) map[string]Permission {
	return permitted(cfg, FaultClass(cfg, declared(cfg)))
}

// DeclaredClass is the class the faults cfg declares would have if each
// ran once: what Permitted judges by.
func DeclaredClass(cfg Config) string { return FaultClass(cfg, declared(cfg)) }

// PermittedUnder is the model for cfg under a fault class the caller
// knows (e.g. from History.FaultClass).
func PermittedUnder(cfg Config, class string) map[string]Permission { return permitted(cfg, class) }

// permitted is the model under a fault class. Classes not named by the
// matrix are read as the closest row says: no faults as F1 (an
// overloaded cluster can still fence a broker and change leaders), and
// F2/F3 wherever the matrix only promises "under F1".
func permitted(cfg Config, class string) map[string]Permission {
	unclean := strings.EqualFold(cfg.Election, "unclean")
	elr := strings.EqualFold(cfg.Election, "elr")
	// KIP-966's promise: with the ELR, up to min.insync.replicas - 1
	// unclean shutdowns lose nothing committed, which closes the last
	// replica standing.
	elrHolds := elr && cfg.MinInsyncReplicas >= 2 && class == FaultsF2
	elrWhy := fmt.Sprintf("ELR, min.insync.replicas=%d under F2: the high watermark stands still while the ISR is below the minimum, so every replica that left the ISR then (the ELR) holds every committed record; a replica that lost its unsynced writes shut down uncleanly and leaves the ELR when it registers again, so with one node at a time losing its writes an eligible replica that kept them is elected (KIP-966)", cfg.MinInsyncReplicas)

	// Loss of a record acknowledged before it was committed.
	var loss reason
	switch {
	case unclean:
		loss = reason{true, "unclean election: an out-of-sync replica may become leader, and the acknowledged records only the old leader had are truncated"}
	case cfg.Acks == 0:
		loss = reason{true, "acks=0: nothing is acknowledged; a send may vanish without anyone knowing"}
	case cfg.Acks == 1:
		loss = reason{true, "acks=1: the leader acknowledges before followers fetch; if it dies or is cut off first, a follower without the record becomes leader and the record is truncated"}
	case class == FaultsF3:
		loss = reason{true, fmt.Sprintf("acks=%d under F3: unsynced writes lost on several nodes at once can erase an acknowledged record from every replica", cfg.Acks)}
	case elrHolds:
		loss = reason{false, fmt.Sprintf("acks=%d, %s", cfg.Acks, elrWhy)}
	case class == FaultsF2 && cfg.MinInsyncReplicas <= 1:
		loss = reason{true, fmt.Sprintf("acks=%d, min.insync.replicas=%d under F2: the ISR may shrink to the leader alone, which acknowledges and then loses its unsynced writes", cfg.Acks, cfg.MinInsyncReplicas)}
		if elr {
			loss.why += "; ELR tolerates min.insync.replicas - 1 = 0 unclean shutdowns, and elects that replica again as the last known eligible one"
		}
	case class == FaultsF2:
		loss = reason{true, fmt.Sprintf("acks=%d, min.insync.replicas=%d under F2: only via the last replica standing (the ISR shrinks to one replica, which then loses unsynced writes; KIP-966 closes this)", cfg.Acks, cfg.MinInsyncReplicas)}
	case elr:
		loss = reason{false, fmt.Sprintf("acks=%d, ELR, faults %s: an acknowledged record is on every ISR member, the high watermark stands still while the ISR is below min.insync.replicas, and only an ISR member or a replica that left the ISR below the minimum (the ELR) becomes leader, so crashes with intact disks, pauses and partitions cannot lose it", cfg.Acks, class)}
	default:
		loss = reason{false, fmt.Sprintf("acks=%d, clean election, faults %s: an acknowledged record is on every ISR member and only an ISR member becomes leader, so crashes with intact disks, pauses and partitions cannot lose it", cfg.Acks, class)}
	}
	// Truncation of a record known to be committed (below the HW).
	var commit reason
	switch {
	case unclean:
		commit = reason{true, "a committed record may be truncated: under unclean election an out-of-sync replica becomes leader, and the others truncate to its log"}
	case elrHolds:
		commit = reason{false, "a committed record must never be truncated: " + elrWhy}
	case class == FaultsF2 || class == FaultsF3:
		commit = reason{true, fmt.Sprintf("a committed record may be truncated: under %s a replica that loses its unsynced writes can lose committed records (last replica standing) and reuse their offsets", class)}
	default:
		commit = reason{false, fmt.Sprintf("a committed record (acknowledged under acks=-1, or read by a consumer below the high watermark) must never be truncated: clean election, faults %s, and every future leader has every record below the high watermark", class)}
	}
	if cfg.Acks < 0 {
		// Every acks=-1 acknowledgement is a commit: the two reasons are
		// one.
		loss = reason{commit.ok, loss.why}
	}
	uncommitted := reason{loss.ok, "an acknowledged record that was not yet committed may be truncated: " + loss.why}
	if !loss.ok {
		uncommitted.why = "an acknowledged record must never be lost: " + loss.why
	}
	if cfg.Acks < 0 {
		uncommitted.why = "every acknowledgement under acks=-1 is a commit: " + loss.why
	}
	none := reason{false, "no truncation explains it (the records involved are still in the log)"}

	p := map[string]Permission{}
	p[LostWriteName] = causes("judged per lost value by whether it was committed", map[Cause]reason{
		UncommittedTruncation: uncommitted, CommittedTruncation: commit})
	p[UnseenName] = causes("follows lost-write (an unseen value is lost, or beyond what the final phase read)", map[Cause]reason{
		UncommittedTruncation: uncommitted, CommittedTruncation: commit})
	p[InconsistentOffsetsName] = causes("consumers read only committed records, so a changed offset is a committed record truncated and its offset reused", map[Cause]reason{
		CommittedTruncation: commit, Unexplained: none})
	p[ReplicaDivergenceName] = causes("replicas must converge on the committed prefix after healing unless that prefix can be rewritten", map[Cause]reason{
		CommittedTruncation: commit})
	isr := reason{false, "invariant: every in-sync replica holds every committed record, the same as where it was committed (the ISR is what a clean election picks from); a replica admitted before it caught up (KAFKA-7128), or one that kept records the leader rewrote (KAFKA-6880), breaks it even when no second failure turns it into a loss"}
	switch {
	case unclean:
		isr = reason{true, "unclean election: an out-of-sync replica may become leader, and the ISR restarts as just it, without the committed records it lacked"}
	case elrHolds:
		isr = reason{true, "under F2 a replica that lost its unsynced writes is still in the ISR, without committed records, from its restart until the controller hears its new process register and fences it; ELR keeps it from being elected, not from being counted"}
	case class == FaultsF2 || class == FaultsF3:
		isr = reason{true, fmt.Sprintf("under %s a replica that loses its unsynced writes may still be in the ISR (the last replica standing) without committed records", class)}
	}
	p[ISRInvariantName] = causes("checked in simulation only, where every replica is read at every instant", map[Cause]reason{Unexplained: isr})
	p[PollSkipName] = causes("a truncated and rewritten log can make a consumer skip", map[Cause]reason{CommittedTruncation: commit})
	p[NonmonotonicPollName] = causes("a truncated log sends a consumer back", map[Cause]reason{CommittedTruncation: commit})

	reorder := reason{false, "one request in flight per producer: a later send cannot land below an earlier one that is still in the log"}
	if cfg.MaxInFlight > 1 && cfg.Idempotent {
		reorder = reason{false, fmt.Sprintf("idempotent producer, max.in.flight=%d: a broker takes a producer's batches only in sequence order", cfg.MaxInFlight)}
	} else if cfg.MaxInFlight > 1 {
		reorder = reason{true, fmt.Sprintf("max.in.flight=%d: a retried request may land after a later one", cfg.MaxInFlight)}
	}
	p[NonmonotonicSendName] = causes("a truncation rewinds the log end, so a later send can land lower; judged per instance by the earlier record's fate", map[Cause]reason{
		UncommittedTruncation: uncommitted, CommittedTruncation: commit, Unexplained: reorder})
	p[NonlinearizableSendName] = causes("offsets come from one leader at a time from a log end that moves back only by truncation; judged per pair by the truncated record", map[Cause]reason{
		UncommittedTruncation: uncommitted, CommittedTruncation: commit,
		Unexplained: {false, "real-time order must hold for records that are still in the log"}})

	switch {
	case cfg.Idempotent && (unclean || class == FaultsF2 && !elrHolds || class == FaultsF3):
		// Found by chaos hunt on the correct broker: a committed batch
		// read by a consumer, then truncated (by an unclean election, or
		// with the last replica's unsynced writes), its retry written
		// again at another offset.
		why := "unclean election"
		if !unclean {
			why = class + ", a broker that loses its unsynced writes"
		}
		p[DuplicateName] = causes("", map[Cause]reason{Unexplained: {true, fmt.Sprintf("idempotent producer under %s: a committed batch may be truncated, and the producer state that knew its sequence number with it, so the batch (which a consumer may have read) is written again by the producer's retry, at another offset", why)}})
	case cfg.Idempotent:
		p[DuplicateName] = causes("", map[Cause]reason{Unexplained: {false, "idempotent producer: the broker recognises a retried batch by its producer id and sequence number and writes it once"}})
	case cfg.ClientRetries:
		p[DuplicateName] = causes("", map[Cause]reason{Unexplained: {true, "client retries without idempotence: a retry of a send that was written writes its value again"}})
	default:
		p[DuplicateName] = causes("", map[Cause]reason{Unexplained: {false, "invariant: without client retries each value is sent by one request, so it can be written once"}})
	}
	// An acknowledgement while the ISR was below min.insync.replicas:
	// what acks=-1 promises never happens, whatever the election and the
	// faults (an unclean election and lost disks lose records, but a
	// leader still answers by its ISR).
	belowMin := reason{false, fmt.Sprintf("acks=-1, min.insync.replicas=%d: a leader whose ISR is below the minimum refuses the write (NOT_ENOUGH_REPLICAS), or answers NOT_ENOUGH_REPLICAS_AFTER_APPEND if it shrank below it before the write committed, under any election and faults", cfg.MinInsyncReplicas)}
	switch {
	case cfg.Acks >= 0:
		belowMin = reason{true, fmt.Sprintf("acks=%d: min.insync.replicas binds only acks=-1 writes", cfg.Acks)}
	case cfg.MinInsyncReplicas <= 1:
		belowMin = reason{true, fmt.Sprintf("min.insync.replicas=%d: the leader alone is enough, and an ISR always holds its leader", cfg.MinInsyncReplicas)}
	}
	p[AckBelowMinISRName] = causes("judged by the monitor's samples of the ISR", map[Cause]reason{Unexplained: belowMin})
	p[StaleReadName] = causes("", map[Cause]reason{Unexplained: {true, "everywhere: Kafka does not promise linearizable reads; a new leader's high watermark can lag the old one's"}})
	failedSend := reason{false, "invariant: a send that failed definitely was not written (NOT_ENOUGH_REPLICAS before the append, an unknown topic, a request never sent)"}
	p[AbortedReadName] = causes("", map[Cause]reason{Unexplained: failedSend})
	p[GarbageReadName] = causes("", map[Cause]reason{Unexplained: {false, "invariant: every record was sent by someone; anything else is corruption"}})
	p[OffsetRegressionName] = causes("committed offsets are records of the group coordinator's internal topic, written and acknowledged as an acks=-1 write is, with the cluster's min.insync.replicas and election", map[Cause]reason{CommittedTruncation: commit})
	p[FencedCommitName] = causes("the coordinator refuses a commit from any generation but the group's current one, which it keeps in its internal topic", map[Cause]reason{CommittedTruncation: commit})
	p[UnreadBelowCommitName] = causes("a member commits only what it has received, so below the committed offset every record was delivered, unless the partition was rewritten under it", map[Cause]reason{CommittedTruncation: commit})
	for _, name := range []string{NoConvergenceName, StuckPartitionName, StuckConsumerName, StuckGroupName} {
		p[name] = causes("", map[Cause]reason{Unexplained: {false, livenessReason}})
	}
	p[CrashName] = causes("", map[Cause]reason{Unexplained: {false, "invariant: a node dies only when the nemesis kills or stops it; one that dies on its own (a panic, an exit) is a bug of the system under test in every configuration, whatever the faults (what it did to the data is judged by the other checks, the crash counted as a kill of that node)"}})
	if cfg.Transactions {
		txnPermitted(p, commit, uncommitted, failedSend)
	}
	return p
}
