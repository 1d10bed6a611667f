package workload

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// RetryBackoff is how long a producer waits before it sends a batch again:
// Kafka's retry.backoff.ms default. A leader that moved needs a moment to
// be known, and a retry at once would only meet the same error.
const RetryBackoff = 100 * time.Millisecond

// Producer is one process's producer session, the part of a Kafka producer
// that decides what a send puts on the wire and whether it tries again:
// with idempotence (KIP-98) a producer id from InitProducerId and a
// sequence number per partition, so that a broker can tell a retried batch
// from a new one; with retries, how many times a batch is sent again after
// an error that leaves it retriable. Both TCP's client and the simulated
// one drive it, so that the two send the same bytes and decide the same
// way. It does no I/O: the caller sends what it asks for and reports what
// came back.
//
// A Producer sends one batch at a time (max.in.flight 1): a batch's
// sequence number is taken only once it is acknowledged, so a batch that
// was refused is sent again with the same number.
type Producer struct {
	retries    int
	idempotent bool
	// id and epoch are the producer id and epoch InitProducerId gave; id
	// -1: none yet (or dropped, after the broker lost track of it).
	id    int64
	epoch int16
	// next is each partition's next sequence number under id.
	next map[history.Key]int32
}

// NewProducer is a session that sends each batch up to 1+retries times,
// with idempotence if asked.
func NewProducer(retries int, idempotent bool) *Producer {
	return &Producer{retries: retries, idempotent: idempotent, id: -1, next: map[history.Key]int32{}}
}

// NeedsID says whether the session must ask for a producer id
// (InitProducerIDRequest, then SetID) before its next send.
func (p *Producer) NeedsID() bool { return p.idempotent && p.id < 0 }

// InitProducerIDRequest asks any broker for a producer id, as an
// idempotent producer without a transactional id does.
func InitProducerIDRequest(timeout time.Duration) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 2
	req.TransactionTimeoutMillis = int32(timeout / time.Millisecond)
	return req
}

// SetID takes the answer to InitProducerIDRequest. An error means no id:
// the send that needed it is not sent.
func (p *Producer) SetID(resp kmsg.Response, err error) error {
	if err != nil {
		return err
	}
	r, ok := resp.(*kmsg.InitProducerIDResponse)
	if !ok {
		return errors.New("malformed InitProducerId response")
	}
	if r.ErrorCode != 0 {
		return errors.New("InitProducerId: " + errorName(r.ErrorCode))
	}
	if r.ProducerID < 0 {
		return errors.New("InitProducerId answered no producer id")
	}
	p.id, p.epoch = r.ProducerID, r.ProducerEpoch
	clear(p.next)
	return nil
}

// ID is the session's producer id, -1 if it has none.
func (p *Producer) ID() int64 { return p.id }

// Delivery is one send: the batch, sent again with the same producer id
// and sequence number after each retriable error, and what its attempts
// tell of whether it was written.
type Delivery struct {
	p     *Producer
	k     history.Key
	value string
	acks  int16
	// id and seq are what the batch carries (-1: not idempotent), fixed
	// for all its attempts: a retry the broker already has is then known
	// as one.
	id    int64
	epoch int16
	seq   int32
	// attempts are the errors of the attempts made so far, final the
	// last attempt's outcome.
	attempts []string
	final    Outcome
	// maybe: an attempt may have been written (its outcome was info), so
	// the send as a whole can no longer fail.
	maybe bool
}

// Send begins delivering value to k.
func (p *Producer) Send(k history.Key, value string, acks int16) *Delivery {
	return &Delivery{p: p, k: k, value: value, acks: acks, id: -1, epoch: -1, seq: -1}
}

// Key is the partition the send is to.
func (d *Delivery) Key() history.Key { return d.k }

// Acks is the send's acks.
func (d *Delivery) Acks() int16 { return d.acks }

// Request is the produce request of the next attempt. The producer id
// and sequence number are fixed at the first attempt that carries them.
func (d *Delivery) Request(timeout time.Duration, nowMs int64) *kmsg.ProduceRequest {
	if d.p.idempotent && d.id < 0 && d.p.id >= 0 {
		d.id, d.epoch, d.seq = d.p.id, d.p.epoch, d.p.next[d.k]
	}
	return produceRequest(d.k, d.value, d.acks, timeout, nowMs, d.id, d.epoch, d.seq)
}

// NotSent ends an attempt that could not be made (no producer id, no
// leader): like a refused one, it wrote nothing.
func (d *Delivery) NotSent(err error) (again bool) {
	return d.Attempted(Outcome{Type: history.Fail, Error: err.Error()}, err)
}

// Attempted takes one attempt's outcome, as SendOutcome classified it,
// with the error of a request that got no answer (nil if one came), and
// says whether to send again after RetryBackoff.
func (d *Delivery) Attempted(o Outcome, err error) (again bool) {
	if o.Type == history.OK {
		if d.id >= 0 && d.id == d.p.id {
			d.p.next[d.k] = d.seq + 1
			if d.p.next[d.k] < 0 {
				d.p.next[d.k] = 0 // sequence numbers wrap to 0, as Kafka's do
			}
		}
		d.final = o
		return false
	}
	d.attempts = append(d.attempts, o.Error)
	if o.Type == history.Info {
		d.maybe = true
	}
	lost := producerLost(o.code)
	if lost && d.id == d.p.id {
		// The broker does not know this session's sequence (its records
		// were truncated, or it never had them): a new session starts
		// from sequence 0. A batch that may already be written is not
		// sent under a new id, which would write it again: it ends as
		// info, as Kafka's producer fails it.
		d.p.id, d.p.epoch = -1, -1
	}
	d.final = o
	if len(d.attempts) > d.p.retries || !retriable(o, err) || (lost && d.maybe) {
		return false
	}
	if lost {
		d.id, d.epoch, d.seq = -1, -1, -1
	}
	return true
}

// Outcome is how the send ended: ok if an attempt was acknowledged; fail
// only if no attempt can have been written; info otherwise. Retries are
// the errors of the attempts before the last.
func (d *Delivery) Outcome() Outcome {
	o := d.final
	if o.Type == history.Fail && d.maybe {
		o.Type = history.Info
	}
	if n := len(d.attempts); n > 0 {
		if o.Type == history.OK {
			o.Retries = d.attempts
		} else {
			o.Retries = d.attempts[:n-1]
		}
	}
	return o
}

// producerLost says whether an error code means the broker does not
// accept the session's sequence numbers any more.
func producerLost(code int16) bool {
	switch code {
	case kerr.OutOfOrderSequenceNumber.Code, kerr.UnknownProducerID.Code,
		kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerIDMapping.Code:
		return true
	}
	return false
}

// retriable says whether a producer tries again after an attempt: after
// an error Kafka calls retriable, a lost connection or a request never
// sent, and after the idempotence errors a new session clears.
func retriable(o Outcome, err error) bool {
	if err != nil {
		return true
	}
	if producerLost(o.code) {
		return true
	}
	for _, e := range retriableErrors {
		if o.code == e.Code {
			return true
		}
	}
	return false
}

// retriableErrors are the produce errors kerr marks retriable that a
// broker answers a produce with.
var retriableErrors = []*kerr.Error{
	kerr.NotLeaderForPartition, kerr.LeaderNotAvailable, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend,
	kerr.RequestTimedOut, kerr.UnknownTopicOrPartition, kerr.KafkaStorageError, kerr.CorruptMessage,
	kerr.NetworkException, kerr.NotController, kerr.FencedLeaderEpoch, kerr.UnknownLeaderEpoch,
}
