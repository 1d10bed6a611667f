package workload

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// RetryBackoff is how long a producer waits before it sends a batch again:
// Kafka's retry.backoff.ms default. A leader that moved needs a moment to
// be known, and a retry at once would only meet the same error.
const RetryBackoff = 100 * time.Millisecond

// Producer is one producer session, the part of a Kafka producer that
// decides what a send puts on the wire and whether it tries again: with
// idempotence (KIP-98) a producer id from InitProducerId and a sequence
// number per partition, so that a broker can tell a retried batch from a
// new one; with retries, how many times a batch is sent again after an
// error that leaves it retriable. Both TCP's client and the simulated one
// drive it, so that the two send the same bytes and decide the same way.
// It does no I/O: the caller sends what it asks for and reports what came
// back. It is not safe for concurrent use: a client that lets several
// sends run at once (max.in.flight above 1) holds a lock around every
// call.
//
// A batch takes its sequence number when it is first sent, in the order
// the sends began, and keeps it for all its attempts. With one request in
// flight, a batch that ends without being written gives its number back
// to the next. With several, the batches of a partition go out in that
// order (Ready), and three rules keep a broker from taking them in any
// other, as Kafka's producer does:
//
//   - OUT_OF_ORDER_SEQUENCE_NUMBER while an earlier batch of the same id
//     is unresolved means the broker waits for that one: the batch is sent
//     again, unchanged, and the wait does not count as a retry.
//   - A batch that ends unwritten (fail) leaves a gap no later batch can
//     pass, and one that may be written (info) leaves the broker's next
//     expected number unknown: either way the session takes a new producer
//     id, and a partition's batches under the new id wait until those under
//     the old one have resolved, so that no new batch overtakes an old one.
//   - A batch is sent again under a new id (re-sequenced) only if it was
//     never written and no later batch of its id was sent: moved after a
//     later batch that the broker took, it would land after it.
type Producer struct {
	retries    int
	idempotent bool
	// id and epoch are the producer id and epoch InitProducerId gave; id
	// -1: none yet (or dropped, after the broker lost track of it or a
	// batch left a gap).
	id    int64
	epoch int16
	// asking: a send is asking for a producer id; the others wait for it
	// rather than ask for one each.
	asking bool
	// next is each partition's next sequence number under id.
	next map[history.Key]int32
	// queue is each partition's unresolved idempotent sends, oldest first.
	queue map[history.Key][]*Delivery
	// high is the highest sequence number sent per producer id and
	// partition: a batch below it cannot be re-sequenced.
	high map[idPart]int32
}

type idPart struct {
	id int64
	k  history.Key
}

// NewProducer is a session that sends each batch up to 1+retries times,
// with idempotence if asked.
func NewProducer(retries int, idempotent bool) *Producer {
	return &Producer{retries: retries, idempotent: idempotent, id: -1, next: map[history.Key]int32{},
		queue: map[history.Key][]*Delivery{}, high: map[idPart]int32{}}
}

// NeedsID says whether the session must ask for a producer id
// (InitProducerIDRequest, then SetID) before its next send.
func (p *Producer) NeedsID() bool { return p.idempotent && p.id < 0 }

// AskID says whether the caller is to ask for the producer id the session
// needs (then SetID, which it must call whatever the answer); false if
// it needs none or another send is asking already.
func (p *Producer) AskID() bool {
	if !p.NeedsID() || p.asking {
		return false
	}
	p.asking = true
	return true
}

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
	p.asking = false
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

// drop gives up the session's producer id: later batches take a new one.
func (p *Producer) drop() { p.id, p.epoch = -1, -1 }

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
	// last attempt's outcome. waits counts the attempts that only met a
	// broker waiting for an earlier batch: they are not retries.
	attempts []string
	waits    int
	final    Outcome
	// maybe: an attempt may have been written (its outcome was info), so
	// the send as a whole can no longer fail.
	maybe bool
	// inFlight: an attempt was sent and is not yet answered; over: the
	// send has ended and left the partition's queue.
	inFlight bool
	over     bool
}

// Send begins delivering value to k. Sends to one partition take their
// sequence numbers in the order Send was called.
func (p *Producer) Send(k history.Key, value string, acks int16) *Delivery {
	d := &Delivery{p: p, k: k, value: value, acks: acks, id: -1, epoch: -1, seq: -1}
	if p.idempotent {
		p.queue[k] = append(p.queue[k], d)
	}
	return d
}

// Key is the partition the send is to.
func (d *Delivery) Key() history.Key { return d.k }

// Acks is the send's acks.
func (d *Delivery) Acks() int16 { return d.acks }

// Ready says whether d's next attempt may be sent now: every earlier send
// to its partition is on the wire under the producer id d is to carry, so
// that the broker meets d after them. A send that is not ready waits
// (PipelineWait) and asks again; the oldest is always ready.
func (d *Delivery) Ready() bool {
	id := d.id
	if id < 0 {
		id = d.p.id
	}
	for _, e := range d.p.queue[d.k] {
		if e == d {
			return true
		}
		if !e.inFlight || e.id != id || id < 0 {
			return false
		}
	}
	return true
}

// NeedsID says whether d's next attempt needs the session's producer id,
// which it does not have.
func (d *Delivery) NeedsID() bool { return d.id < 0 && d.p.NeedsID() }

// PipelineWait is how long a send that is not Ready waits before it asks
// again.
const PipelineWait = 5 * time.Millisecond

// Request is the produce request of the next attempt. The producer id
// and sequence number are fixed at the first attempt that carries them.
func (d *Delivery) Request(timeout time.Duration, nowMs int64) *kmsg.ProduceRequest {
	p := d.p
	if p.idempotent && d.id < 0 && p.id >= 0 {
		d.id, d.epoch, d.seq = p.id, p.epoch, p.next[d.k]
		p.next[d.k] = d.seq + 1
		if p.next[d.k] < 0 {
			p.next[d.k] = 0 // sequence numbers wrap to 0, as Kafka's do
		}
	}
	if d.id >= 0 {
		ip := idPart{d.id, d.k}
		if h, ok := p.high[ip]; !ok || d.seq > h {
			p.high[ip] = d.seq
		}
	}
	d.inFlight = true
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
	d.inFlight = false
	d.final = o
	if o.Type == history.OK {
		d.finish()
		return false
	}
	d.attempts = append(d.attempts, o.Error)
	if o.Type == history.Info {
		d.maybe = true
	}
	p := d.p
	lost := producerLost(o.code)
	if lost && o.code == kerr.OutOfOrderSequenceNumber.Code && d.earlierUnresolved() {
		// The broker waits for an earlier batch of this id, still on its
		// way or about to be sent again: this one follows it unchanged.
		d.waits++
		return true
	}
	if lost && d.id == p.id {
		// The broker does not know this session's sequence (its records
		// were truncated, or it never had them): a new session starts
		// from sequence 0. A batch that may already be written is not
		// sent under a new id, which would write it again: it ends as
		// info, as Kafka's producer fails it.
		p.drop()
	}
	later := d.id >= 0 && d.seq < p.high[idPart{d.id, d.k}]
	if len(d.attempts)-d.waits > p.retries || !retriable(o, err) || (lost && (d.maybe || later)) {
		d.finish()
		return false
	}
	if lost {
		d.id, d.epoch, d.seq = -1, -1, -1
	}
	return true
}

// earlierUnresolved says whether a send queued before d to its partition
// carries d's producer id and has not ended.
func (d *Delivery) earlierUnresolved() bool {
	for _, e := range d.p.queue[d.k] {
		if e == d {
			return false
		}
		if e.id == d.id {
			return true
		}
	}
	return false
}

// finish takes d out of its partition's queue once it has ended. A batch
// that ended unwritten gives its sequence number back if no later batch
// took one; otherwise it left a gap, and one that may be written left the
// broker's expectation unknown: the session takes a new id.
func (d *Delivery) finish() {
	if d.over {
		return
	}
	d.over, d.inFlight = true, false
	p := d.p
	if q := p.queue[d.k]; len(q) > 0 {
		p.queue[d.k] = slices.DeleteFunc(q, func(e *Delivery) bool { return e == d })
		if len(p.queue[d.k]) == 0 {
			delete(p.queue, d.k)
		}
	}
	if d.final.Type == history.OK || d.id < 0 || d.id != p.id {
		return
	}
	if !d.maybe && p.next[d.k] == d.seq+1 {
		p.next[d.k] = d.seq
		return
	}
	p.drop()
}

// Outcome is how the send ended: ok if an attempt was acknowledged; fail
// only if no attempt can have been written; info otherwise. Retries are
// the errors of the attempts before the last. A send given up before its
// last attempt was answered (its context ended) ends here.
func (d *Delivery) Outcome() Outcome {
	d.finish()
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
