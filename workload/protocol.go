package workload

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// The protocol half of a client: the requests it sends and how it reads
// their answers, apart from how they travel. The TCP client uses them, and
// so does the simulated client of package sim, which carries the same
// requests through a simulated network: both classify every outcome with
// this code, so a simulated history means what a real one does.

// Replica ids a fetch can carry: an ordinary consumer, and the debug
// consumer that may read any replica up to its log end.
const (
	consumerReplica int32 = -1
	debugReplica    int32 = -2
)

// MetadataMaxAge is how old the metadata a client knows may be before a
// request that needs a leader asks again: leadership moves under faults
// without the old leader saying so.
const MetadataMaxAge = 5 * time.Second

// pollWait is how long a consumer's fetch waits at the leader for new
// records.
const pollWait = 100 * time.Millisecond

// MetadataRequest asks for the brokers and topic's partitions (none for
// "").
func MetadataRequest(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{} // none; nil would ask for all
	if topic != "" {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
	}
	return req
}

// MetadataAnswer is md, the answer address from gave, as a Metadata of
// topic.
func MetadataAnswer(md *kmsg.MetadataResponse, topic, from string) Metadata {
	out := Metadata{From: from, Controller: md.ControllerID, Brokers: map[int32]string{}, Partitions: map[int32]PartitionState{}}
	if md.ClusterID != nil {
		out.ClusterID = *md.ClusterID
	}
	for _, b := range md.Brokers {
		out.Brokers[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	for _, t := range md.Topics {
		if t.Topic != nil && *t.Topic == topic {
			for _, p := range t.Partitions {
				out.Partitions[p.Partition] = partitionState(p)
			}
		}
	}
	return out
}

func partitionState(p kmsg.MetadataResponseTopicPartition) PartitionState {
	return PartitionState{Leader: p.Leader, Epoch: p.LeaderEpoch, ISR: p.ISR, Replicas: p.Replicas}
}

// ProduceRequest sends value to k as one record, with acks and the
// broker-side timeout, timestamped nowMs.
func ProduceRequest(k history.Key, value string, acks int16, timeout time.Duration, nowMs int64) *kmsg.ProduceRequest {
	return produceRequest(k, value, acks, timeout, nowMs, -1, -1, -1)
}

// produceRequest is ProduceRequest with the batch's producer id, epoch and
// base sequence (-1 for a producer without idempotence).
func produceRequest(k history.Key, value string, acks int16, timeout time.Duration, nowMs int64, id int64, epoch int16, seq int32) *kmsg.ProduceRequest {
	return produceBatch(k, encodeProducerBatch(id, epoch, seq, nowMs, []byte(value)), acks, timeout)
}

// produceBatch sends one encoded batch to k.
func produceBatch(k history.Key, records []byte, acks int16, timeout time.Duration) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = acks, int32(timeout/time.Millisecond)
	t := kmsg.NewProduceRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = k.Partition, records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// SendOutcome classifies a send from its round trip: the answer, or the
// error of a request that was not answered (wrapping ErrNotSent if it
// never left). forget says the client should drop what it knows of the
// partition's leader, which may have moved.
func SendOutcome(resp kmsg.Response, err error, acks int16) (o Outcome, forget bool) {
	switch {
	case errors.Is(err, ErrNotSent):
		return Outcome{Type: history.Fail, Error: err.Error()}, true
	case err != nil:
		return Outcome{Type: history.Info, Error: err.Error()}, true
	case acks == 0:
		return Outcome{Type: history.Info, Error: "acks=0: no acknowledgement"}, false
	}
	pr, ok := resp.(*kmsg.ProduceResponse)
	if !ok || len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return Outcome{Type: history.Info, Error: "malformed produce response"}, false
	}
	rp := pr.Topics[0].Partitions[0]
	o = classify(rp.ErrorCode, acks)
	o.code = rp.ErrorCode
	if o.Type != history.OK {
		return o, true
	}
	o.Offset = rp.BaseOffset
	return o, false
}

// classify maps a produce error code to an outcome. Only errors the broker
// returns before appending are fail; everything else is info.
func classify(code int16, acks int16) Outcome {
	switch code {
	case 0:
		return Outcome{Type: history.OK}
	case kerr.NotEnoughReplicas.Code, kerr.UnknownTopicOrPartition.Code, kerr.LeaderNotAvailable.Code,
		kerr.CorruptMessage.Code, kerr.InvalidRecord.Code, kerr.InvalidRequiredAcks.Code, kerr.MessageTooLarge.Code,
		kerr.RecordListTooLarge.Code, kerr.InvalidTopicException.Code,
		// The idempotence checks come before the append too.
		kerr.OutOfOrderSequenceNumber.Code, kerr.InvalidProducerEpoch.Code, kerr.UnknownProducerID.Code,
		kerr.InvalidProducerIDMapping.Code:
		return Outcome{Type: history.Fail, Error: errorName(code)}
	case kerr.NotLeaderForPartition.Code:
		if acks == 1 {
			// acks=1 answers right after the append: an answer without
			// one means no append happened.
			return Outcome{Type: history.Fail, Error: errorName(code)}
		}
		// With acks=-1 it also ends a wait that began after the append,
		// when leadership moved.
		return Outcome{Type: history.Info, Error: errorName(code)}
	default:
		return Outcome{Type: history.Info, Error: errorName(code)}
	}
}

// FetchRequest reads k from offset as replica (consumer or debug),
// waiting up to wait at the broker for a first record.
func FetchRequest(replica int32, k history.Key, offset int64, wait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = replica
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(wait/time.Millisecond), 1, 4<<20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch = k.Partition, offset, 4<<20, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// PollRequest is a consumer's fetch of k from offset.
func PollRequest(k history.Key, offset int64) *kmsg.FetchRequest {
	return FetchRequest(consumerReplica, k, offset, pollWait)
}

// CommittedPollRequest is a read_committed consumer's fetch of k from
// offset: the broker answers up to the last stable offset, and names the
// aborted transactions among what it returns.
func CommittedPollRequest(k history.Key, offset int64) *kmsg.FetchRequest {
	req := PollRequest(k, offset)
	req.IsolationLevel = 1
	return req
}

// FetchAnswer reads the answer to a fetch from offset: the records at or
// after offset (without the markers, and without the aborted
// transactions' records the answer names), the HW the broker reported (the
// last stable offset for a read_committed fetch, committed), where a
// consumer fetches next (past what it skipped; offset if the answer held
// no whole batch), and its error code.
func FetchAnswer(resp kmsg.Response, offset int64, committed bool) (recs []history.Record, hw, next int64, code int16, err error) {
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return nil, -1, offset, fr.ErrorCode, nil
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return nil, -1, offset, 0, errors.New("malformed fetch response")
	}
	fp := fr.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 {
		return nil, fp.HighWatermark, offset, fp.ErrorCode, nil
	}
	end := fp.HighWatermark
	if committed {
		end = fp.LastStableOffset
	}
	all, next, err := decodeFetched(fp.RecordBatches, fp.AbortedTransactions)
	if err != nil {
		// Kafka's name for it: the checkers count a read that got
		// corrupt records as a garbage read, so corruption is found, not
		// just a failed read.
		return nil, end, offset, 0, fmt.Errorf("%s: the records do not decode: %w", history.CorruptRecords, err)
	}
	// A fetch returns whole batches, so the first may start before offset.
	recs = all[:0]
	for _, r := range all {
		if r.Offset >= offset {
			recs = append(recs, r)
		}
	}
	return recs, end, max(next, offset), 0, nil
}

// PollOutcome is a poll's result from its fetch's (FetchAnswer's, or the
// round trip's error); forget as for SendOutcome.
func PollOutcome(recs []history.Record, hw int64, code int16, err error) (r Read, perr error, forget bool) {
	switch {
	case err != nil:
		return Read{}, err, true
	case code == kerr.OffsetOutOfRange.Code && hw >= 0:
		return Read{}, &OutOfRangeError{HW: hw}, false
	case code != 0:
		return Read{}, errors.New(errorName(code)), true
	}
	return Read{Records: recs, HW: hw}, nil, false
}

// ListOffsetsRequest asks for k's latest offset, the high watermark.
func ListOffsetsRequest(k history.Key) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	req.ReplicaID = consumerReplica
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp, p.CurrentLeaderEpoch = k.Partition, -1, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// EndOffsetAnswer reads ListOffsetsRequest's answer, or the round trip's
// error; forget as for SendOutcome.
func EndOffsetAnswer(resp kmsg.Response, err error) (off int64, aerr error, forget bool) {
	if err != nil {
		return -1, err, true
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return -1, errors.New("malformed list offsets response"), false
	}
	lp := lr.Topics[0].Partitions[0]
	if lp.ErrorCode != 0 {
		return -1, errors.New(errorName(lp.ErrorCode)), true
	}
	return lp.Offset, nil, false
}

// WholeRead is a read of a partition to its end (FinalRead from the
// leader as a consumer, to the HW; ReplicaRead of one broker as the debug
// consumer, to its log end), fetch by fetch: fetch from Next, give the
// result to Add, until Add says the read is over.
type WholeRead struct {
	replica int32
	// committed: read_committed, to the last stable offset.
	committed bool
	all       []history.Record
	hw        int64
	next      int64
	fetches   int
	// newSpool, when set, gives the spool that takes the records once
	// they are spoolAt (ClientOptions.Spool); spool is it, once made.
	newSpool func() (*history.Spool, error)
	spool    *history.Spool
}

// spoolAt is how many records a whole read holds in memory before it
// spools them, when it can (ClientOptions.Spool). A variable, so that a
// test can make it small.
var spoolAt = 1 << 16

// NewFinalRead reads a partition from its leader, to the HW the first
// fetch reports.
func NewFinalRead() *WholeRead { return &WholeRead{replica: consumerReplica, hw: -1} }

// NewCommittedFinalRead is NewFinalRead as a read_committed consumer, to
// the last stable offset the first fetch reports.
func NewCommittedFinalRead() *WholeRead {
	return &WholeRead{replica: consumerReplica, committed: true, hw: -1}
}

// NewReplicaRead reads a replica's whole log, to its end.
func NewReplicaRead() *WholeRead { return &WholeRead{replica: debugReplica, hw: -1} }

// Request is the next fetch of k.
func (w *WholeRead) Request(k history.Key) *kmsg.FetchRequest {
	req := FetchRequest(w.replica, k, w.next, 0)
	if w.committed {
		req.IsolationLevel = 1
	}
	return req
}

// Add takes the next fetch's result (FetchAnswer's, or the round trip's
// error) and says whether the read is over, with what it read or why it
// failed.
func (w *WholeRead) Add(k history.Key, recs []history.Record, hw, next int64, code int16, err error) (done bool, r Read, rerr error) {
	done, r, rerr = w.add(k, recs, hw, next, code, err)
	if done && rerr != nil {
		_ = w.spool.Close() // nothing of a failed read is written
		w.spool = nil
	}
	return done, r, rerr
}

func (w *WholeRead) add(k history.Key, recs []history.Record, hw, next int64, code int16, err error) (done bool, r Read, rerr error) {
	switch {
	case err != nil:
		return true, Read{}, err
	case code != 0:
		return true, Read{}, &readError{code: code, offset: w.next}
	}
	if w.hw < 0 {
		w.hw = hw
	}
	// reached is where the read has got to: past its last record, and
	// past the markers (and, read_committed, aborted records) it skipped.
	reached := w.next
	if len(recs) > 0 {
		reached = recs[len(recs)-1].Offset + 1
	}
	reached = max(reached, next)
	if reached == w.next && w.replica == consumerReplica && w.next < min(w.hw, hw) {
		// The leader says records below its high watermark exist and
		// returns none of them: the read is not over, and must not be
		// taken for one that reached the high watermark.
		return true, Read{}, &StuckReadError{Offset: w.next, HW: min(w.hw, hw)}
	}
	if w.all == nil && len(recs) > 0 {
		// Sized by the first fetch's HW, where appending doubled a long
		// run's read of a million records (26 MB) from nothing, the old
		// array and the new held at once. A replica's read goes on to its
		// log end, past the HW by what was not yet replicated: room for
		// a little more.
		room := max(hw-w.next, 0)
		if w.replica != consumerReplica {
			room += room/16 + 1024
		}
		presize := int64(maxPresize)
		if w.newSpool != nil {
			presize = int64(spoolAt)
		}
		w.all = make([]history.Record, 0, max(len(recs), int(min(room, presize))))
	}
	w.all = append(w.all, recs...)
	over := reached == w.next || (w.replica == consumerReplica && reached >= w.hw)
	if w.newSpool != nil && (len(w.all) >= spoolAt || over && w.spool != nil) {
		if w.spool == nil {
			if w.spool, err = w.newSpool(); err != nil {
				return true, Read{}, err
			}
		}
		if err := w.spool.Add(w.all...); err != nil {
			return true, Read{}, err
		}
		w.all = w.all[:0]
	}
	if over {
		if w.spool != nil {
			return true, Read{Spool: w.spool, HW: w.hw}, nil
		}
		return true, Read{Records: w.all, HW: w.hw}, nil
	}
	w.next = reached
	if w.fetches++; w.fetches >= 1_000_000 {
		return true, Read{}, fmt.Errorf("%s: log too long to read", k)
	}
	return false, Read{}, nil
}

// maxPresize bounds the records a whole read makes room for at its first
// fetch (a HW the broker got wrong could ask for any amount): 2 M, 48 MB.
const maxPresize = 1 << 21

// readError is a whole read's refusal by the broker: its text is the
// history's ("NOT_LEADER_FOR_PARTITION at offset 12"); it unwraps to
// kerr's error for the code, so a caller can tell a retriable one.
type readError struct {
	code   int16
	offset int64
}

func (e *readError) Error() string {
	return fmt.Sprintf("%s at offset %d", errorName(e.code), e.offset)
}
func (e *readError) Unwrap() error { return kerr.ErrorForCode(e.code) }

// FinalReadAttempts and FinalReadBackoff bound the final read of a
// partition from its leader: a leader that moved between the wait for
// convergence and the read (or a client's stale idea of it) is asked
// again, with fresh metadata, instead of leaving the partition unread and
// the checkers unable to judge it.
const (
	FinalReadAttempts = 10
	FinalReadBackoff  = 200 * time.Millisecond
)

// RetryFinalRead says whether a final read from the leader that ended in
// err is worth another attempt with fresh metadata: the leader was not
// known, or the broker asked was no longer (or not yet) the leader.
func RetryFinalRead(err error) bool {
	for _, e := range []error{ErrNotSent, kerr.NotLeaderForPartition, kerr.LeaderNotAvailable, kerr.FencedLeaderEpoch, kerr.UnknownLeaderEpoch} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// CreateTopicsRequest asks the cluster to create spec's topic, letting it
// take up to timeout.
func CreateTopicsRequest(spec TopicSpec, timeout time.Duration) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 4
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = spec.Name, spec.Partitions, spec.ReplicationFactor
	configs := [][2]string{{"min.insync.replicas", strconv.Itoa(int(spec.MinInsyncReplicas))}}
	if spec.Unclean || !spec.Foreign {
		// A foreign cluster may not know the setting (franz-go's kfake
		// refuses it); clean is Kafka's default, and the topic's
		// description says what it got.
		configs = append(configs, [2]string{"unclean.leader.election.enable", strconv.FormatBool(spec.Unclean)})
	}
	for _, cfg := range configs {
		t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: cfg[0], Value: kmsg.StringPtr(cfg[1])})
	}
	req.Topics = append(req.Topics, t)
	return req
}

// CreateTopicsAnswer reads CreateTopicsRequest's answer: nil, or the
// broker's refusal as a *kerr.Error (with its message, if any).
func CreateTopicsAnswer(resp kmsg.Response) error {
	r := resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 1 {
		return errors.New("malformed create topics response")
	}
	if code := r.Topics[0].ErrorCode; code != 0 {
		err := kerr.ErrorForCode(code)
		if msg := r.Topics[0].ErrorMessage; msg != nil {
			return fmt.Errorf("%w: %s", err, *msg)
		}
		return err
	}
	return nil
}

// errorName is the Kafka name of an error code, as histories record it.
func errorName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return ke.Message
		}
		return err.Error()
	}
	return "NONE"
}
