package history

// Txn is a transaction of the transactional workload: its producer and
// its consumer act as one client, which runs the micro-operations
// (TxnInfo.Mops) in order and then commits, or aborts if the workload
// drew an abort for it (TxnInfo.Abort). The invoke lists the
// micro-operations meant; the completion repeats them with what came of
// each: a send's offset, a poll's records. ok: committed; fail: definitely
// not committed (aborted by the client, or refused before the commit
// could take effect); info: unknown.
const Txn = "txn"

// Isolation levels of a reader (Kafka's isolation.level): a
// read_committed consumer reads only below the last stable offset and
// skips the records of aborted transactions; a read_uncommitted one, as a
// consumer does unless it asks otherwise, reads every record below the
// high watermark, those of open and aborted transactions included.
const (
	ReadCommitted   = "read_committed"
	ReadUncommitted = "read_uncommitted"
)

// TxnAborted is the error of the completion of a transaction the
// workload meant to abort (TxnInfo.Abort): it completes fail, since none
// of its records can ever be committed, whatever became of its abort.
const TxnAborted = "aborted"

// TxnInfo is what the transactional workload's operations add: a
// transaction's micro-operations, whether the workload meant to abort it
// and when its client asked to commit it, and the isolation level any
// reader (a transaction's polls, a poll, a final read) read with. Kept
// apart for the reason Sample is.
type TxnInfo struct {
	// Mops are a transaction's micro-operations, in the order the client
	// ran them.
	Mops []Mop `json:"mops,omitempty"`
	// Abort: the workload drew an abort for the transaction, so its
	// client never asks to commit it.
	Abort bool `json:"abort,omitempty"`
	// CommitTime is when the client asked to commit (sent EndTxn with
	// commit), in nanoseconds since the test started, on the completion
	// of a transaction that got that far: no reader may see its records
	// before.
	CommitTime *int64 `json:"commit_time,omitempty"`
	// Isolation is ReadCommitted or ReadUncommitted; absent, the reader
	// is taken to be read_uncommitted, Kafka's default.
	Isolation string `json:"isolation,omitempty"`
}

// Mop is one micro-operation of a transaction: a send (F Send, the
// record in MopSend) or a poll (F Poll, what it read in Reads).
type Mop struct {
	F string `json:"f"`
	*MopSend
	// Reads are a poll's records, per partition it returned records of,
	// on the completion.
	Reads []PartitionRecords `json:"reads,omitempty"`
}

// MopSend is a send micro-operation: one record to a partition, and on
// the completion the offset the broker gave it, when it answered.
type MopSend struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Value     string `json:"value"`
	Offset    *int64 `json:"offset,omitempty"`
}

// Key is the partition the send writes to.
func (s *MopSend) Key() Key { return Key{s.Topic, s.Partition} }

// PartitionRecords are the records one poll returned of one partition,
// in the order returned, and the offset its fetch started at, if known.
type PartitionRecords struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	From      *int64   `json:"from,omitempty"`
	Records   []Record `json:"records"`
}

// Key is the partition read.
func (r *PartitionRecords) Key() Key { return Key{r.Topic, r.Partition} }

// SendMop is a send micro-operation of value to k, as an invoke lists it.
func SendMop(k Key, value string) Mop {
	return Mop{F: Send, MopSend: &MopSend{Topic: k.Topic, Partition: k.Partition, Value: value}}
}

// PollMop is a poll micro-operation, as an invoke lists it.
func PollMop() Mop { return Mop{F: Poll} }

// Transaction is the transaction part of a value, or nil.
func (v *Value) Transaction() *TxnInfo {
	if v == nil {
		return nil
	}
	return v.TxnInfo
}

// ReadCommitted says the reader read with isolation read_committed.
func (v *Value) ReadCommitted() bool {
	return v != nil && v.TxnInfo != nil && v.Isolation == ReadCommitted
}
