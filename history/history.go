package history

import (
	"fmt"
	"reflect"
	"strings"
)

// SchemaVersion is the version of the JSON Lines format in docs/history.md.
const SchemaVersion = 1

// Type is an operation's type.
type Type string

// Operation types.
const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
)

// Operation functions written by the workloads and nemeses of this tool.
// Other tools may write other functions; checkers ignore what they do not
// know.
const (
	Send        = "send"         // produce one record; ok carries its offset
	Poll        = "poll"         // a consumer fetch below the HW; ok carries the records
	EndOffset   = "end-offset"   // ListOffsets latest (the HW) of a partition
	FinalRead   = "final-read"   // after healing: a partition read from the leader to its end
	ReplicaRead = "replica-read" // after healing: one replica's whole log, read with replica id -2
	// Converge is the final phase's wait for the cluster to heal: invoked
	// when the wait begins, ok once every partition has a leader and its
	// whole replica set in the ISR, fail (with what was still wrong) when
	// the wait gave up. The liveness checks read it.
	Converge = "converge"
	// Monitor is the tester's own sample of a partition's replication
	// state (leader, epoch, ISR, HW), taken during the run so that reports
	// can plot it; one checker (ack-below-min-isr) holds acks=-1
	// acknowledgements against its ISR.
	Monitor = "monitor"
	// Crash is a node of the cluster that died without the nemesis (or
	// the tester) killing or stopping it, as the runtime noticed it:
	// recorded by ClusterProcess, an invoke and its info completion at
	// once, the completion's value naming the node and how it ended
	// (CrashInfo).
	Crash = "crash"
	// Invariant is a breach of the invariant that every in-sync replica
	// holds the committed log, which only a simulation sees (it reads
	// every replica at every instant): recorded by ClusterProcess, an
	// invoke and its info completion at once, the value naming the
	// partition, the broker (Broker) and what it lacked or held (Value).
	Invariant = "invariant"
	// Assign is a consumer group member's join of its group (the
	// subscribe workload): invoked when it begins, ok once the member has
	// its generation's partitions (GroupInfo.Assigned) and the offsets
	// the group had committed for them (GroupInfo.Committed), from which
	// it polls on.
	Assign = "assign"
	// Commit is a group member's commit of the offset (Value.Offset) it
	// will poll the partition from next; GroupInfo names its generation.
	Commit = "commit"
	// A transaction is Txn (txn.go).
)

// CorruptRecords starts the error of a read that got records that do not
// decode (a bad checksum, a torn batch): Kafka's name for it. The
// checkers count such a read as a garbage read.
const CorruptRecords = "CORRUPT_MESSAGE"

// StuckRead starts the error of a final read whose fetch from an offset
// below the leader's high watermark returned no records; the failed
// read's value gives that offset (from) and the high watermark (hw). The
// stuck-consumer check counts it as a poll that got nothing.
const StuckRead = "STUCK"

// NemesisProcess is the process of nemesis operations.
const NemesisProcess = -1

// MonitorProcess is the process of monitor operations.
const MonitorProcess = -2

// ClusterProcess is the process of what the cluster reported of itself
// (a node that crashed), neither the nemesis's doing nor the monitor's.
const ClusterProcess = -3

// Record is one record read from a partition.
type Record struct {
	Offset int64  `json:"offset"`
	Value  string `json:"value"`
}

// Value is an operation's value. Which fields are set depends on f and type
// (docs/history.md): a send names the topic, partition and value, and its
// ok adds the offset; a poll names the partition and the offset it reads
// from, and its ok adds the records and the HW; a replica read names the
// broker.
type Value struct {
	Topic     string   `json:"topic,omitempty"`
	Partition int32    `json:"partition"`
	Value     string   `json:"value,omitempty"`
	Offset    *int64   `json:"offset,omitempty"`
	From      *int64   `json:"from,omitempty"`
	Records   []Record `json:"records,omitempty"`
	// Spool, when set, holds a long read's records on disk in place of
	// Records: the writer writes them as Records (the line is the same),
	// and closes it. Never read from a history.
	Spool  *Spool `json:"-"`
	HW     *int64 `json:"hw,omitempty"`
	Broker *int32 `json:"broker,omitempty"`
	// Unconverged are the partitions a failed converge (the final
	// phase's wait for convergence) found without a leader or a full ISR
	// when it gave up.
	Unconverged []int32 `json:"unconverged,omitempty"`
	// Producer is the producer session a send belongs to, when a session
	// has several requests in flight (several processes, its lanes): the
	// order of its sends is the order of their invocations in the history.
	Producer *int32 `json:"producer,omitempty"`
	// Monitor operations add what the cluster's metadata said of the
	// partition (hw is then the leader's answer to ListOffsets), nemesis
	// operations the fault, crash operations the node and how it died,
	// transactions their micro-operations (and a reader its isolation
	// level); nil for every other operation. Embedded, so
	// their fields stay at the top level of the JSON object, and apart,
	// so the client operations that make up nearly all of a history do
	// not carry them (a million-operation history is 90 MB smaller).
	*Sample
	*FaultInfo
	*Attempts
	*CrashInfo
	*GroupInfo
	*TxnInfo
}

// GroupInfo is what a consumer group's operations (assign, commit, and the
// polls of a group member) say of the group: its name, the member and its
// generation; an assign's ok adds what the member was given. Kept apart
// for the reason Sample is.
type GroupInfo struct {
	Group      string `json:"group"`
	Generation int32  `json:"generation"`
	Member     string `json:"member,omitempty"`
	// Assigned are the partitions an assign's member was given.
	Assigned []int32 `json:"assigned,omitempty"`
	// Committed are the group's committed offsets of them as the member
	// fetched them (OffsetFetch), -1 where none.
	Committed []PartitionOffset `json:"committed,omitempty"`
}

// PartitionOffset is an offset of a partition.
type PartitionOffset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// CrashInfo is what a crash operation (f "crash") says of a node that died
// on its own; Value.Broker is its broker id when it is a broker. Kept
// apart for the reason Sample is.
type CrashInfo struct {
	// Node is the node's name as the nemesis names it: broker-N or
	// controller.
	Node string `json:"node"`
	// Exit is how its process ended ("exit status 2", "signal: killed"),
	// where a process ended: in the real runtimes.
	Exit string `json:"exit,omitempty"`
	// Panic is the panic message, where it is known: recovered in a
	// simulation, read from the node's log in a real runtime.
	Panic string `json:"panic,omitempty"`
	// Stack is the panic's stack, in a simulation: function names and
	// file:line only, so that a seed replays it byte for byte.
	Stack string `json:"stack,omitempty"`
	// Log is the last lines its log holds of the incarnation that died,
	// in a real runtime.
	Log string `json:"log,omitempty"`
}

// Crashed is the crash a crash operation's value describes, or nil.
func (v *Value) Crashed() *CrashInfo {
	if v == nil {
		return nil
	}
	return v.CrashInfo
}

// Attempts is what a send's completion adds when its producer retried:
// the error of each attempt before the last, in order. The last attempt's
// outcome is the completion's type and error. Kept apart for the reason
// Sample is.
type Attempts struct {
	Retries []string `json:"retries,omitempty"`
}

// SendRetries are the errors of the attempts a send's completion says came
// before its last, or nil.
func (v *Value) SendRetries() []string {
	if v == nil || v.Attempts == nil {
		return nil
	}
	return v.Retries
}

// Sample is what a monitor operation saw of a partition.
type Sample struct {
	Leader   *int32  `json:"leader,omitempty"`
	Epoch    *int32  `json:"epoch,omitempty"`
	ISR      []int32 `json:"isr,omitempty"`
	Replicas []int32 `json:"replicas,omitempty"`
}

// FaultInfo describes a nemesis operation's fault: its kind and targets
// in free form, for people, and as data what the guarantee model needs:
// the brokers a window's start killed (whose unsynced writes are lost
// where the brokers keep them in memory).
type FaultInfo struct {
	Fault         string   `json:"fault,omitempty"`
	Targets       []string `json:"targets,omitempty"`
	KilledBrokers []int32  `json:"killed_brokers,omitempty"`
	// DamagedBrokers are the brokers whose data directory the window
	// damaged while they were down (corrupted, cut, or restored from an
	// old copy): they lose data whatever the storage settings.
	DamagedBrokers []int32 `json:"damaged_brokers,omitempty"`
	// Commands are the commands the operation ran on a cluster the tester
	// did not start (the external runtime's fault commands), in order: a
	// fault is only what its commands did, so the history keeps them.
	Commands []Command `json:"commands,omitempty"`
}

// Command is one fault command the external runtime ran: on which node,
// for which action, the command line as run, and how it ended.
type Command struct {
	Node   string `json:"node"`
	Action string `json:"action"` // one of CommandActions
	Cmd    string `json:"cmd"`
	// Exit is the exit status; -1 if the command did not run to an exit
	// (it could not start, or timed out and was killed).
	Exit int `json:"exit"`
	// Output is the command's stdout and stderr together, its tail when
	// it was long.
	Output string `json:"output,omitempty"`
	// Error says why the command failed: a non-zero exit, a timeout.
	Error string `json:"error,omitempty"`
	// Millis is how long it ran.
	Millis int64 `json:"ms"`
}

// FaultName is the fault a nemesis operation's value names, or "".
func (v *Value) FaultName() string {
	if v == nil || v.FaultInfo == nil {
		return ""
	}
	return v.Fault
}

// FaultTargets are the targets a nemesis operation's value names, or nil.
func (v *Value) FaultTargets() []string {
	if v == nil || v.FaultInfo == nil {
		return nil
	}
	return v.Targets
}

// Op is one operation.
type Op struct {
	Index   int64  `json:"index"`
	Time    int64  `json:"time"` // nanoseconds since the test started
	Process int    `json:"process"`
	Type    Type   `json:"type"`
	F       string `json:"f"`
	Value   *Value `json:"value,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Key names a topic partition.
type Key struct {
	Topic     string
	Partition int32
}

func (k Key) String() string { return fmt.Sprintf("%s-%d", k.Topic, k.Partition) }

// Key returns the op's topic partition.
func (o *Op) Key() Key {
	if o.Value == nil {
		return Key{}
	}
	return Key{o.Value.Topic, o.Value.Partition}
}

// Int64 returns a pointer to v, for Value's optional fields.
func Int64(v int64) *int64 { return &v }

// Int32 returns a pointer to v.
func Int32(v int32) *int32 { return &v }

func (o Op) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "#%d %.3fs p%d %s %s", o.Index, float64(o.Time)/1e9, o.Process, o.Type, o.F)
	if v := o.Value; v != nil {
		if v.Topic != "" {
			fmt.Fprintf(&sb, " %s-%d", v.Topic, v.Partition)
		}
		if v.Value != "" {
			fmt.Fprintf(&sb, " %q", v.Value)
		}
		if v.Offset != nil {
			fmt.Fprintf(&sb, " @%d", *v.Offset)
		}
		if v.Broker != nil {
			fmt.Fprintf(&sb, " broker %d", *v.Broker)
		}
		if v.From != nil {
			fmt.Fprintf(&sb, " from %d", *v.From)
		}
		if len(v.Records) > 0 {
			fmt.Fprintf(&sb, " %d records", len(v.Records))
		}
		if f := v.FaultName(); f != "" {
			fmt.Fprintf(&sb, " %s %v", f, v.FaultTargets())
		}
		if c := v.Crashed(); c != nil {
			fmt.Fprintf(&sb, " %s", c.Node)
		}
		if t := v.Transaction(); t != nil && len(t.Mops) > 0 {
			fmt.Fprintf(&sb, " %d mops", len(t.Mops))
		}
	}
	if o.Error != "" {
		fmt.Fprintf(&sb, " (%s)", o.Error)
	}
	return sb.String()
}

// A fault window's operations: the nemesis records its start as
// start-KIND and its end as stop-KIND (Jepsen's :start and :stop, named
// by the kind). The spelling lives here alone; readers ask FaultStart and
// FaultStop.
const startPrefix, stopPrefix = "start-", "stop-"

// StartF is the operation name of the start of kind's window.
func StartF(kind string) string { return startPrefix + kind }

// StopF is the operation name of the end of kind's window.
func StopF(kind string) string { return stopPrefix + kind }

// FaultStart is the kind whose window the operation named f starts, ok
// false if it starts none.
func FaultStart(f string) (kind string, ok bool) { return strings.CutPrefix(f, startPrefix) }

// FaultStop is the kind whose window the operation named f ends, ok false
// if it ends none.
func FaultStop(f string) (kind string, ok bool) { return strings.CutPrefix(f, stopPrefix) }

// FaultSep joins the kinds of a composite fault's name (kill+partition:
// both in one window), the one spelling the nemesis, its readers and the
// hunt's draws share.
const FaultSep = "+"

// FaultParts are the kinds a fault's name joins: one for a lone kind.
func FaultParts(name string) []string { return strings.Split(name, FaultSep) }

// JoinFault is the composite fault of parts.
func JoinFault(parts ...string) string { return strings.Join(parts, FaultSep) }

// FaultKind is a fault's name without the triggers that armed it or its
// parts: the nemesis writes an armed kind KIND:EVENT[/ROLE][~DELAY], and
// a composite joins kinds with "+" (kill-leader+kill-leader:leader-change
// is kill-leader+kill-leader). Readers of a history that judge by kinds
// (the guarantee model, the report) know the kind from it alone.
func FaultKind(name string) string {
	parts := FaultParts(name)
	for i, p := range parts {
		parts[i], _, _ = strings.Cut(p, ":")
	}
	return JoinFault(parts...)
}

// Detached is a deep copy of op that shares no memory with it, strings
// included: a reader that keeps a few operations of a long history keeps
// only them, not the buffers they were decoded from (a decoder's strings
// may point into the buffer that held the whole line, and more).
func Detached(op *Op) *Op {
	c := reflect.New(reflect.TypeFor[Op]())
	deepCopy(c.Elem(), reflect.ValueOf(op).Elem())
	return c.Interface().(*Op)
}

// deepCopy copies src into dst (settable, of src's type), allocating
// every pointer, slice and string anew.
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(strings.Clone(src.String()))
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Struct:
		for i := range src.NumField() {
			deepCopy(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}
