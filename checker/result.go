package checker

import (
	"fmt"
	"slices"
)

// Validity is a checker's verdict. It is a string in JSON ("true",
// "false", "unknown") like Jepsen's :valid?, so reports and other tools read
// it without a schema.
type Validity string

// The three verdicts.
const (
	Valid   Validity = "true"
	Invalid Validity = "false"
	Unknown Validity = "unknown"
)

// ExitCode maps a verdict to the process exit code (docs/guarantees.md): 0 valid,
// 1 invalid, 2 unknown. Anything else is not a verdict and maps to 3, the
// first of the codes left for errors.
func ExitCode(v Validity) int {
	switch v {
	case Valid:
		return 0
	case Invalid:
		return 1
	case Unknown:
		return 2
	}
	return 3
}

// Anomaly names, as docs/guarantees.md spells them.
const (
	LostWriteName           = "lost-write"
	UnseenName              = "unseen"
	DuplicateName           = "duplicate"
	InconsistentOffsetsName = "inconsistent-offsets"
	NonmonotonicSendName    = "nonmonotonic-send"
	PollSkipName            = "poll-skip"
	NonmonotonicPollName    = "nonmonotonic-poll"
	AbortedReadName         = "aborted-read"
	GarbageReadName         = "garbage-read"
	ReplicaDivergenceName   = "replica-divergence"
	AckBelowMinISRName      = "ack-below-min-isr"
	NonlinearizableSendName = "nonlinearizable-send"
	StaleReadName           = "stale-read"
)

// Names lists every anomaly in the fixed order Results reports them:
// loss first (what users care about most), then a node's crash (which
// may explain a loss), then offset and order anomalies, then the
// invariants, then the acknowledgement contract, then linearizability,
// then liveness, then the consumer group's, then the transactions'
// (TxnNames), which Results holds only for a history judged with
// transactions (Config.Transactions, or a history that holds any).
func Names() []string {
	return append(queueNames(), TxnNames()...)
}

// queueNames are the anomalies every history is judged for.
func queueNames() []string {
	return []string{
		LostWriteName, UnseenName, CrashName, DuplicateName, InconsistentOffsetsName,
		NonmonotonicSendName, PollSkipName, NonmonotonicPollName,
		AbortedReadName, GarbageReadName, ReplicaDivergenceName, ISRInvariantName,
		AckBelowMinISRName, NonlinearizableSendName, StaleReadName,
		NoConvergenceName, StuckPartitionName, StuckConsumerName,
		OffsetRegressionName, FencedCommitName, UnreadBelowCommitName, StuckGroupName,
	}
}

// namesFor is Names for a history judged with or without transactions.
func namesFor(txns bool) []string {
	if txns {
		return Names()
	}
	return queueNames()
}

// Cause is what explains an instance of an anomaly. The guarantee model
// permits causes, not anomalies wholesale: under acks=1 a lost record that
// was acknowledged before it was committed is what the configuration
// permits, while a lost record a consumer had already read is not, though
// both are lost writes.
type Cause string

// The causes.
const (
	// UncommittedTruncation: a record acknowledged before it was
	// committed (acks=0 or 1, never read by a consumer) was truncated
	// from the log.
	UncommittedTruncation Cause = "uncommitted-truncation"
	// CommittedTruncation: a record known to be committed (acknowledged
	// under acks=-1, or read by a consumer, who reads only below the high
	// watermark) was truncated, or its offset reused.
	CommittedTruncation Cause = "committed-truncation"
	// Unexplained: no truncation explains the instance (both records it
	// involves are still in the log, a value was read before it was
	// sent, ...). Only client retries or several requests in flight, or
	// a property the configuration never promised, permit it.
	Unexplained Cause = "unexplained"
)

// The causes of the transactions' anomalies that no truncation is
// needed for, which a correct Kafka shows in every configuration.
const (
	// InterleavedWrites: two transactions' records interleave in a
	// partition's log. Kafka appends a transaction's records as they are
	// sent and makes them visible at the commit, so writes are not
	// isolated: the order of two transactions' writes says nothing of
	// the order of their commits.
	InterleavedWrites Cause = "interleaved-writes"
	// UncommittedRead: the reader read with isolation read_uncommitted,
	// asking for the records of open and aborted transactions too.
	UncommittedRead Cause = "uncommitted-read"
)

// Causes lists the causes in order of severity, mildest first.
func Causes() []Cause {
	return []Cause{InterleavedWrites, UncommittedRead, UncommittedTruncation, CommittedTruncation, Unexplained}
}

// Result is what one checker found.
type Result struct {
	Name  string   `json:"name"`
	Valid Validity `json:"valid"`
	// Count is how many instances of the anomaly were found (values,
	// offsets or operation pairs, as the checker's doc says).
	Count int `json:"count"`
	// Forbidden is how many of them the configuration does not permit
	// (their cause is not one it permits). Any makes the run invalid.
	Forbidden int `json:"forbidden"`
	// Causes counts the instances by cause.
	Causes map[Cause]int `json:"causes,omitempty"`
	// Undecided counts instances (or values) whose fate or cause the
	// history cannot tell, where one of the possibilities is forbidden:
	// they make the result unknown unless it is invalid anyway.
	Undecided int `json:"undecided,omitempty"`
	// NotChecked says why the checker had no evidence at all (no replica
	// reads, no polls, ...); the result is then unknown.
	NotChecked string `json:"not_checked,omitempty"`
	// Unsupported: the system under test gives no evidence for this check
	// by design (Config.Unsupported, NotChecked says why); the verdict
	// leaves it out.
	Unsupported bool `json:"unsupported,omitempty"`
	// NotApplicable: the configuration by its nature gives the check
	// nothing to judge (under acks=0 no send is acknowledged, so no
	// acknowledged send can be unseen; under acks=1 min.insync.replicas
	// binds nothing). NotChecked says why; the verdict leaves it out, as
	// Jepsen leaves out a checker a test does not run. Evidence missing
	// for any other reason is not this: it leaves the result unknown.
	NotApplicable bool `json:"not_applicable,omitempty"`
	// Examples are op indexes (history.Op.Index) of a few instances,
	// sorted, at most MaxExamples: forbidden instances first, then
	// permitted ones.
	Examples []int64 `json:"examples,omitempty"`
	// Details describe the first few instances for a human, forbidden
	// ones first, and say why a checker is unknown.
	Details []string `json:"details,omitempty"`
	// Expected is set by the guarantee model: nothing this result found
	// or could not judge makes the run invalid or unknown (every
	// instance has a permitted cause). For a result that found nothing
	// it says whether the configuration permits the anomaly at all. Why
	// says why it is permitted or promised absent.
	Expected bool   `json:"expected"`
	Why      string `json:"why,omitempty"`
	// Permits says which of the anomaly's causes the configuration
	// permits.
	Permits map[Cause]bool `json:"permits,omitempty"`
	// Stats are checker-specific counts (what was judged, what could not
	// be).
	Stats map[string]int64 `json:"stats,omitempty"`
	// Artifacts are files the checker wrote, e.g. porcupine's
	// visualization of a history that is not linearizable.
	Artifacts []string `json:"artifacts,omitempty"`
	// Cycles are the dependency cycles G0 and G1c found, forbidden ones
	// first, at most MaxExamples: each transaction and how it precedes
	// the next, for a report to draw.
	Cycles []Cycle `json:"cycles,omitempty"`
}

// Found reports whether the checker found at least one instance.
func (r Result) Found() bool { return r.Valid == Invalid }

// Judged reports whether the check ran on evidence: it is neither not
// applicable to the configuration, nor unsupported by the cluster, nor
// without evidence.
func (r Result) Judged() bool { return !r.NotApplicable && !r.Unsupported && r.NotChecked == "" }

// Stance says what the configuration permits of the anomaly: "yes" (every
// cause), "no" (none) or "partly" (some causes: which, Permits says).
func (r Result) Stance() string {
	yes, no := 0, 0
	for _, ok := range r.Permits {
		if ok {
			yes++
		} else {
			no++
		}
	}
	switch {
	case yes > 0 && no > 0:
		return "partly"
	case yes > 0:
		return "yes"
	case no > 0:
		return "no"
	}
	if r.Expected {
		return "yes"
	}
	return "no"
}

// MaxExamples bounds Result.Examples and Result.Details: a report needs a
// few concrete instances, not a million.
const MaxExamples = 10

// finding accumulates a result's instances. Instances are added in history
// order, so the examples kept are the first ones, which is where a human
// starts reading; forbidden instances are kept apart from permitted ones
// and listed first, so a permitted flood cannot hide the one that matters.
type finding struct {
	name      string
	perm      Permission
	count     int
	forbidden int
	causes    map[Cause]int
	undecided int // undecided instances whose cause is forbidden
	open      int // all undecided instances
	// unknown: evidence is missing.
	unknown    bool
	notChecked string
	// na: the configuration gives the check nothing to judge.
	na      bool
	bad, ok examples
	notes   []string
	stats   map[string]int64
	// badCycles and okCycles are the cycles of G0 and G1c, kept as the
	// examples are.
	badCycles, okCycles []Cycle
}

type examples struct {
	ops     []int64
	details []string
}

func (e *examples) add(detail string, ops []int64) {
	if len(e.details) >= MaxExamples {
		return
	}
	e.details = append(e.details, detail)
	for _, o := range ops {
		if !slices.Contains(e.ops, o) {
			e.ops = append(e.ops, o)
		}
	}
}

// newFinding starts the finding of anomaly name under the model's
// permission for it.
func (h *History) newFinding(name string) *finding {
	return &finding{name: name, perm: h.model[name]}
}

// add records one instance with its cause and the op indexes that show it.
func (f *finding) add(c Cause, detail string, ops ...int64) { f.addN(1, c, detail, ops...) }

// addN records n instances with one cause, described by one detail.
func (f *finding) addN(n int, c Cause, detail string, ops ...int64) {
	f.count += n
	if f.causes == nil {
		f.causes = map[Cause]int{}
	}
	f.causes[c] += n
	if f.perm.allows(c) {
		f.ok.add(detail, ops)
		return
	}
	f.forbidden += n
	f.bad.add(detail, ops)
}

// undecide records that the history cannot tell whether an instance with
// cause c happened (or which cause it has): it matters only if c is
// forbidden. The stat names what was left undecided.
func (f *finding) undecide(c Cause, stat string, n int64) {
	f.stat(stat, n)
	f.open += int(n)
	if !f.perm.allows(c) {
		f.undecided += int(n)
	}
}

// missing marks the result unknown for lack of evidence; it matters to the
// verdict unless every cause of the anomaly is permitted.
func (f *finding) missing(format string, args ...any) {
	f.note(format, args...)
	f.unknown = true
}

// noEvidence says the checker had nothing to judge: not checked.
func (f *finding) noEvidence(format string, args ...any) {
	f.notChecked = fmt.Sprintf(format, args...)
	f.missing("not checked: %s", f.notChecked)
}

// notApplicable says the configuration gives the checker nothing to
// judge, by its nature: not checked, and left out of the verdict.
func (f *finding) notApplicable(format string, args ...any) {
	f.notChecked = fmt.Sprintf(format, args...)
	f.na = true
	f.note("%s", f.notChecked)
}

// note adds a detail that is not an instance (why a checker is unknown).
func (f *finding) note(format string, args ...any) {
	if len(f.notes) < MaxExamples {
		f.notes = append(f.notes, fmt.Sprintf(format, args...))
	}
}

func (f *finding) stat(name string, v int64) {
	if f.stats == nil {
		f.stats = map[string]int64{}
	}
	f.stats[name] += v
}

// result turns the finding into a Result: invalid if any instance was
// found, else unknown if the checker could not judge everything (or had
// nothing to judge), else valid.
func (f *finding) result() Result {
	r := Result{Name: f.name, Count: f.count, Forbidden: f.forbidden, Causes: f.causes, Undecided: f.undecided,
		NotChecked: f.notChecked, Stats: f.stats, Why: f.perm.Why, Permits: f.perm.Causes}
	if f.na && f.count == 0 && f.open == 0 {
		r.Valid, r.NotApplicable, r.Expected = Unknown, true, true
		r.Details = f.notes
		return r
	}
	r.Details = slices.Concat(f.bad.details, f.ok.details, f.notes)
	if cs := slices.Concat(f.badCycles, f.okCycles); len(cs) > 0 {
		r.Cycles = cs[:min(len(cs), MaxExamples)]
	}
	r.Examples = slices.Concat(f.bad.ops, f.ok.ops)
	r.Examples = r.Examples[:min(len(r.Examples), MaxExamples)]
	slices.Sort(r.Examples)
	r.Examples = slices.Compact(r.Examples)
	switch {
	case f.count > 0:
		r.Valid = Invalid
	case f.unknown || f.open > 0:
		r.Valid = Unknown
	default:
		r.Valid = Valid
	}
	// What is open matters only where it could hide a forbidden instance.
	open := f.undecided > 0 || (f.unknown && !f.perm.All)
	switch {
	case f.count > 0 || open:
		r.Expected = f.forbidden == 0 && !open
	default:
		r.Expected = f.perm.Permitted
	}
	return r
}

// OpCounts counts the completions of one function. Open counts invokes the
// history ended before completing: like info, their outcome is unknown.
type OpCounts struct {
	Invoke int64 `json:"invoke"`
	OK     int64 `json:"ok"`
	Fail   int64 `json:"fail"`
	Info   int64 `json:"info"`
	Open   int64 `json:"open"`
}

// Results is the verdict on a whole history.
type Results struct {
	// Valid is invalid iff some instance of an anomaly was found whose
	// cause the configuration does not permit; else unknown iff some
	// checker could not judge what could be forbidden, the history holds
	// no client operation, or none of the faults asked for started; else
	// valid. Permitted instances never change it.
	Valid  Validity `json:"valid"`
	Config Config   `json:"config"`
	// FaultClass is the class of the faults that ran (see FaultClass),
	// Faults their kinds, and FaultsNotStarted the kinds Config.Faults
	// asked for that never started.
	FaultClass       string   `json:"fault_class"`
	Faults           []string `json:"faults"`
	FaultsNotStarted []string `json:"faults_not_started,omitempty"`
	// FaultWindows counts the windows of each kind that ran: a kind asked
	// for once and run five times is not the same test as one run once.
	FaultWindows map[string]int `json:"fault_windows,omitempty"`
	// Notes say what limits the verdict as a whole.
	Notes []string `json:"notes,omitempty"`
	// Ops counts operations by function (send, poll, ..., nemesis
	// functions).
	Ops map[string]OpCounts `json:"ops"`
	// Results holds one Result per anomaly, in the order of Names.
	Results []Result `json:"results"`
	// Unexpected names the anomalies with forbidden instances, Expected
	// those found whose every instance is permitted.
	Unexpected []string `json:"unexpected,omitempty"`
	Expected   []string `json:"expected,omitempty"`
	// Problems are malformations of the history itself (a completion
	// without an invoke, ...), which the checkers worked around.
	Problems []string `json:"problems,omitempty"`
	// Liveness is what the liveness checks saw of the recovery after the
	// last heal; nil when no bound was set.
	Liveness *Liveness `json:"liveness,omitempty"`
	// LostWrites are every lost write LostWrite counts (its Result keeps
	// only examples): the report lists them without judging the history
	// again.
	LostWrites []LostAck `json:"lost_writes,omitempty"`
	// Weakened are the kinds of Faults that ran weaker than documented
	// (Config.Weakened), with what they lacked: the verdict speaks of
	// them as they ran.
	Weakened map[string]string `json:"weakened,omitempty"`
}

// ExitCode is the process exit code for the verdict.
func (r Results) ExitCode() int { return ExitCode(r.Valid) }

// Get returns the result of the named anomaly.
func (r Results) Get(name string) (Result, bool) {
	for _, x := range r.Results {
		if x.Name == name {
			return x, true
		}
	}
	return Result{}, false
}

// verdict combines results whose Expected flags are set: invalid if any
// instance is forbidden; else unknown if a result could hide a forbidden
// one (it is unknown, or found instances whose cause is undecided); else
// valid.
func verdict(rs []Result) Validity {
	v := Valid
	for _, r := range rs {
		switch {
		case r.Forbidden > 0:
			return Invalid
		case r.Valid != Valid && !r.Expected && !r.Unsupported && !r.NotApplicable:
			v = Unknown
		}
	}
	return v
}
