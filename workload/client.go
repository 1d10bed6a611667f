package workload

import (
	"errors"
	"fmt"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// ClientOptions configure one client.
type ClientOptions struct {
	// ID is the client id brokers see, naming the process in their logs.
	ID string
	// Timeout bounds the wait for one answer; a request that was sent and
	// not answered by then has an unknown outcome.
	Timeout time.Duration
	// ProduceTimeout is how long a Send lets the broker wait for the ISR
	// (acks=-1) before it answers REQUEST_TIMED_OUT.
	ProduceTimeout time.Duration
	// Retries is how many times a send is tried again after a retriable
	// error (Kafka's retries); 0: never.
	Retries int
	// Idempotent: sends carry a producer id and sequence numbers
	// (enable.idempotence), so a broker writes a retried batch once.
	Idempotent bool
	// Spool, when set, makes a whole read (FinalRead, ReplicaRead) of
	// more records than spoolAt keep them in a spool it gives (Read.Spool)
	// rather than in memory: a day-long run's partition is tens of
	// millions of records. Nil holds them in memory.
	Spool func() (*history.Spool, error)
}

// ClientTimeout is how long a client of the run waits for one answer:
// the request timeout, which a broker may take before it answers an
// acks=-1 write, and 2 s of grace for the answer to come back.
func (c Config) ClientTimeout() time.Duration { return c.RequestTimeout + 2*time.Second }

// ErrNotSent marks a request that never left the client (no leader known,
// no connection): whatever it asked definitely did not happen.
var ErrNotSent = errors.New("not sent")

// Outcome is how a send ended, as docs/history.md defines the types: OK
// with the offset the broker assigned; Fail only when the record
// definitely was not written (refused before the append, or never sent);
// Info whenever it may have been or may still be. Error is the text the
// history records for Fail and Info.
type Outcome struct {
	Type   history.Type
	Offset int64
	Error  string
	// Retries are the errors of the attempts before the last, for a
	// producer that retries (docs/history.md: retries).
	Retries []string
	// code is the broker's error code, 0 if it gave none.
	code int16
}

// Read is what a read returned: its records at or after the offset it
// started from, in offset order, and the high watermark the broker
// reported.
type Read struct {
	Records []history.Record
	// Spool holds the records in Records' place when a whole read
	// spooled them (ClientOptions.Spool): recorded in a completion's
	// Value.Spool, they go to the history from there.
	Spool *history.Spool
	HW    int64
	// Next is where a poll's consumer fetches next: past its last record,
	// and past the markers and aborted records a read_committed poll
	// skipped. The history does not record it.
	Next int64
}

// OutOfRangeError is a fetch refused because its offset is past the log's
// end, as after a truncation; HW is where the log now ends.
type OutOfRangeError struct{ HW int64 }

// Error is the text a poll records: the consumer resumes at HW, as
// auto.offset.reset=latest would.
func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("OFFSET_OUT_OF_RANGE: resuming at the high watermark %d", e.HW)
}

// Metadata is one broker's answer to a metadata request.
type Metadata struct {
	// From is the address that answered.
	From string
	// ClusterID is the id the cluster reported; "" if none.
	ClusterID string
	// Controller is the broker the answer says takes admin requests
	// (chaos's brokers name themselves and forward; Kafka names one
	// broker); -1 if none.
	Controller int32
	// Brokers are the brokers it listed, by id, with their addresses.
	Brokers map[int32]string
	// Partitions are the topic's partitions it listed: a partition
	// missing here was not in the answer.
	Partitions map[int32]PartitionState
}

// PartitionState is a partition as metadata describes it: the controller's
// view as the answering broker last heard it.
type PartitionState struct {
	Leader   int32 // -1: none
	Epoch    int32
	ISR      []int32
	Replicas []int32
}

// Learn takes what a metadata answer says of partition k into parts,
// unless it names an older leader epoch than one the client heard before
// (epochs, the highest heard of each partition, which outlives a partition
// forgotten after a refusal so that the next answer is held against it): a
// broker cut off from the controller still answers as the leader it was
// (a zombie), and a client that took its word would follow it back to a
// log without the records it had already read. Kafka's clients ignore such
// metadata too (KIP-320).
func Learn(parts map[history.Key]PartitionState, epochs map[history.Key]int32, k history.Key, got PartitionState) {
	if e, ok := epochs[k]; ok && got.Epoch < e {
		return
	}
	epochs[k] = got.Epoch
	parts[k] = got
}

// FeatureELR is Kafka's cluster feature for KIP-966's eligible leader
// replicas, finalized at level 1 where the controller keeps them.
const FeatureELR = "eligible.leader.replicas.version"

// TopicDescription is a topic as the cluster describes it.
type TopicDescription struct {
	// Replicas are each partition's replicas.
	Replicas map[int32][]int32
	// Configs are the topic configs the guarantees depend on
	// (min.insync.replicas, unclean.leader.election.enable) it described.
	Configs map[string]string
	// ELR: the cluster's ApiVersions finalizes KIP-966's feature,
	// eligible.leader.replicas.version, at level 1 or above.
	ELR bool
}
