package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Client is all the workload, the monitor and the final phase ask of a
// cluster, one logical process's view of it. Keeping it this small is what
// lets a simulated cluster stand in for a real one: everything above it
// (the generator's decisions, the recording, the final phase) is the same
// whatever carries the messages. A Client is used by one goroutine at a
// time, but for Send: the lanes of a producer session with several
// requests in flight (Config.MaxInFlight) send through one Client at once.
//
// An error from a call that changes nothing (every call but Send and
// CreateTopic) means only that it did not happen. Answers a broker gave
// are *kerr.Error values (errors.As), so callers can tell a broker's
// refusal from a lost connection.
type Client interface {
	// Send produces one record with value to k with acks and classifies
	// the outcome, which is all the checkers will know of it (see
	// Outcome).
	Send(ctx context.Context, k history.Key, value string, acks int16) Outcome
	// SendQueued is Send, calling queued once the send has its place in
	// the producer session's order, before any request for it leaves,
	// and while no other send of the session can take one: a pipelining
	// session's lanes record their invocations there, so that the
	// history's order of a session's sends is the order of their sequence
	// numbers. If queued returns false, nothing is sent.
	SendQueued(ctx context.Context, k history.Key, value string, acks int16, queued func() bool) Outcome
	// Poll fetches k from offset from as a consumer, below the high
	// watermark. A broker that refuses from as out of range answers with
	// an *OutOfRangeError carrying its high watermark.
	Poll(ctx context.Context, k history.Key, from int64) (Read, error)
	// EndOffset is k's latest offset (ListOffsets -1) at its leader: the
	// high watermark.
	EndOffset(ctx context.Context, k history.Key) (int64, error)
	// Metadata asks for the brokers and topic's partitions (none for "")
	// the addresses in turn, each once, until one answers; with no
	// addresses, the brokers it knows by id, then its bootstrap brokers.
	// The answer also becomes where later calls send their requests.
	Metadata(ctx context.Context, topic string, addrs ...string) (Metadata, error)
	// FinalRead reads k from offset 0 to its high watermark at its leader.
	FinalRead(ctx context.Context, k history.Key) (Read, error)
	// ReplicaRead reads broker's replica of k whole, to its log end, as
	// the debug consumer (replica id -2), leader or not.
	ReplicaRead(ctx context.Context, k history.Key, broker int32) (Read, error)
	// CreateTopic asks the cluster once to create spec's topic, letting it
	// take up to timeout. An error wrapping ErrNotSent means the request
	// never left: the topic was not created by it.
	CreateTopic(ctx context.Context, spec TopicSpec, timeout time.Duration) error
	// DescribeTopic is the topic's partitions and the configs its
	// guarantees depend on, as the cluster describes them.
	DescribeTopic(ctx context.Context, topic string) (TopicDescription, error)
	// Close drops the client's connections; it is not used again.
	Close()
}

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
}

// Dialer makes the clients of one cluster: the workload gives each process
// a client of its own, and a new one to a process that replaces one whose
// state became unknown.
type Dialer func(ClientOptions) Client

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
	HW      int64
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

// TopicDescription is a topic as the cluster describes it.
type TopicDescription struct {
	// Replicas are each partition's replicas.
	Replicas map[int32][]int32
	// Configs are the topic configs the guarantees depend on
	// (min.insync.replicas, unclean.leader.election.enable) it described.
	Configs map[string]string
}
